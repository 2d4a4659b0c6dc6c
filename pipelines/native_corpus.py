"""The native engine of `train_corpus`: the C++ trainer, a corpus to a written run.

`train_corpus(engine="native")` (the default) runs here when the native
trainer (`keras_gauss.fused.NativeTables`) builds: one pass reads and
tokenizes the corpus into token ids in memory (`read_corpus`; WordNet
glosses, `tfds:` and datasets of lines: `read_lines`, through `tf.data`),
the vocabulary is counted from those ids, the native trainer runs the epochs
on interleaved tables, and the run is written
(`keras_gauss.pipelines.model_file` writes `model.keras` without Keras).
On text files nothing imports TensorFlow or Keras.

Checkpoints (`keras_gauss.checkpoint`, engine `"native"` in the
state) hold the two interleaved tables as they are (`native/0` words,
`native/1` contexts: means, variances and accumulators of a row in one
block), the position (epoch, chunk) and the running totals. Epoch `e`
shuffles the lines with `epoch_seed(seed, e)` and cuts them into chunks of
`CHUNK_TOKENS`; chunk `i` trains with the seed `seed << 40 | e << 24 | i`,
so the position is the whole random state and a resumed run with one thread
ends with the tables of an uninterrupted one, bit for bit.

`tokenize_text` gives the tokens of `keras_gauss.pipelines.tokenize` (the
`tf.strings` tokenizer): the same lowercasing, punctuation rules and
splitting, written with Python's `re` (RE2's `\\s` is `[\\t\\n\\f\\r ]`, and
`\\p{L}\\p{N}` is Python's `\\w` without `_`; `\\p{M}`, the combining marks,
has no class in `re`: `_marks` lists them).
"""

import functools
import os
import re
import sys
import unicodedata
import warnings
from pathlib import Path

import numpy as np

from keras_gauss.callbacks.progress import Progress
from keras_gauss.callbacks.progress import Phase
from keras_gauss.checks import check_loss
from keras_gauss.fused.native import NativeTables
from keras_gauss.fused.native import native_unavailable
from keras_gauss.fused.sampling import alias_table
from keras_gauss.job import Data
from keras_gauss.job import Digest
from keras_gauss.job import Engine
from keras_gauss.job import Table
from keras_gauss.pipelines.corpus_run import check_vocabulary
from keras_gauss.pipelines.corpus_run import no_pairs
from keras_gauss.pipelines.corpus_run import corpus_metrics
from keras_gauss.pipelines.corpus_run import corpus_run_info
from keras_gauss.pipelines.corpus_run import start_lines
from keras_gauss.pipelines.model_file import corpus_model_config
from keras_gauss.pipelines.model_file import write_corpus_model
from keras_gauss.pipelines.sampling import keep_probabilities
from keras_gauss.pipelines.text_files import expand_paths
from keras_gauss.pipelines.text_files import mark_checked
from keras_gauss.pipelines.text_files import raw_pieces
from keras_gauss.pipelines.text_files import text_check

_SPACE = "\t\n\f\r "
_LEADING_MARKS = re.compile(rf"(^|[{_SPACE}])['’-]+")
_TRAILING_MARKS = re.compile(rf"['’-]+([{_SPACE}]|$)")
_BLOCK_BYTES = 1 << 22
# Corpora of at most this many tokens are read into memory (4 bytes each);
# larger ones need the keras engine, which streams.
MAX_TOKENS = 1 << 28
# Tokens per call of the native trainer (a chunk: the unit of checkpoints).
CHUNK_TOKENS = 1 << 20
# Test hook: chunks of this many tokens instead, so that a tiny corpus has
# several chunks an epoch (kill and resume tests).
CHUNK_TOKENS_VARIABLE = "KERAS_GAUSS_TEST_CHUNK_TOKENS"
# The engine a native checkpoint names.
ENGINE = "native"


@functools.cache
def _marks():
    """The combining marks (Unicode category M: RE2's `\\p{M}`) as ranges
    of a `re` character class."""
    ranges, start, last = [], None, None
    for code in range(sys.maxunicode + 1):
        if unicodedata.category(chr(code))[0] == "M":
            if start is None:
                start = code
            last = code
        elif start is not None:
            ranges.append(f"\\U{start:08x}-\\U{last:08x}")
            start = None
    return "".join(ranges)


@functools.cache
def _non_word():
    return re.compile(rf"(?:[^\w{_marks()}{_SPACE}'’-]|_)+|['’-]{{2,}}")


def tokenize_text(text):
    """The tokens of every line of `text`, as `keras_gauss.pipelines.tokenize`
    splits them (lowercased, punctuation removed, split on whitespace).

    Args:
        text: a string of lines separated by `"\\n"`.

    Returns:
        A list with one list of token strings per line.

    Example:

    >>> tokenize_text("Don't 'quote' state-of-the-art -- ok!\\nA_b")
    [["don't", 'quote', 'state-of-the-art', 'ok'], ['a', 'b']]
    """
    text = _non_word().sub(" ", text.lower())
    text = _LEADING_MARKS.sub(r"\1", text)
    text = _TRAILING_MARKS.sub(r"\1", text)
    return [line.split() for line in text.split("\n")]


def corpus_files(corpus):
    """The text files of `corpus` when this path can read it, else None.

    Args:
        corpus: a corpus specification (`keras_gauss.pipelines.load_corpus`).

    Returns:
        A list of `Path`s (present, regular files; their text is checked
        whole by `read_corpus`), or None for corpora this path does not
        read (WordNet, `tfds:`, datasets).

    Raises:
        FileNotFoundError, ValueError: as `keras_gauss.pipelines.text_source`.

    Example:

    >>> os.makedirs("corpus")
    >>> for name in ("b.txt", "a.txt"):
    ...     with open(f"corpus/{name}", "w") as f:
    ...         _ = f.write("the cat\\n")
    >>> [path.name for path in corpus_files("corpus")]
    ['a.txt', 'b.txt']
    >>> corpus_files("wordnet") is None  # not a text corpus
    True
    """
    if not isinstance(corpus, (str, os.PathLike)):
        return None
    text = os.fspath(corpus)
    if text == "wordnet" or text.startswith("tfds:"):
        return None
    return expand_paths(Path(text).expanduser(), recursive=False)


def _file_pieces(path):
    """The bytes of `path` in pieces (a `.gz` file decompressed and its CRCs
    checked; a regular file only: `keras_gauss.inputs.open_input`)."""
    return raw_pieces(path, _BLOCK_BYTES)


def _hashed(pieces, digest):
    """`pieces`, each added to `digest` as it passes, then a line end when the
    file's last line has none (so files hash as the lines they hold)."""
    last = b"\n"
    for piece in pieces:
        if piece:
            digest.update(piece)
            last = piece[-1:]
        yield piece
    if last != b"\n":
        digest.update(b"\n")


def corpus_digest(corpus):
    """The content digest of a corpus of text files (`keras_gauss.job.Digest`),
    as every engine computes it: the (decompressed) bytes of its files in
    order, each file ended by a line end. None for corpora that are not
    text files (WordNet, `tfds:`, datasets: their engines digest the lines).

    Example:

    >>> with open("a.txt", "w") as f:
    ...     _ = f.write("the cat\\nthe dog\\n")
    >>> with open("b.txt", "w") as f:
    ...     _ = f.write("the dog\\nthe cat\\n")  # the same lines, reversed
    >>> corpus_digest("a.txt") == corpus_digest("b.txt")
    False
    """
    files = corpus_files(corpus)
    if files is None:
        return None
    digest = Digest("corpus")
    for path in files:
        for _ in _hashed(_file_pieces(path), digest):
            pass
    return digest.hexdigest()


def _blocks(path, digest=None):
    """Decoded text of `path` in blocks of whole lines, checked whole as it is
    read: a NUL byte or invalid UTF-8 anywhere raises
    `keras_gauss.inputs.InputFileError` naming the file and the line. Its
    bytes go into `digest` as they are read (`corpus_digest`)."""
    check = text_check(path)
    pieces = _file_pieces(path)
    if digest is not None:
        pieces = _hashed(pieces, digest)
    pending = b""
    for piece in pieces:
        check.update(piece)
        pending += piece
        if len(pending) < _BLOCK_BYTES:
            continue
        cut = pending.rfind(b"\n") + 1
        if cut:
            yield pending[:cut - 1].decode("utf-8")
            pending = pending[cut:]
    check.finish()
    if pending:
        yield pending[:-1 if pending.endswith(b"\n") else None].decode("utf-8")
    mark_checked(path)


def read_corpus(files, digest=None):
    """Reads and tokenizes text files into token ids, in one pass.

    Lines are lowercased in Python and split and numbered in C++
    (`keras_gauss.fused.native.NativeTokenizer`), giving the tokens of
    `tokenize_text`.

    Args:
        files: text files (`.gz` decompressed), read in order, a line a
            sentence.
        digest: a `keras_gauss.job.Digest` the files' bytes are added to as
            they are read (`corpus_digest` of the files), or None.

    Raises:
        keras_gauss.inputs.InputFileError: a NUL byte or invalid UTF-8
            anywhere in a file (naming it and the line), before any result.

    Returns:
        `(types, counts, ids, splits)`: every distinct token in order of
        first appearance, its count (int64), the corpus as int32 ids into
        `types`, and the int64 line boundaries in `ids` (lines + 1), or None
        when the corpus has more than `MAX_TOKENS` tokens.

    Example:

    >>> with open("a.txt", "w") as f:
    ...     _ = f.write("The cat\\nthe dog\\n")
    >>> types, counts, ids, splits = read_corpus([Path("a.txt")])
    >>> types, counts.tolist(), ids.tolist(), splits.tolist()
    (['the', 'cat', 'dog'], [2, 1, 1], [0, 1, 0, 2], [0, 2, 4])
    """
    from keras_gauss.fused.native import NativeTokenizer

    tokenizer = NativeTokenizer()
    for path in files:
        for block in _blocks(path, digest):
            tokenizer.add(block.lower())
            if len(tokenizer) > MAX_TOKENS:
                return None
    return _tokenized(tokenizer)


def _tokenized(tokenizer):
    """`(types, counts, ids, splits)` of a filled `NativeTokenizer`."""
    types, ids, lengths = tokenizer.result()
    splits = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=splits[1:])
    counts = np.bincount(ids, minlength=len(types)).astype(np.int64)
    return types, counts, ids, splits


def read_lines(corpus, digest=None):
    """Reads and tokenizes a corpus that is not text files (WordNet glosses,
    `tfds:`, a `tf.data.Dataset` of lines) through
    `keras_gauss.pipelines.load_corpus`, as `read_corpus` reads files.

    The digest is the lines' in order, each ended by a line end (what
    `keras_gauss.pipelines.train.line_digest` computes); a line's own line
    ends are spaces to the tokenizer (one line, one sentence).

    Returns:
        As `read_corpus`.
    """
    from keras_gauss.fused.native import NativeTokenizer
    from keras_gauss.pipelines.sources import load_corpus

    tokenizer = NativeTokenizer()
    for batch in load_corpus(corpus).batch(4096).as_numpy_iterator():
        if digest is not None:
            digest.update(b"\n".join(batch) + b"\n")
        text = "\n".join(line.decode("utf-8", "replace").replace("\n", " ").replace("\r", " ")
                         for line in batch)
        tokenizer.add(text.lower())
        if len(tokenizer) > MAX_TOKENS:
            return None
    return _tokenized(tokenizer)


def given_vocabulary(types, vocab):
    """`vocabulary`'s result for a prebuilt `Vocabulary`: its words and counts,
    and the id of every type in it (-1: not in it).

    Example:

    >>> from keras_gauss.pipelines.vocabulary import Vocabulary
    >>> words, counts, remap = given_vocabulary(["cat", "the", "dog"],
    ...                                         Vocabulary(["the", "cat"], [2, 1]))
    >>> words, counts.tolist(), remap.tolist()
    (['the', 'cat'], [2, 1], [1, 0, -1])
    """
    index = {word: i for i, word in enumerate(vocab.words)}
    remap = np.array([index.get(t, -1) for t in types], np.int32)
    return list(vocab.words), np.asarray(vocab.counts, np.int64), remap


def _describe(corpus):
    if isinstance(corpus, (str, os.PathLike)):
        return os.fspath(corpus)
    return "wordnet" if corpus is None else type(corpus).__name__


def vocabulary(types, counts, min_count, max_size=None):
    """The vocabulary `build_vocabulary` keeps: words by count (descending),
    ties by word, at least `min_count`, at most `max_size`.

    Returns:
        `(words, counts, remap)`: the kept words and counts, and `remap`, the
        new id of every type (-1: dropped).

    Example:

    >>> words, counts, remap = vocabulary(["cat", "the", "dog"], np.array([1, 2, 1]),
    ...                                   min_count=1, max_size=2)
    >>> words, counts.tolist(), remap.tolist()  # "dog" is the third: dropped
    (['the', 'cat'], [2, 1], [1, 0, -1])
    """
    order = sorted(range(len(types)), key=lambda i: (-counts[i], types[i]))
    kept = [i for i in order if counts[i] >= min_count][:max_size]
    remap = np.full(len(types), -1, np.int32)
    remap[np.asarray(kept, np.int64)] = np.arange(len(kept), dtype=np.int32)
    return [types[i] for i in kept], counts[np.asarray(kept, np.int64)], remap


def in_vocabulary(ids, splits, remap):
    """`(ids, splits)` with every id mapped by `remap` and the dropped (-1)
    tokens removed, line boundaries kept.

    Example: lines `[0, 1]` and `[0, 2]`, type 2 dropped.

    >>> ids, splits = in_vocabulary(np.array([0, 1, 0, 2]), np.array([0, 2, 4]),
    ...                             np.array([1, 0, -1]))
    >>> ids.tolist(), splits.tolist()
    ([1, 0, 1], [0, 2, 3])
    """
    mapped = remap[ids]
    keep = mapped >= 0
    kept = np.zeros(len(ids) + 1, np.int64)
    np.cumsum(keep, out=kept[1:])
    return mapped[keep], kept[splits]


def shuffled_lines(ids, splits, rng):
    """The lines of `(ids, splits)` in a random order (`rng`, a NumPy Generator).

    Example: three lines, `[0, 1]`, `[2]` and `[3, 4, 5]`.

    >>> ids, splits = shuffled_lines(np.arange(6), np.array([0, 2, 3, 6]),
    ...                              np.random.default_rng(3))
    >>> ids.tolist(), splits.tolist()  # lines [3, 4, 5], [2], [0, 1]
    ([3, 4, 5, 2, 0, 1], [0, 3, 4, 6])
    """
    lengths = np.diff(splits)
    order = rng.permutation(len(lengths))
    new_lengths = lengths[order]
    new_splits = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(new_lengths, out=new_splits[1:])
    index = np.repeat(splits[:-1][order] - new_splits[:-1], new_lengths)
    index += np.arange(len(index), dtype=np.int64)
    return ids[index], new_splits


# Threads beyond this many a core only wait for one (Hogwild is CPU-bound).
THREADS_PER_CORE = 4


def _threads(config):
    """The threads of the native trainer: `--threads`, capped at
    `THREADS_PER_CORE` a core this process may use (at least 64, after one
    warning), or the cores (`--threads 0`). The trainer runs with fewer when
    the system starts fewer (`NativeTables.train`)."""
    cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else os.cpu_count() or 1)
    if not config.threads:
        return cores
    cap = max(64, THREADS_PER_CORE * cores)
    if config.threads > cap:
        warnings.warn(f"--threads {config.threads}: capped at {cap} ({THREADS_PER_CORE} a core "
                      f"of the {cores} this process may use, at least 64).", RuntimeWarning,
                      stacklevel=2)
        return cap
    return config.threads


def _chunk_tokens():
    return int(os.environ.get(CHUNK_TOKENS_VARIABLE) or CHUNK_TOKENS)


def epoch_chunks(ids, splits, seed, epoch):
    """Epoch `epoch`'s chunks of `(ids, splits)`: the lines shuffled with
    `epoch_seed(seed, epoch)` and cut into chunks of about `CHUNK_TOKENS`
    (a function of the seed and the epoch only).

    Example: a list of `(ids, splits)`, one chunk for a tiny corpus.

    >>> chunks = epoch_chunks(np.arange(6), np.array([0, 2, 3, 6]), seed=0, epoch=0)
    >>> [(ids.tolist(), splits.tolist()) for ids, splits in chunks]
    [([3, 4, 5, 0, 1, 2], [0, 3, 5, 6])]
    """
    from keras_gauss.checkpoint import epoch_seed

    rng = np.random.default_rng(epoch_seed(seed, epoch))
    epoch_ids, epoch_splits = shuffled_lines(ids, splits, rng)
    return _chunks(epoch_ids, epoch_splits, _chunk_tokens())


def _chunks(ids, splits, tokens):
    """`(ids, splits)` cut at line boundaries into pieces of about `tokens`;
    a line longer than `tokens` (a corpus of one line, as text8) is cut into
    pieces of `tokens`, each a chunk of its own, so that progress, Ctrl-C
    and checkpoints come between them (a window loses the pairs across a
    cut, as gensim's 10,000-token sentences do)."""
    lines = len(splits) - 1
    start = 0
    while start < lines:
        if splits[start + 1] - splits[start] > tokens:
            for at in range(int(splits[start]), int(splits[start + 1]), tokens):
                piece = ids[at:min(at + tokens, int(splits[start + 1]))]
                yield piece, np.array([0, len(piece)], splits.dtype)
            start += 1
            continue
        end = int(np.searchsorted(splits, splits[start] + tokens, side="right")) - 1
        end = min(max(end, start + 1), lines)
        yield ids[splits[start]:splits[end]], splits[start:end + 1] - splits[start]
        start = end


def sampling_tables(counts, sample):
    """What the native trainer draws with, for a vocabulary's `counts`.

    Args:
        counts: the corpus count of every word.
        sample: word2vec's subsampling threshold (0: no subsampling).

    Returns:
        `(probs, alias, keep)`: the negatives' alias table of `counts ** 0.75`
        and the float32 keep probability of every word
        (`keep_probabilities`), None when `sample` is 0.

    Example:

    >>> probs, alias, keep = sampling_tables(np.array([1000, 10]), 1e-3)
    >>> [round(float(k), 3) for k in keep]
    [0.033, 0.419]
    """
    probs, alias = alias_table(np.asarray(counts, np.float64) ** 0.75)
    keep = None
    if sample > 0:
        keep = keep_probabilities(counts, sample).astype(np.float32)
    return probs, alias, keep


# None when the native trainer builds and loads here, else why not:
# `keras_gauss.job.choose_engine`'s test.
unavailable = native_unavailable


class NativeEngine(Engine):
    """The native engine: the engine a `keras_gauss.job.Job` runs for
    `keras_gauss.pipelines.train_corpus` with `engine="native"` (see the
    module docstring); the run files of the keras engine.

    Args:
        config: a `keras_gauss.pipelines.train.CorpusConfig`.
        corpus: a corpus specification (`keras_gauss.pipelines.load_corpus`).
        vocab: a prebuilt `keras_gauss.pipelines.Vocabulary` (its words and
            counts; `min_count` and `max_size` are then not applied), or None.

    Example:

    >>> import dataclasses
    >>> from keras_gauss.job import Job
    >>> from keras_gauss.pipelines.train import CorpusConfig
    >>> with open("corpus.txt", "w") as f:
    ...     _ = f.write("the cat sat on the mat\\nthe dog sat on the log\\n" * 50)
    >>> config = CorpusConfig(dim=4, min_count=1)
    >>> job = Job("corpus", "runs/native", dataclasses.asdict(config), verbose=0)
    >>> job.run(lambda state: [NativeEngine(config, "corpus.txt")])["vocab_size"]
    7
    """

    name = ENGINE

    def __init__(self, config, corpus, vocab=None):
        self.config = config
        self.corpus = corpus
        self.vocab = vocab

    def read(self, job):
        """Reads and counts the corpus (digesting its bytes on the way)."""
        config, corpus = self.config, self.corpus
        counting = Phase("counting the vocabulary" if self.vocab is None
                         else "reading the corpus", job.verbose)
        digest = Digest("corpus")
        files = corpus_files(corpus)
        read = read_corpus(files, digest) if files is not None else read_lines(corpus, digest)
        if read is None:
            raise ValueError(f"the corpus has more than {MAX_TOKENS:,} tokens: the native "
                             "engine holds it in memory; give --engine keras (it streams).")
        types, type_counts, ids, splits = read
        if not types:
            raise ValueError(f"corpus {_describe(corpus)!r} contains no tokens")
        if self.vocab is not None:
            words, counts, remap = given_vocabulary(types, self.vocab)
        else:
            words, counts, remap = vocabulary(types, type_counts, config.min_count,
                                              config.max_size)
        if not words:
            top = int(np.argmax(type_counts))
            raise ValueError(
                f"vocabulary of corpus {_describe(corpus)!r} is empty after min_count="
                f"{config.min_count} (most frequent word {types[top]!r} occurs "
                f"{int(type_counts[top])} times)")
        check_vocabulary(words, config)
        self.ids, self.splits = in_vocabulary(ids, splits, remap)
        self.words, self.counts = words, counts
        counting.done()
        return Data(len(words), config.dim, tables=2, digest=digest.hexdigest())

    def build(self, job, arrays):
        """The interleaved tables, started inside their bounds, or the checkpoint's."""
        config, rows = self.config, len(self.words)
        self.tables_ = NativeTables.initial(
            rows, config.dim, seed=config.seed, init_variance=config.init_variance,
            spherical=config.covariance == "spherical",
            bounds=(config.max_norm, config.min_variance, config.max_variance))
        acc = config.initial_accumulator  # SparseAdagrad's initial_accumulator_value
        for t in range(2):
            means = self.tables_.means(t)
            norms = np.linalg.norm(means, axis=1, keepdims=True)
            if (norms > config.max_norm).any():  # as GaussianEmbedding starts: projected
                means = means * np.minimum(1.0, config.max_norm / np.maximum(norms, 1e-30))
            self.tables_.set(t, means=means,
                             mean_accumulator=np.full((rows, config.dim), acc),
                             variance_accumulator=np.full((rows, self.tables_.dv), acc))
        if arrays is not None:
            _restore(self.tables_, arrays, job.out_dir)
        if job.verbose:
            print("\n".join(start_lines(config, self.counts, "native")))

    def tables(self):
        config, tables = self.config, self.tables_
        return [Table(name, tables.means(t), tables.variances(t), config.max_norm,
                      config.min_variance, config.max_variance)
                for t, name in ((0, "words"), (1, "contexts"))]

    def train(self, job):
        """The epochs, chunk by chunk, a checkpoint between two chunks when due."""
        config, tables, ids, splits = self.config, self.tables_, self.ids, self.splits
        checkpointer = job.checkpointer
        Phase("setting up the native trainer", job.verbose)  # ends when training starts
        probs, alias, keep = sampling_tables(self.counts, config.sample)
        threads = _threads(config)
        state = job.state
        first, skip = state.get("epoch", 0), state.get("step", 0)
        progress = Progress(unit="pairs", batch_size=config.batch_size,
                            mode={0: "off", 1: "auto"}.get(job.verbose, "lines"))
        progress.set_params({"epochs": config.epochs, "steps": len(ids)})
        progress.on_train_begin()
        total_pairs, losses = state.get("pairs", 0), list(state.get("losses", []))
        iterations = state.get("iterations", 0)
        for epoch in range(first, config.epochs):
            pairs, loss, seen = 0, 0.0, 0
            if epoch == first and skip:
                seen, pairs, loss = state["seen"], state["epoch_pairs"], state["epoch_loss"]
            progress.on_epoch_begin(epoch, {"pairs": pairs})
            for index, (chunk_ids, chunk_splits) in enumerate(
                    epoch_chunks(ids, splits, config.seed, epoch)):
                if epoch == first and index < skip:
                    continue  # trained before the checkpoint
                seed = (config.seed << 40) + (epoch << 24) + index
                chunk_loss, chunk_pairs = tables.train(
                    chunk_ids, chunk_splits, seed, config.learning_rate, probs, alias,
                    keep=keep, window=config.window, dynamic_window=config.dynamic_window,
                    negatives=config.negatives, batch_size=config.batch_size,
                    num_threads=threads, margin=config.margin, epsilon=config.epsilon,
                    energy=config.energy,
                    variance_learning_rate=config.variance_learning_rate)
                pairs += chunk_pairs
                loss += chunk_loss
                check_loss(loss, f"in epoch {epoch + 1}, chunk {index + 1}")
                seen += len(chunk_ids)
                progress.on_train_batch_end(seen - 1, {"loss": loss / max(pairs, 1),
                                                       "pairs": pairs})
                if checkpointer is not None and checkpointer.due():
                    checkpointer.save(
                        {"epoch": epoch, "step": index + 1, "seen": seen,
                         "epoch_pairs": pairs, "epoch_loss": loss, "pairs": total_pairs,
                         "losses": losses, "iterations": iterations,
                         "train_seconds": job.elapsed(), "layout": _layout(tables)},
                        {f"native/{t}": tables.data[t].copy() for t in range(2)})
            iterations += -(-pairs // config.batch_size)
            total_pairs += pairs
            losses.append(loss / max(pairs, 1))
            progress.on_epoch_end(epoch, {"loss": losses[-1], "pairs": pairs})
        progress.on_train_end()
        self.train_seconds = job.elapsed()
        self.pairs, self.losses, self.iterations = total_pairs, losses, iterations

    def metrics(self, job):
        if not self.pairs:
            raise ValueError(no_pairs(self.config.sample))
        tokens = int(self.counts.sum()) * self.config.epochs
        return corpus_metrics(self.config, self.train_seconds, self.pairs, tokens,
                              self.losses, len(self.words))

    def write(self, job, directory):
        """`model.keras` (without Keras) and `vocab.tsv`; returns `run.json`'s entries."""
        config, tables = self.config, self.tables_
        model_config = corpus_model_config(
            len(self.words), config.dim, config.negatives, config.energy, config.covariance,
            config.max_norm, config.min_variance, config.max_variance, config.seed,
            config.init_variance, config.learning_rate, config.margin,
            epsilon=config.epsilon, initial_accumulator=config.initial_accumulator)
        arrays = [tables.means(0), tables.variances(0), tables.means(1), tables.variances(1)]
        accumulators = [*tables.accumulators(0), *tables.accumulators(1)]
        write_corpus_model(directory / "model.keras", arrays, accumulators, model_config,
                           iterations=self.iterations)
        with open(directory / "vocab.tsv", "w", encoding="utf-8") as f:
            f.writelines(f"{w}\t{c}\n" for w, c in zip(self.words, self.counts.tolist()))
        return corpus_run_info(config)


def _layout(tables):
    """The shape of the interleaved arrays of a checkpoint, saved in its state
    for readers (a resume checks the arrays' shapes, `_restore`)."""
    return {"rows": tables.rows, "dim": tables.dim, "dv": tables.dv, "stride": tables.stride}


def _restore(tables, arrays, out_dir):
    """Copies a native checkpoint's interleaved tables into `tables`;
    `CheckpointError` (one line) when they do not fit."""
    from keras_gauss.checkpoint import CheckpointError

    for t in range(2):
        value = arrays.get(f"native/{t}")
        if value is None or value.dtype != np.float32 \
                or value.shape != tables.data[t].shape:
            got = "missing" if value is None else f"{value.dtype} {value.shape}"
            raise CheckpointError(
                f"--resume {out_dir}: the checkpoint's native/{t} table is {got}, this run "
                f"needs float32 {tables.data[t].shape}; start again with --overwrite.")
        tables.data[t][...] = value

