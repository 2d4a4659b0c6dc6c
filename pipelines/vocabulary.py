"""Vocabulary: word counts from one streaming pass, a TSV format and an in-graph lookup."""

from __future__ import annotations

import collections
import functools
import io
import os
from typing import Callable, NamedTuple, Sequence

import numpy as np
import tensorflow as tf

from keras_gauss.inputs import read_text

from .sources import Corpus, cut_long_lines, describe_corpus, load_corpus
from .tokens import tokenize

__all__ = ["CorpusCount", "Tokenizer", "Vocabulary", "build_vocabulary", "count_corpus", "vocabulary_from_counts"]

Tokenizer = Callable[[tf.Tensor], tf.RaggedTensor]
"""Maps a 1-D batch of `tf.string` lines to a ragged `[lines, tokens]` tensor."""


class Vocabulary:
    """Words with their corpus counts; a word's id is its position (0-based).

    Args:
        words: Distinct words, in id order.
        counts: Positive corpus count of each word.

    Raises:
        ValueError: On duplicate words, mismatched lengths or non-positive counts.

    Example:
        >>> vocab = Vocabulary(["the", "cat"], [10, 2])
        >>> vocab.lookup(tf.constant(["cat", "dog"])).numpy().tolist()
        [1, -1]
    """

    def __init__(self, words: Sequence[str], counts: Sequence[int]):
        self.words = tuple(words)
        self.counts = np.asarray(counts, dtype=np.int64)
        if self.counts.shape != (len(self.words),):
            raise ValueError(f"{len(self.words)} words but counts of shape {self.counts.shape}")
        if len(set(self.words)) != len(self.words):
            raise ValueError("vocabulary words must be distinct")
        if (self.counts <= 0).any():
            raise ValueError("vocabulary counts must be positive")

    def __len__(self) -> int:
        return len(self.words)

    def __repr__(self) -> str:
        return f"Vocabulary({len(self)} words, {self.total} tokens)"

    @property
    def total(self) -> int:
        """Sum of all counts: the number of in-vocabulary tokens of the corpus."""
        return int(self.counts.sum())

    @functools.cached_property
    def table(self) -> tf.lookup.StaticHashTable:
        """`tf.string` -> `tf.int32` id table; unknown words map to `-1`."""
        with tf.init_scope():  # created eagerly even if first used inside a tf.data function
            init = tf.lookup.KeyValueTensorInitializer(
                tf.constant(self.words, tf.string), tf.range(len(self), dtype=tf.int32)
            )
            return tf.lookup.StaticHashTable(init, default_value=-1)

    def lookup(self, tokens: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """Map string tokens (dense or ragged, in or out of a graph) to int32 ids, `-1` if unknown."""
        return self.table.lookup(tokens)

    def save(self, path: str | os.PathLike) -> None:
        """Write the vocabulary as UTF-8 TSV, one `word<TAB>count` line per word, in id order."""
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(f"{w}\t{c}\n" for w, c in zip(self.words, self.counts.tolist()))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Vocabulary":
        """Read a vocabulary written by `save` (ids follow the line order).

        Raises:
            ValueError: Naming the file and line if a line is not `word<TAB>count`;
                `keras_gauss.inputs.InputFileError` (a `ValueError`) if it is
                not a regular file (a FIFO is never opened) or not UTF-8 text.
        """
        words, counts = [], []
        for n, line in enumerate(io.StringIO(read_text(path), newline=None), 1):
            word, tab, count = line.rstrip("\n").rpartition("\t")
            if not tab or not word or not count.isdigit():
                raise ValueError(f"{path}:{n}: expected 'word<TAB>count', got {line!r}")
            words.append(word)
            counts.append(int(count))
        return cls(words, counts)


def _chunk_counts(lines: tf.Tensor, tokenizer: Tokenizer) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    words, _, counts = tf.unique_with_counts(tokenizer(lines).flat_values)
    # An order-free fingerprint of the lines read (40-bit hashes, summed).
    digest = tf.reduce_sum(tf.strings.to_hash_bucket_fast(lines, 1 << 40))
    return words, counts, tf.size(lines), digest


class CorpusCount(NamedTuple):
    """What one counting pass read.

    Attributes:
        counts: `{word: count}` of every token (before `min_count`).
        lines: Lines read (a line of more than `sources.MAX_LINE_WORDS` words
            counts as the lines it is read as).
        digest: Order-free fingerprint of those lines (the sum of their
            40-bit FarmHash fingerprints, `tf.strings.to_hash_bucket_fast`,
            modulo `2**64`): equal for equal sets of lines.
    """

    counts: collections.Counter
    lines: int
    digest: int


def count_corpus(corpus: Corpus = None, tokenizer: Tokenizer = tokenize, chunk_lines: int = 1024) -> CorpusCount:
    """Count the words and lines of a corpus in one streaming pass.

    Counting is done per chunk of lines inside `tf.data` (`tf.unique_with_counts`)
    and merged in Python, so memory grows with the number of distinct words only.

    Args:
        corpus: Corpus specification (see `keras_gauss.pipelines.load_corpus`)
            or a dataset of lines (e.g. one process's shard).
        tokenizer: Tokenizer, the same one the training pipeline will use.
        chunk_lines: Lines tokenized together.

    Returns:
        A `CorpusCount`.

    Example:
        >>> count = count_corpus(tf.data.Dataset.from_tensor_slices(["a b a", "b"]))
        >>> sorted(count.counts.items()), count.lines
        ([('a', 2), ('b', 2)], 2)
    """
    counter: collections.Counter = collections.Counter()
    lines = digest = 0
    chunks = cut_long_lines(load_corpus(corpus)).batch(chunk_lines).map(
        lambda lines: _chunk_counts(lines, tokenizer), num_parallel_calls=tf.data.AUTOTUNE
    )
    for words, counts, n, chunk_digest in chunks.prefetch(tf.data.AUTOTUNE).as_numpy_iterator():
        lines += int(n)
        digest += int(chunk_digest)
        for word, count in zip(words.tolist(), counts.tolist()):
            counter[word.decode("utf-8", "replace")] += count
    return CorpusCount(counter, lines, digest % (1 << 64))


def vocabulary_from_counts(
    counts: collections.Counter | dict, min_count: int = 5, max_size: int | None = None, name: str = "the corpus"
) -> Vocabulary:
    """The frequent words of `counts`, sorted by count (descending), ties by word.

    Args:
        counts: `{word: count}` (e.g. `count_corpus`'s, or the sum of
            several processes' counts of their shards).
        min_count: Drop words seen fewer times.
        max_size: Keep at most this many words (the most frequent); `None` for no limit.
        name: The corpus, for the errors.

    Raises:
        ValueError: If there are no tokens, or no word reaches `min_count`.

    Example:
        >>> vocabulary_from_counts({"a": 3, "b": 5, "c": 1}, min_count=2).words
        ('b', 'a')
    """
    if not counts:
        raise ValueError(f"corpus {name} contains no tokens")
    ranked = sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))
    kept = [wc for wc in ranked if wc[1] >= min_count][:max_size]
    if not kept:
        word, count = ranked[0]
        raise ValueError(
            f"vocabulary of corpus {name} is empty after min_count={min_count} "
            f"(most frequent word {word!r} occurs {count} times)"
        )
    words, counts = zip(*kept)
    return Vocabulary(words, counts)


def build_vocabulary(
    corpus: Corpus = None,
    min_count: int = 5,
    max_size: int | None = None,
    tokenizer: Tokenizer = tokenize,
    chunk_lines: int = 1024,
) -> Vocabulary:
    """Count the words of a corpus in one streaming pass and keep the frequent ones.

    `count_corpus`, then `vocabulary_from_counts`.

    Args:
        corpus: Corpus specification (see `keras_gauss.pipelines.load_corpus`); default WordNet glosses.
        min_count: Drop words seen fewer times.
        max_size: Keep at most this many words (the most frequent); `None` for no limit.
        tokenizer: Tokenizer, the same one the training pipeline will use.
        chunk_lines: Lines tokenized together.

    Returns:
        A `Vocabulary` sorted by count (descending), ties by word.

    Raises:
        ValueError: If the corpus has no tokens, or no word reaches `min_count`.

    Example:
        >>> with open("news.txt", "w") as f:
        ...     _ = f.write("The cat sat.\\nThe dog sat on the cat.\\n")
        >>> vocab = build_vocabulary("news.txt", min_count=2)
        >>> vocab.words, vocab.counts.tolist()
        (('the', 'cat', 'sat'), [3, 2, 2])
        >>> vocab.save("news.vocab.tsv")
    """
    counts = count_corpus(corpus, tokenizer, chunk_lines).counts
    return vocabulary_from_counts(counts, min_count, max_size, describe_corpus(corpus))
