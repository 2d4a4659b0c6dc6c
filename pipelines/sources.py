"""Corpus sources: streams of text lines as `tf.data.Dataset` objects of `tf.string`.

Every source yields one "sentence" per element (a line of a text file, a
document of a TFDS dataset, a WordNet gloss); skip-gram windows never cross
elements. Nothing is read into memory as a whole: files are streamed by
`tf.data.TextLineDataset`.

Corpus specifications accepted by `load_corpus`:

* `None` or `"wordnet"`: the built-in corpus of WordNet glosses (`wordnet_source`);
* `"tfds:NAME[:SPLIT][/FEATURE]"`: a TensorFlow Datasets dataset that is
  already prepared locally (`tfds_source`), e.g. `"tfds:imdb_reviews:train/text"`;
* a path to a text file (`.gz` files are decompressed) or to a directory of
  such files (`text_source`);
* a `tf.data.Dataset` of scalar `tf.string`, read as it is.

Every source comes with tf.data's autotuner off (`without_autotune`), and
so does every pipeline built on it: deleting an autotuned iterator (at the
end of each of `fit`'s epochs) waits for the autotuner's thread.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Iterable, Union

import tensorflow as tf

from keras_gauss.tf_data import without_autotune
from .text_files import expand_paths, check_text_file, verify_gzip  # noqa: F401 - re-exported

__all__ = [
    "Corpus",
    "MAX_LINE_WORDS",
    "cache_dir",
    "cut_long_lines",
    "describe_corpus",
    "verify_gzip",
    "load_corpus",
    "text_source",
    "tfds_source",
    "wordnet_source",
]

Corpus = Union[str, os.PathLike, tf.data.Dataset, None]
"""Anything `load_corpus` accepts."""

_TFDS_SPEC = re.compile(r"tfds:(?P<name>[^:/]+)(?::(?P<split>[^/]+))?(?:/(?P<feature>.+))?")
_WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")


def cache_dir() -> Path:
    """Return the data cache directory: `$KERAS_GAUSS_DATA` or `~/.cache/keras_gauss`."""
    env = os.environ.get("KERAS_GAUSS_DATA")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "keras_gauss"


def describe_corpus(corpus: Corpus) -> str:
    """Return a short human-readable name of a corpus specification, for messages."""
    if corpus is None:
        return "'wordnet' (default)"
    if isinstance(corpus, tf.data.Dataset):
        return "<tf.data.Dataset>"
    return repr(os.fspath(corpus))


def text_source(paths: str | os.PathLike | Iterable[str | os.PathLike], recursive: bool = False) -> tf.data.Dataset:
    """Stream the lines of text files, one dataset element per line.

    Directories are expanded to the regular files they contain, sorted by path,
    skipping hidden names (starting with `.`); with `recursive=True`
    sub-directories are searched too. Files ending in `.gz` are read as gzip,
    and verified to their end first (`verify_gzip`: CRC and length).
    Every file is checked whole first, in one streaming pass
    (`keras_gauss.pipelines.text_files.check_text_file`): a NUL byte
    or invalid UTF-8 anywhere is an error naming the file and the line.

    Args:
        paths: A file or directory, or a sequence of them (read in the given order).
        recursive: Whether directories are searched recursively.

    Returns:
        A `tf.data.Dataset` of scalar `tf.string` lines (without the newline).

    Raises:
        FileNotFoundError: If a path does not exist.
        ValueError: If a file is binary, not UTF-8 (naming the line), a
            corrupt or truncated gzip file (naming the byte offset), a FIFO,
            device or socket, or a directory holds no files; the message
            names the file.

    Example:
        >>> os.makedirs("corpus")
        >>> with open("corpus/1.txt", "w") as f:
        ...     _ = f.write("The first line of the first file.\\nIts second line.\\n")
        >>> lines = text_source("corpus/")
        >>> next(iter(lines)).numpy()
        b'The first line of the first file.'
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = [f for p in paths for f in expand_paths(Path(p).expanduser(), recursive)]
    for f in files:
        check_text_file(f)  # whole; a .gz file is verified too (gzip_chunks)
    names = [str(f) for f in files]
    compression = ["GZIP" if f.suffix == ".gz" else "" for f in files]
    if len(set(compression)) == 1:  # one reader of the files in turn: nothing to trace
        return tf.data.TextLineDataset(names, compression_type=compression[0])
    return tf.data.Dataset.from_tensor_slices((names, compression)).flat_map(
        lambda name, comp: tf.data.TextLineDataset(name, compression_type=comp)
    )


def tfds_source(name: str, split: str = "train", feature: str | None = None, data_dir: str | None = None) -> tf.data.Dataset:
    """Stream one text feature of a locally prepared TensorFlow Datasets dataset.

    Nothing is ever downloaded (`download=False`).

    Args:
        name: TFDS name, optionally with config and version (`"imdb_reviews/plain_text:1.0.0"`).
        split: Split to read, e.g. `"train"` or `"train[:10%]"`.
        feature: Text feature to use; by default the only `tf.string` feature.
        data_dir: TFDS data directory; defaults to TFDS's own (`$TFDS_DATA_DIR`
            or `~/tensorflow_datasets`).

    Returns:
        A `tf.data.Dataset` of scalar `tf.string`, one document per element.

    Raises:
        ValueError: If the dataset name is unknown or the feature is missing,
            not a string, or ambiguous.
        FileNotFoundError: If the dataset is not prepared locally.

    Example:
        >>> docs = tfds_source("imdb_reviews", "train", "text")  # doctest: +SKIP
    """
    import tensorflow_datasets as tfds

    try:
        ds = tfds.load(name, split=split, data_dir=data_dir, download=False)
    except tfds.core.registered.DatasetNotFoundError as e:
        raise ValueError(f"unknown TFDS dataset {name!r}") from e
    except AssertionError as e:  # what tfds raises for data that is not prepared
        raise FileNotFoundError(
            f"TFDS dataset {name!r} is not prepared locally (data_dir={data_dir or 'TFDS default'}) and "
            "downloads are disabled; prepare it with `tfds.builder(name).download_and_prepare()` "
            "on a machine with network access and copy the data directory"
        ) from e
    spec = ds.element_spec
    if not isinstance(spec, dict):
        raise ValueError(f"TFDS dataset {name!r}: expected a dict of features, got {spec}")
    texts = [k for k, s in spec.items() if isinstance(s, tf.TensorSpec) and s.dtype == tf.string and s.shape.rank == 0]
    if feature is None:
        if len(texts) != 1:
            raise ValueError(f"TFDS dataset {name!r}: choose a text feature with NAME:SPLIT/FEATURE among {texts}")
        feature = texts[0]
    elif feature not in texts:
        raise ValueError(f"TFDS dataset {name!r} has no scalar string feature {feature!r} (have: {texts})")
    return ds.map(lambda x: x[feature], num_parallel_calls=tf.data.AUTOTUNE)


def _gloss_lines(reader) -> Iterable[str]:
    """Definitions and examples of every synset, parsed from `data.*` as NLTK does.

    Equivalent to `s.definition()` and `s.examples()` for ``s in
    reader.all_synsets()`` (one line each), but ~10x faster.
    """
    for fileid in _WORDNET_FILES:
        with reader.root.join(fileid).open() as f:
            for raw in f:
                if raw.startswith(b"  "):  # license header
                    continue
                gloss = raw.decode("utf-8").partition("|")[2]
                yield re.sub(r'".*?"', "", gloss).strip().strip("; ")
                yield from re.findall(r'"([^"]*)"', gloss)


def wordnet_source() -> tf.data.Dataset:
    """Stream the built-in corpus: glosses and example sentences of WordNet, all POS.

    The lines are extracted once from the reader of
    `keras_gauss.hierarchy.wordnet.load_wordnet` and cached, written atomically, as
    `<cache_dir()>/wordnet-<version>-glosses.txt` (one definition or example per line).

    Returns:
        A `tf.data.Dataset` of scalar `tf.string` lines.

    Example:
        >>> next(iter(wordnet_source())).numpy()  # doctest: +SKIP
        b'that which is perceived or known or inferred to have its own distinct existence (living or nonliving)'
    """
    from keras_gauss.hierarchy.wordnet import load_wordnet

    reader = load_wordnet()
    path = cache_dir() / f"wordnet-{reader.get_version()}-glosses.txt"
    if not path.is_file():
        from keras_gauss.io import atomic_file  # a killed writer leaves nothing for long

        with atomic_file(path, overwrite=True) as f:
            f.writelines(line + "\n" for line in _gloss_lines(reader) if line)
    return tf.data.TextLineDataset(str(path))


MAX_LINE_WORDS = 10_000
"""Whitespace-separated words of the longest line read whole; a longer one
is read as lines of this many (`cut_long_lines`; gensim's
`LineSentence(max_sentence_length=10000)`)."""


def cut_long_lines(lines: tf.data.Dataset, words: int = MAX_LINE_WORDS) -> tf.data.Dataset:
    """`lines` with every line of more than `words` whitespace-separated words
    cut into lines of `words` (the last one shorter), joined by single spaces;
    every other line as it is. The order is kept.

    Example:
        >>> lines = tf.data.Dataset.from_tensor_slices(["a b c d e", "f  g"])
        >>> [x.decode() for x in cut_long_lines(lines, words=2).as_numpy_iterator()]
        ['a b', 'c d', 'e', 'f  g']
    """
    return lines.batch(256).map(_cut_function(words)).unbatch()


@functools.lru_cache(maxsize=4)
def _cut_function(words):
    """`cut_long_lines`'s step on a batch of lines, traced once a process for
    each `words` (a `tf.data` map traces its function anew on every dataset
    built, and this graph took 0.4 CPU-s a trace: once an epoch)."""

    def cut(batch):
        def pieces():
            split = tf.strings.split(batch)
            n = split.row_lengths()
            count = tf.maximum((n + words - 1) // words, 1)
            first = tf.ragged.range(count).flat_values * words  # each piece's first word
            lengths = tf.minimum(tf.repeat(n, count) - first, words)
            joined = tf.strings.reduce_join(
                tf.RaggedTensor.from_row_lengths(split.flat_values, lengths), axis=1,
                separator=" ")
            long = n > words  # (the other lines, repeated once each, keep their own text)
            return tf.where(tf.repeat(long, count), joined, tf.repeat(tf.where(long, "", batch),
                                                                       count))

        # a line of at most 2 * words bytes cannot hold more than `words` words
        return tf.cond(tf.reduce_any(tf.strings.length(batch) > 2 * words), pieces,
                       lambda: batch)

    return tf.function(cut, input_signature=[tf.TensorSpec([None], tf.string)],
                       autograph=False)


def load_corpus(corpus: Corpus = None) -> tf.data.Dataset:
    """Resolve a corpus specification to a dataset of text lines.

    Args:
        corpus: `None`/`"wordnet"`, `"tfds:NAME[:SPLIT][/FEATURE]"`, a file
            or directory path, or a `tf.data.Dataset` of scalar `tf.string`
            (see the module docstring).

    Returns:
        A `tf.data.Dataset` of scalar `tf.string`, one sentence/document per
        element, with tf.data's autotuner off (`keras_gauss.tf_data`).

    Raises:
        FileNotFoundError: For a missing path or an unprepared TFDS dataset.
        ValueError: For unreadable files, unknown TFDS names or a dataset that
            does not yield scalar strings.

    Example:
        >>> lines = load_corpus("tfds:imdb_reviews:train/text")  # doctest: +SKIP
        >>> lines = load_corpus()  # WordNet glosses  # doctest: +SKIP
    """
    return without_autotune(_source(corpus))


def _source(corpus: Corpus) -> tf.data.Dataset:
    """`load_corpus`'s dataset of lines, before its options."""
    if isinstance(corpus, tf.data.Dataset):
        spec = corpus.element_spec
        if not (isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string and spec.shape.is_compatible_with([])):
            raise ValueError(f"a corpus dataset must yield scalar tf.string, got {corpus.element_spec}")
        return corpus
    if corpus is None or corpus == "wordnet":
        return wordnet_source()
    if isinstance(corpus, str) and corpus.startswith("tfds:"):
        m = _TFDS_SPEC.fullmatch(corpus)
        if m is None:
            raise ValueError(f"bad TFDS corpus {corpus!r}: expected tfds:NAME[:SPLIT][/FEATURE]")
        return tfds_source(m["name"], m["split"] or "train", m["feature"])
    return text_source(corpus)
