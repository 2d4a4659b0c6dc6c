"""`python -m keras_gauss`: the `keras-gauss` command."""

import sys

from keras_gauss.cli import main

if __name__ == "__main__":
    sys.exit(main())
