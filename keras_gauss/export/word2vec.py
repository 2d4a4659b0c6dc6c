"""Mean vectors in word2vec's text and binary formats.

Both formats start with a header line `"<count> <dim>\\n"`. The text format
then has one line per word, `word v_1 ... v_d`, the values written with 9
significant digits (float32 round-trips exactly); the binary format has
`word`, a space, `d` little-endian float32 values and a newline per word, as
the original `word2vec` tool writes. gensim reads both:

>>> import numpy as np
>>> save_word2vec(["cat", "dog"], np.eye(2), "means.bin", binary=True)
PosixPath('means.bin')
>>> from gensim.models import KeyedVectors
>>> KeyedVectors.load_word2vec_format("means.bin", binary=True)["dog"]
array([0., 1.], dtype=float32)

Only the means are written (the formats hold one vector per word); words may
not contain spaces or line breaks, which these formats cannot represent.
"""

from pathlib import Path

import numpy as np

from keras_gauss.checks import listing
from keras_gauss.checks import utf8_words
from keras_gauss.io import WORD2VEC
from keras_gauss.io import atomic_file
from keras_gauss.io import check_output_file


def check_words(words, size, separators=(" ",), what="word2vec"):
    """Checks that `words` can be written in a format split on `separators`.

    Raises:
        ValueError: a word is empty, holds a separator or a line break, is
            not UTF-8 (`utf8_words`), or the number of words is not `size`.
    """
    words = [w if isinstance(w, str) else str(w) for w in utf8_words(words, what)]
    if len(words) != size:
        raise ValueError(f"{len(words)} words for {size} vectors.")
    forbidden = tuple(separators) + ("\n", "\r")
    bad = [w for w in words if not w or any(c in w for c in forbidden)]
    if bad:
        raise ValueError(
            f"the {what} format cannot hold empty words or words containing "
            f"{' or '.join(map(repr, forbidden))}; got {listing(bad)}.")
    return words


def save_word2vec(words, vectors, path, binary=False, overwrite=False):
    """Writes vectors in word2vec text or binary format.

    The file is written to a temporary sibling and renamed when complete.

    Args:
        words: the `n` words, in the vectors' order.
        vectors: `(n, d)` array.
        path: the output file.
        binary: write the binary format instead of text.
        overwrite: replace a word2vec export of ours (its marker
            `.NAME.keras-gauss` records its contents; never another file).

    Returns:
        `path` as a `Path`.

    Raises:
        ValueError: a word the format cannot hold, or mismatched sizes.
        keras_gauss.io.OutputExistsError: `path` exists and `overwrite` is
            False.

    Example:

    >>> import numpy as np
    >>> save_word2vec(["cat", "dog"], np.eye(2), "vectors.txt")
    PosixPath('vectors.txt')
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2:
        raise ValueError(f"vectors must be (n, d), got shape {vectors.shape}.")
    words = check_words(words, vectors.shape[0])
    if not np.isfinite(vectors).all():
        raise ValueError(f"vectors: {int((~np.isfinite(vectors).all(axis=1)).sum())} rows "
                         "are not finite.")
    check_output_file(path, overwrite, content=WORD2VEC)
    header = f"{vectors.shape[0]} {vectors.shape[1]}\n"
    rows = vectors.astype("<f4")
    if binary:
        with atomic_file(path, overwrite, mode="wb", content=WORD2VEC) as out:
            out.write(header.encode("utf-8"))
            for word, row in zip(words, rows):
                out.write(word.encode("utf-8") + b" " + row.tobytes() + b"\n")
    else:
        with atomic_file(path, overwrite, content=WORD2VEC) as out:
            out.write(header)
            for word, row in zip(words, rows):
                out.write(word + " " + " ".join(format(x, ".9g") for x in row.tolist()) + "\n")
    return Path(path)


def export_run_word2vec(run_dir, path, binary=False, overwrite=False):
    """Writes a run's means (of its `table`) in word2vec format.

    Args:
        run_dir: a run directory (see `keras_gauss.runs`).
        path: the output file.
        binary: binary format instead of text.
        overwrite: replace a word2vec export of ours (its marker
            `.NAME.keras-gauss` records its contents; never another file).

    Returns:
        `path` as a `Path`.

    Raises:
        FileNotFoundError: `run_dir` holds no trained run.
        ValueError: a vocabulary entry the format cannot hold.
        keras_gauss.io.OutputExistsError: `path` exists and `overwrite` is
            False.

    Example:

    >>> from keras_gauss.pipelines.train import demo_run
    >>> _ = demo_run("runs/tiny")  # a tiny corpus run, in well under a second
    >>> export_run_word2vec("runs/tiny", "means.txt")
    PosixPath('means.txt')
    >>> open("means.txt").readline()  # 7 words, 4 dimensions
    '7 4\\n'
    """
    from keras_gauss.runs import load_run

    check_output_file(path, overwrite, content=WORD2VEC)
    run = load_run(run_dir)
    means, _ = run.tables()
    return save_word2vec(run.words, means, path, binary=binary, overwrite=overwrite)
