"""Skip-gram training from token ids in one op, fused in C++ or in plain TensorFlow.

`skipgram_train` takes a chunk of sentences as token ids and does, in one
call, what a skip-gram input pipeline and `ranking_step` do together:
word2vec's subsampling of frequent words, (word, context) pairs within a
(reduced) window, negatives from a unigram^0.75 distribution (Walker's alias
method), and max-margin ranking steps on minibatches of `batch_size` pairs
with AdaGrad and the row constraints, updating the tables in place.

Random numbers are counter-based (splitmix64's mixer on the seed, the
sentence index and token positions; the formulas are in `skipgram.cc`), so
the pure TensorFlow implementation draws exactly the triples the C++ kernel
draws. With `num_threads=1` the two give the same tables up to float
rounding; with more threads the C++ kernel splits the sentences into blocks
(8 per thread, taken in turn) trained concurrently without locks (Hogwild,
as word2vec and gensim do), so results then vary slightly from run to run.
`skipgram_triples` returns the triples themselves, in training order.

The pure TensorFlow path is exact but slow (one `ranking_step` per
minibatch); it is the fallback when the C++ op cannot be built.
"""

import numpy as np
import tensorflow as tf

from keras_gauss.fused import build as _build
from keras_gauss.fused.sampling import alias_table  # noqa: F401 - re-exported
from keras_gauss.fused.step import _check_settings
from keras_gauss.fused.step import _inputs
from keras_gauss.fused.step import _pair
from keras_gauss.fused.step import _resolve_use_fused
from keras_gauss.fused.step import _spherical
from keras_gauss.fused.step import _tf_step
from keras_gauss.fused.step import int32_ids
from keras_gauss.layers.candidate_energies import ENERGIES

_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_SHUFFLE_SALT = 0xD1B54A32D192ED03


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
    use_fused=None,
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
        use_fused: True (the C++ op), False (TensorFlow), None (the C++ op
            when available).

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
    if _resolve_use_fused(use_fused):
        return _build.load().keras_gauss_skipgram_triples(
            *_fused_inputs(inputs), window=window, dynamic_window=dynamic_window,
            num_negatives=negatives, shuffle=shuffle,
        )
    return _tf_triples(*inputs, window=window, dynamic_window=dynamic_window,
                       negatives=negatives, shuffle=shuffle)


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
    use_fused=None,
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
        num_threads: C++ threads (0: TensorFlow's intra-op pool size); the
            TensorFlow path is always sequential (= 1 thread).
        margin: hinge margin.
        epsilon: AdaGrad's epsilon.
        max_norm: `C` (number, `(word, context)` pair or None).
        min_variance: `m` (number, pair or None).
        max_variance: `M` (number, pair or None).
        energy: `"el"` or `"kl"` (`E = -KL(N_context || N_word)`).
        use_fused: True (the C++ op), False (TensorFlow), None (the C++ op
            when available).
        variance_learning_rate: the variances' learning rate (None:
            `learning_rate`); the C++ op only.

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
    tables, accumulators = _inputs(tables, accumulators)
    inputs = _chunk_inputs(tokens, row_splits, keep, negative_probs, negative_alias, seed)
    bounds = dict(
        max_norm=_pair(max_norm, "max_norm"),
        min_variance=_pair(min_variance, "min_variance"),
        max_variance=_pair(max_variance, "max_variance"),
    )
    _check_settings(learning_rate, margin, epsilon, bounds)
    fused = _resolve_use_fused(use_fused)
    if variance_learning_rate is not None:
        _check_settings(variance_learning_rate, margin, epsilon, bounds)
        if not fused:
            raise ValueError("`variance_learning_rate` needs the C++ op (the TensorFlow "
                             "implementation has one learning rate).")
    if fused:
        inf = float("inf")
        return _build.load().keras_gauss_skipgram_train(
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
            spherical=_spherical(tables),
            variance_learning_rate=-1.0 if variance_learning_rate is None
            else float(variance_learning_rate),
        )
    _spherical(tables)  # validates the shapes
    return _tf_skipgram_train(
        tables, accumulators, inputs, tf.cast(learning_rate, tf.float32),
        tf.cast(margin, tf.float32), tf.cast(epsilon, tf.float32), window=window,
        dynamic_window=dynamic_window, negatives=negatives, batch_size=batch_size,
        shuffle=shuffle, energy=energy, bounds=tuple(sorted(bounds.items())))


# --------------------------------------------------------------------------- TensorFlow


def _u64(value):
    return tf.constant(value, tf.uint64)


def _mix(z):
    z = tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _u64(30))) * _u64(_MIX1)
    z = tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _u64(27))) * _u64(_MIX2)
    return tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _u64(31)))


def _uniform24(u, shift):
    """float32 in [0, 1) from 24 bits of `u` (exactly as the C++ kernel)."""
    bits = tf.bitwise.bitwise_and(tf.bitwise.right_shift(u, _u64(shift)), _u64(0xFFFFFF))
    return tf.cast(tf.cast(bits, tf.int64), tf.float32) * (1.0 / 16777216.0)


@tf.function(reduce_retracing=True)
def _tf_skipgram_train(tables, accumulators, inputs, learning_rate, margin, epsilon,
                       window, dynamic_window, negatives, batch_size, shuffle, energy,
                       bounds):
    """The pure TensorFlow `skipgram_train`, in one graph (sequential)."""
    rows = min(int(tables[0].shape[0]), int(tables[2].shape[0]))
    tokens, splits, keep, _, alias, _ = inputs
    checks = _check_chunk(tokens, splits, keep, alias, rows, int(tables[0].shape[0]),
                          int(tables[2].shape[0]))
    with tf.control_dependencies(checks):
        word, context, negs = _tf_triples(*inputs, window=window,
                                          dynamic_window=dynamic_window, negatives=negatives,
                                          shuffle=shuffle)
    return _tf_train(tables, accumulators, word, context, negs, batch_size,
                     learning_rate, margin, epsilon, energy, dict(bounds))


def _check_chunk(tokens, splits, keep, alias, rows, keep_rows, context_rows):
    def in_range(ids, n, name):
        message = f"skipgram_train: `{name}` ids must lie in [0, {n})."
        return [tf.debugging.assert_non_negative(ids, message=message),
                tf.debugging.assert_less(ids, tf.cast(n, ids.dtype), message=message)]

    checks = in_range(tokens, rows, "tokens") + in_range(alias, context_rows, "negative_alias")
    n = tf.size(tokens, out_type=tf.int64)
    checks.append(tf.debugging.Assert(
        tf.logical_and(tf.equal(splits[0], 0), tf.equal(splits[-1], n)),
        ["skipgram_train: `row_splits` must start at 0 and end at the number of tokens",
         n, "got", splits[0], splits[-1]]))
    checks.append(tf.debugging.assert_non_negative(
        splits[1:] - splits[:-1], message="skipgram_train: `row_splits` must be non-decreasing"))
    if keep is not None:
        checks.append(tf.debugging.assert_equal(
            tf.size(keep), keep_rows,
            message=f"skipgram_train: `keep` must have {keep_rows} values (one per word)"))
    return checks


def _tf_triples(tokens, row_splits, keep, probs, alias, seed, window, dynamic_window,
                negatives, shuffle=False):
    tokens, row_splits, probs, alias = (tf.reshape(x, [-1])
                                        for x in (tokens, row_splits, probs, alias))
    subsample = keep is not None
    ragged = tf.RaggedTensor.from_row_splits(tokens, row_splits, validate=False)
    sentence = tf.cast(ragged.value_rowids(), tf.uint64)
    position = tf.range(tf.size(tokens, out_type=tf.int64)) - tf.gather(
        row_splits, ragged.value_rowids())
    position = tf.cast(position, tf.uint64)
    golden = _u64(_GOLDEN)
    key = _mix(tf.cast(seed, tf.uint64) + golden * (sentence + _u64(1)))
    ids, pos, sent = tokens, position, ragged.value_rowids()
    if subsample:
        keep = tf.reshape(keep, [-1])
        u = _mix(key + golden * (_u64(4) * position + _u64(1)))
        kept = tf.cast(tf.cast(tf.bitwise.right_shift(u, _u64(40)), tf.int64),
                       tf.float32) * (1.0 / 16777216.0) < tf.gather(keep, tokens)
        ids, pos, sent, key = (tf.boolean_mask(x, kept) for x in (ids, pos, sent, key))
    n = tf.shape(ids, out_type=tf.int64)[0]
    if dynamic_window:
        u = _mix(key + golden * (_u64(4) * pos + _u64(2)))
        reach = 1 + tf.math.floormod(
            tf.cast(tf.bitwise.right_shift(u, _u64(33)), tf.int64), window)
    else:
        reach = tf.fill([n], tf.constant(window, tf.int64))
    base = _mix(key + golden * (_u64(4) * pos + _u64(3)))
    offsets = tf.constant([o for o in range(-window, window + 1) if o != 0], tf.int64)
    centre = tf.range(n)[:, None]
    other = centre + offsets[None, :]
    inside = (other >= 0) & (other < n)
    safe = tf.where(inside, other, 0)
    valid = inside & (tf.gather(sent, safe) == sent[:, None]) & (
        tf.abs(offsets)[None, :] <= reach[:, None])
    valid = tf.ensure_shape(valid, [None, 2 * window])
    other = tf.ensure_shape(other, [None, 2 * window])
    centre = tf.boolean_mask(tf.broadcast_to(centre, tf.shape(other)), valid)
    other = tf.boolean_mask(other, valid)
    word, context = tf.gather(ids, centre), tf.gather(ids, other)
    counter = tf.gather(pos, other) * _u64(negatives)
    draws = _mix(tf.gather(base, centre)[:, None]
                 + golden * (counter[:, None] + tf.cast(tf.range(1, negatives + 1, dtype=tf.int64), tf.uint64)))
    outcomes = tf.cast(tf.size(probs), tf.uint64)
    slot = tf.bitwise.right_shift(tf.bitwise.right_shift(draws, _u64(32)) * outcomes, _u64(32))
    slot = tf.cast(slot, tf.int64)
    negs = tf.where(_uniform24(draws, 8) < tf.gather(probs, slot),
                    tf.cast(slot, tf.int32), tf.gather(alias, slot))
    if shuffle:
        base = _mix(tf.bitwise.bitwise_xor(tf.cast(seed, tf.uint64), _u64(_SHUFFLE_SALT)))
        index = tf.cast(tf.range(1, tf.size(word, out_type=tf.int64) + 1), tf.uint64)
        keys = tf.cast(tf.bitwise.right_shift(_mix(base + golden * index), _u64(1)), tf.int64)
        order = tf.argsort(keys, stable=True)
        word, context, negs = (tf.gather(x, order) for x in (word, context, negs))
    return word, context, negs


def _tf_train(tables, accumulators, word, context, negs, batch_size, learning_rate,
              margin, epsilon, energy, bounds):
    count = tf.shape(word)[0]
    steps = (count + batch_size - 1) // batch_size

    def body(i, total):
        begin = i * batch_size
        end = tf.minimum(begin + batch_size, count)
        loss = _tf_step(tables, accumulators, word[begin:end], context[begin:end],
                        negs[begin:end], learning_rate=learning_rate, margin=margin,
                        epsilon=epsilon, energy=energy, project_all=False, **bounds)
        return i + 1, total + loss * tf.cast(end - begin, tf.float32)

    _, total = tf.while_loop(lambda i, _: i < steps, body,
                             (tf.constant(0), tf.constant(0.0)))
    return total, tf.cast(count, tf.int64)
