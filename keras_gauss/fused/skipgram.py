"""Skip-gram training from token ids in one C++ TensorFlow op.

`skipgram_train` takes a chunk of sentences as token ids and does, in one
call, what a skip-gram input pipeline and `ranking_step` do together:
word2vec's subsampling of frequent words, (word, context) pairs within a
(reduced) window, negatives from a unigram^0.75 distribution (Walker's alias
method), and max-margin ranking steps on minibatches of `batch_size` pairs
with AdaGrad and the row constraints, updating the tables in place.

Random numbers are counter-based (splitmix64's mixer on the seed, the
sentence index and token positions; the formulas are in `skipgram.cc`), so
`skipgram_triples` returns exactly the triples trained, in training order
(the tests check them against an independent Python implementation of the
formulas). With more threads the kernel splits the sentences into blocks (8
per thread, taken in turn) trained concurrently without locks (Hogwild, as
word2vec and gensim do), so results then vary slightly from run to run. The
same kernel runs without TensorFlow in the native trainer
(`keras_gauss.fused.NativeTables`, the `native` engine of `train-corpus`).
"""

import numpy as np
import tensorflow as tf

from keras_gauss.fused.sampling import alias_table  # noqa: F401 - re-exported
from keras_gauss.fused.step import check_step_settings
from keras_gauss.fused.step import check_tables
from keras_gauss.fused.step import setting_pair
from keras_gauss.fused.step import require_op
from keras_gauss.fused.step import is_spherical
from keras_gauss.fused.step import int32_ids
from keras_gauss.layers.candidate_energies import ENERGIES


def _chunk_inputs(tokens, row_splits, keep, negative_probs, negative_alias, seed):
    keep = None if keep is None else tf.convert_to_tensor(keep, tf.float32)
    return (
        int32_ids(tokens, "tokens"),
        tf.convert_to_tensor(row_splits, tf.int64),
        keep,
        tf.convert_to_tensor(negative_probs, tf.float32),
        int32_ids(negative_alias, "negative_alias"),
        tf.cast(seed, tf.int64),
    )


def _fused_inputs(inputs):
    """The chunk inputs with `keep=None` as the empty vector the op expects."""
    tokens, splits, keep, probs, alias, seed = inputs
    if keep is None:
        keep = tf.zeros([0], tf.float32)
    return tokens, splits, keep, probs, alias, seed


def _check_window(window, negatives, batch_size=1):
    for name, value in (("window", window), ("negatives", negatives),
                        ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"`{name}` must be an integer >= 1, got {value!r}.")


def skipgram_triples(
    tokens,
    row_splits,
    seed,
    negative_probs,
    negative_alias,
    keep=None,
    window=5,
    dynamic_window=True,
    negatives=1,
    shuffle=False,
):
    """The (word, context, negatives) triples `skipgram_train` trains on.

    Args:
        tokens: `(N,)` int32 token ids of a chunk of sentences.
        row_splits: `(S + 1,)` int64 sentence boundaries in `tokens`
            (`tf.RaggedTensor.row_splits`).
        seed: int64 scalar; use a different one for every chunk and epoch.
        negative_probs: `(V,)` float32 alias probabilities of the negative
            distribution (`alias_table(counts ** 0.75)`).
        negative_alias: `(V,)` int32 aliases.
        keep: `(V,)` probability of keeping an occurrence of each word
            (subsampling), or None to keep all.
        window: largest distance between a word and its context.
        dynamic_window: draw each centre's reach from `1..window`.
        negatives: negatives per pair.
        shuffle: return them in `skipgram_train(shuffle=True)`'s order with
            one thread (a random permutation).

    Returns:
        `(word (P,), context (P,), negatives (P, negatives))` int32 tensors.

    Example:

    >>> probs, alias = alias_table(np.ones(4))
    >>> w, c, n = skipgram_triples([0, 1, 2, 3], [0, 4], seed=0,
    ...                            negative_probs=probs, negative_alias=alias,
    ...                            window=1, dynamic_window=False)
    >>> w.numpy().tolist(), c.numpy().tolist()
    ([0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2])
    """
    _check_window(window, negatives)
    inputs = _chunk_inputs(tokens, row_splits, keep, negative_probs, negative_alias, seed)
    return require_op().keras_gauss_skipgram_triples(
        *_fused_inputs(inputs), window=window, dynamic_window=dynamic_window,
        num_negatives=negatives, shuffle=shuffle,
    )


def skipgram_train(
    tables,
    accumulators,
    tokens,
    row_splits,
    seed,
    learning_rate,
    negative_probs,
    negative_alias,
    keep=None,
    window=5,
    dynamic_window=True,
    negatives=1,
    batch_size=1,
    shuffle=False,
    num_threads=0,
    margin=1.0,
    epsilon=1e-7,
    max_norm=None,
    min_variance=None,
    max_variance=None,
    energy="el",
    variance_learning_rate=None,
):
    """Trains on every skip-gram pair of a chunk of sentences, in place.

    The triples are those of `skipgram_triples`, in that order; every
    `batch_size` of them make one max-margin ranking step as `ranking_step`
    does it (mean hinge loss, gradients summed per row, AdaGrad, row
    constraints), except that rows whose gradient is zero (all their hinges
    inactive) are not projected again: rows that start inside the bounds
    stay inside, and inactive pairs cost no update. `batch_size=1` is
    per-pair AdaGrad, as in word2gauss.

    Args:
        tables: `(word_means, word_variances, context_means,
            context_variances)` float32 variables (see `ranking_step`).
        accumulators: their 4 AdaGrad accumulators.
        tokens: `(N,)` int32 token ids; every id must be a row of both tables.
        row_splits: `(S + 1,)` int64 sentence boundaries.
        seed: int64 scalar, different for every chunk and epoch.
        learning_rate: AdaGrad learning rate.
        negative_probs: `(V,)` float32 alias probabilities of the negatives.
        negative_alias: `(V,)` int32 aliases.
        keep: `(V,)` keep probabilities (subsampling) or None.
        window: largest distance between a word and its context.
        dynamic_window: word2vec's reduced window.
        negatives: negatives per pair.
        batch_size: pairs per AdaGrad step.
        shuffle: train on the pairs of each thread's share of the chunk in a
            random order (as the `tf.data` pipeline does) instead of
            sentence order; costs a sort and some cache locality.
        num_threads: C++ threads (0: TensorFlow's intra-op pool size).
        margin: hinge margin.
        epsilon: AdaGrad's epsilon.
        max_norm: `C` (number, `(word, context)` pair or None).
        min_variance: `m` (number, pair or None).
        max_variance: `M` (number, pair or None).
        energy: `"el"` or `"kl"` (`E = -KL(N_context || N_word)`).
        variance_learning_rate: the variances' learning rate (None:
            `learning_rate`).

    Returns:
        `(loss, pairs)`: the summed hinge loss (float32) and the number of
        pairs trained (int64).

    Example:

    >>> rng = np.random.default_rng(0)
    >>> def variable(low, high):
    ...     return tf.Variable(rng.uniform(low, high, (5, 2)).astype("float32"))
    >>> tables = [variable(-0.1, 0.1), variable(0.5, 1.0)] * 2  # words, contexts
    >>> tables = [tf.Variable(t) for t in tables]  # four distinct variables
    >>> accumulators = [tf.Variable(tf.zeros((5, 2))) for _ in range(4)]
    >>> probs, alias = alias_table(np.ones(5))  # uniform negatives
    >>> loss, pairs = skipgram_train(tables, accumulators, [0, 1, 2, 3, 4], [0, 5],
    ...                              seed=0, learning_rate=0.2, negative_probs=probs,
    ...                              negative_alias=alias, window=1,
    ...                              dynamic_window=False, batch_size=1)
    >>> int(pairs)  # both neighbours of each word of one 5-word sentence
    8
    """
    if energy not in ENERGIES:
        raise ValueError(f"`energy` must be one of {ENERGIES}, got {energy!r}.")
    _check_window(window, negatives, batch_size)
    if isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer)) \
            or num_threads < 0:
        raise ValueError(f"`num_threads` must be an integer >= 0, got {num_threads!r}.")
    tables, accumulators = check_tables(tables, accumulators)
    inputs = _chunk_inputs(tokens, row_splits, keep, negative_probs, negative_alias, seed)
    bounds = dict(
        max_norm=setting_pair(max_norm, "max_norm"),
        min_variance=setting_pair(min_variance, "min_variance"),
        max_variance=setting_pair(max_variance, "max_variance"),
    )
    check_step_settings(learning_rate, margin, epsilon, bounds)
    if variance_learning_rate is not None:
        check_step_settings(variance_learning_rate, margin, epsilon, bounds)
    inf = float("inf")
    return require_op().keras_gauss_skipgram_train(
        *[v.handle for v in tables],
        *[v.handle for v in accumulators],
        *_fused_inputs(inputs),
        learning_rate=tf.cast(learning_rate, tf.float32),
        margin=tf.cast(margin, tf.float32),
        epsilon=tf.cast(epsilon, tf.float32),
        max_norm=tf.constant(bounds["max_norm"] or (0.0, 0.0), tf.float32),
        min_variance=tf.constant(bounds["min_variance"] or (-inf, -inf), tf.float32),
        max_variance=tf.constant(bounds["max_variance"] or (inf, inf), tf.float32),
        window=window,
        dynamic_window=dynamic_window,
        num_negatives=negatives,
        shuffle=shuffle,
        batch_size=batch_size,
        num_threads=num_threads,
        energy=energy,
        spherical=is_spherical(tables),
        variance_learning_rate=-1.0 if variance_learning_rate is None
        else float(variance_learning_rate),
    )
