"""Skip-gram training examples with negative sampling, as a streaming `tf.data` pipeline.

The corpus is read line by line and processed in chunks of lines; each chunk
is turned into (word, context, negatives) examples by vectorised tensor ops
(no per-pair Python), shuffled within the chunk and cut into batches:

1. tokenize, map to ids, drop out-of-vocabulary tokens;
2. subsample frequent words (word2vec's rule, before windowing, as word2vec and gensim do);
3. pair every token with the tokens up to `window` positions before and
   after it in the same line (with `dynamic_window`, up to a distance `b`
   drawn uniformly from `1..window` per centre token, like word2vec's reduced window);
4. draw `negatives` words per pair from the unigram distribution raised to
   0.75 (word2vec's table trick: a precomputed table indexed by uniform ints).
   Negatives are not checked against the positive context.

Only a shuffle buffer of lines and a few chunks are ever held in memory, so the
corpus may be larger than RAM. A line of more than `MAX_LINE_WORDS` (10,000)
words, as in a corpus of one line such as text8, is read as lines of that
many words, as gensim's `LineSentence` reads it (`sources.cut_long_lines`):
a chunk's pairs stay a few hundred MB at most.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from .sampling import keep_probabilities  # noqa: F401 - re-exported
from .sources import Corpus, cut_long_lines, load_corpus
from .tokens import tokenize
from .vocabulary import Tokenizer, Vocabulary

__all__ = [
    "EpochSize",
    "epoch_size",
    "keep_probabilities",
    "make_skipgram_dataset",
    "negative_table",
    "skipgram_pairs",
]


def negative_table(counts: np.ndarray, size: int = 1_000_000, power: float = 0.75) -> np.ndarray:
    """word2vec's negative-sampling table: ids laid out by quantiles of `counts ** power`.

    A uniform random index into the table draws word `i` with probability
    `counts[i] ** power / sum(counts ** power)` up to `1 / size`
    (words rarer than that may never be drawn).

    Args:
        counts: Corpus count of every word.
        size: Table length.
        power: Exponent of the unigram distribution.

    Returns:
        An int32 array of `size` word ids, sorted.

    Example:
        >>> np.bincount(negative_table(np.array([16, 1]), size=9)).tolist()
        [8, 1]
    """
    weights = np.asarray(counts, dtype=np.float64) ** power
    cdf = np.cumsum(weights) / weights.sum()
    ids = np.searchsorted(cdf, (np.arange(size) + 0.5) / size, side="right")
    return np.minimum(ids, len(cdf) - 1).astype(np.int32)


def skipgram_pairs(
    ids: tf.RaggedTensor, window: int, dynamic_window: bool = False, seed: tf.Tensor | tuple[int, int] = (0, 0)
) -> tuple[tf.Tensor, tf.Tensor]:
    """All (centre word, context word) pairs of a ragged batch of id sequences.

    Pairs never cross rows. Fully vectorised: one mask, `where` and two
    `gather` per offset `1..window` on the flat values. The pairs come out
    grouped by offset, not shuffled.

    Args:
        ids: `[lines, None]` ragged int tensor of token ids.
        window: Maximal distance between the two words of a pair.
        dynamic_window: Draw an effective window `b` uniformly from
            `1..window` for every centre token (word2vec's reduced window).
        seed: Stateless seed, shape `[2]`, used by `dynamic_window`.

    Returns:
        `(word, context)`: two 1-D tensors of `ids.dtype`.

    Example:
        >>> w, c = skipgram_pairs(tf.ragged.constant([[1, 2, 3]]), window=1)
        >>> sorted(zip(w.numpy().tolist(), c.numpy().tolist()))
        [(1, 2), (2, 1), (2, 3), (3, 2)]
    """
    values, rows = ids.flat_values, ids.value_rowids()
    reach = None
    if dynamic_window:
        reach = tf.random.stateless_uniform(tf.shape(values), seed, 1, window + 1, dtype=tf.int32)
    words, contexts = [], []
    for offset in range(1, window + 1):
        same_row = tf.equal(rows[:-offset], rows[offset:])
        left, right = values[:-offset], values[offset:]
        if reach is None:  # pair (i, i + offset) in both directions
            i = tf.where(same_row)[:, 0]
            forward = backward = (tf.gather(left, i), tf.gather(right, i))
        else:  # each direction needs the reach of its own centre
            f = tf.where(same_row & (reach[:-offset] >= offset))[:, 0]
            b = tf.where(same_row & (reach[offset:] >= offset))[:, 0]
            forward, backward = (tf.gather(left, f), tf.gather(right, f)), (tf.gather(left, b), tf.gather(right, b))
        words += [forward[0], backward[1]]
        contexts += [forward[1], backward[0]]
    return tf.concat(words, 0), tf.concat(contexts, 0)


def token_ids(lines: tf.Tensor, vocab: Vocabulary, tokenizer: Tokenizer) -> tf.RaggedTensor:
    """The in-vocabulary ids of `lines` (unknown tokens dropped), one row a line."""
    ids = vocab.lookup(tokenizer(lines))
    # The unknown ids (-1) are dropped from the flat values and each row split
    # moves back by the number dropped before it: about half the CPU time of
    # `tf.ragged.boolean_mask` (0.03 against 0.055 CPU-s for news2017).
    known = ids.flat_values >= 0
    kept_before = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(tf.cast(known, tf.int64))], 0)
    return tf.RaggedTensor.from_row_splits(
        tf.boolean_mask(ids.flat_values, known),
        tf.gather(kept_before, tf.cast(ids.row_splits, tf.int64)), validate=False)


class EpochSize(NamedTuple):
    """Size of one epoch of `make_skipgram_dataset`.

    Attributes:
        tokens: In-vocabulary tokens kept (expected value under subsampling).
        pairs: (word, context) pairs; exact without subsampling, otherwise the
            estimate of `keras_gauss.layers.skipgram_sampler.line_pairs`.
    """

    tokens: int
    pairs: int

    def steps(self, batch_size: int) -> int:
        """Number of batches of `batch_size` pairs (the last one may be partial)."""
        return math.ceil(self.pairs / batch_size)


def epoch_size(
    corpus: Corpus,
    vocab: Vocabulary,
    window: int = 5,
    dynamic_window: bool = False,
    sample: float = 0.0,
    tokenizer: Tokenizer = tokenize,
    chunk_lines: int = 1024,
) -> EpochSize:
    """Count tokens and pairs of one epoch with one tokenizing pass over the corpus.

    With `dynamic_window` the count is the exact expectation; with subsampling
    it is an approximation (`keras_gauss.layers.skipgram_sampler.line_pairs`).

    Args:
        corpus, vocab, window, dynamic_window, sample, tokenizer: As for
            `make_skipgram_dataset`.
        chunk_lines: Lines tokenized together.

    Returns:
        An `EpochSize`; `.steps(batch_size)` gives `steps_per_epoch`.

    Example:
        >>> with open("news.txt", "w") as f:
        ...     _ = f.write("a b c\\n")
        >>> vocab = Vocabulary(["a", "b", "c"], [1, 1, 1])
        >>> size = epoch_size("news.txt", vocab, window=1, dynamic_window=False, sample=0)
        >>> size.steps(batch_size=3)  # 4 pairs: a-b, b-a, b-c, c-b
        2
    """
    from keras_gauss.layers.skipgram_sampler import line_pairs

    keep = tf.constant(keep_probabilities(vocab.counts, sample), tf.float64)

    def kept_lengths(lines):  # each line's expected kept tokens, and P(none kept)
        kept = tf.gather(keep, token_ids(lines, vocab, tokenizer))
        return tf.reduce_sum(kept, axis=1), tf.exp(tf.reduce_sum(tf.math.log1p(-kept), axis=1))

    lengths = cut_long_lines(load_corpus(corpus)).batch(chunk_lines).map(
        kept_lengths, num_parallel_calls=tf.data.AUTOTUNE)
    tokens = pairs = 0.0
    for chunk, none_kept in lengths.prefetch(tf.data.AUTOTUNE).as_numpy_iterator():
        tokens += chunk.sum()
        pairs += line_pairs(chunk, none_kept, window, dynamic_window).sum()
    return EpochSize(round(tokens), round(pairs))


def make_skipgram_dataset(
    corpus: Corpus,
    vocab: Vocabulary,
    window: int = 5,
    dynamic_window: bool = False,
    negatives: int = 1,
    sample: float = 1e-3,
    batch_size: int = 1024,
    shuffle_buffer: int = 10_000,
    seed: int | None = None,
    tokenizer: Tokenizer = tokenize,
    chunk_lines: int = 64,
    table_size: int = 1_000_000,
) -> tf.data.Dataset:
    """Stream `(x, y)` skip-gram batches with negative sampling for `model.fit`.

    `x` is ``{"word": int32 (batch,), "context": int32 (batch,),
    "negatives": int32 (batch, negatives)}` and `y`` is float32
    `(batch, 1 + negatives)` ranking labels `[1, 0, ..., 0]` (positive
    context first). Every iteration (epoch) reshuffles and redraws
    subsampling, windows and negatives; with a `seed` the sequence of epochs
    is reproducible.

    Shuffling is two-level: lines go through a shuffle buffer of
    `shuffle_buffer` lines, then all pairs of a chunk of `chunk_lines`
    lines are randomly permuted before batching.

    Args:
        corpus: Corpus specification (see `keras_gauss.pipelines.load_corpus`) or dataset of lines.
        vocab: Vocabulary; out-of-vocabulary tokens are dropped before windowing.
        window: Maximal distance between a word and its context.
        dynamic_window: Per centre token, use a window drawn from `1..window`.
        negatives: Negative samples per pair (>= 1), from unigram ** 0.75.
        sample: Subsampling threshold of frequent words (word2vec's `-sample`); 0 disables.
        batch_size: Pairs per batch; the last batch of an epoch may be smaller.
        shuffle_buffer: Lines in the shuffle buffer; 0 keeps the corpus order.
        seed: Seed making the stream reproducible; `None` for a random one.
        tokenizer: Tokenizer; must be the one the vocabulary was built with.
        chunk_lines: Lines turned into pairs (and shuffled) together. A chunk
            holds about `2 * window * tokens` pairs of 20 bytes (with one
            negative) a few times over; chunks of ~10^4-10^5 tokens are fastest
            (64 lines of news articles: 35k tokens, 350k pairs).
        table_size: Length of the negative-sampling table (see `negative_table`).

    Returns:
        A `tf.data.Dataset` of `(x, y)` batches, prefetched.

    Raises:
        ValueError: For `window < 1`, `negatives < 1` or an empty vocabulary.

    Example:
        >>> from keras_gauss.pipelines.vocabulary import build_vocabulary
        >>> with open("news.txt", "w") as f:
        ...     _ = f.write("the cat sat on the mat\\nthe dog sat on the log\\n" * 20)
        >>> vocab = build_vocabulary("news.txt", min_count=1)
        >>> ds = make_skipgram_dataset("news.txt", vocab, window=5, seed=0, batch_size=16,
        ...                            sample=0)  # a tiny corpus: no subsampling
        >>> x, y = next(iter(ds))
        >>> tuple(x["word"].shape), tuple(x["negatives"].shape), y[0].numpy().tolist()
        ((16,), (16, 1), [1.0, 0.0])
    """
    if window < 1 or negatives < 1:
        raise ValueError(f"window and negatives must be >= 1, got window={window}, negatives={negatives}")
    if len(vocab) == 0:
        raise ValueError("empty vocabulary")
    examples = _examples_function(_Same(vocab), _Same(tokenizer), window, dynamic_window,
                                  negatives, sample, table_size)
    lines = cut_long_lines(load_corpus(corpus))
    if shuffle_buffer:
        lines = lines.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    chunk_seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
    return (
        tf.data.Dataset.zip(lines.batch(chunk_lines), chunk_seeds)
        .map(examples, num_parallel_calls=tf.data.AUTOTUNE)
        .rebatch(batch_size)
        .prefetch(tf.data.AUTOTUNE)
    )


class _Same:
    """A key that is equal for the same object only (`_examples_function`'s cache)."""

    __slots__ = ("item",)

    def __init__(self, item):
        self.item = item

    def __hash__(self):
        return id(self.item)

    def __eq__(self, other):
        return isinstance(other, _Same) and other.item is self.item


@functools.lru_cache(maxsize=4)
def _examples_function(vocab, tokenizer, window, dynamic_window, negatives, sample, table_size):
    """`make_skipgram_dataset`'s step from a chunk of lines and its seed to its
    shuffled examples, traced once a process for each vocabulary (`_Same`) and
    settings, not once each dataset built: the keras engine builds one an epoch."""
    vocab, tokenizer = vocab.item, tokenizer.item
    keep = tf.constant(keep_probabilities(vocab.counts, sample), tf.float32)
    table = tf.constant(negative_table(vocab.counts, table_size))
    label = tf.constant([[1.0] + [0.0] * negatives])

    def examples(lines, chunk_seed):
        seeds = tf.random.split(tf.stack([chunk_seed, tf.constant(0, tf.int64)]), 4)
        ids = token_ids(lines, vocab, tokenizer)
        if sample > 0:
            draw = tf.random.stateless_uniform(tf.shape(ids.flat_values), seeds[0])
            ids = tf.ragged.boolean_mask(ids, ids.with_flat_values(draw < tf.gather(keep, ids.flat_values)))
        word, context = skipgram_pairs(ids, window, dynamic_window, seeds[1])
        n = tf.shape(word)[0]
        order = tf.random.experimental.stateless_shuffle(tf.range(n), seeds[2])
        slots = tf.random.stateless_uniform([n, negatives], seeds[3], 0, table_size, dtype=tf.int32)
        x = {"word": tf.gather(word, order), "context": tf.gather(context, order), "negatives": tf.gather(table, slots)}
        return x, tf.tile(label, [n, 1])

    return tf.function(examples, input_signature=[tf.TensorSpec([None], tf.string),
                                                  tf.TensorSpec([], tf.int64)],
                       autograph=False)
