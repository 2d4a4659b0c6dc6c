"""`python -m keras_gauss`: the `keras-gauss` command."""

from keras_gauss.cli import command

if __name__ == "__main__":
    command()
