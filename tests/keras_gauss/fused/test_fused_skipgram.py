"""Skip-gram training from token ids (the C++ op): its draws are the documented
formulas (an independent Python implementation), its steps the `keras.ops`
reference's on those triples."""

import numpy as np
import pytest
import tensorflow as tf

from keras_gauss.fused import alias_table
from keras_gauss.fused import fused_available
from keras_gauss.fused import skipgram_train
from keras_gauss.fused import skipgram_triples

VOCAB = 30
BOUNDS = dict(max_norm=0.3, min_variance=0.6, max_variance=1.4)

needs_op = pytest.mark.skipif(not fused_available(), reason="the fused op did not build")


def _chunk(seed=1):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, VOCAB, 200).astype("int32")
    # Empty, one-token and long sentences.
    splits = np.array([0, 3, 3, 50, 51, 120, 200], "int64")
    probs, alias = alias_table(rng.random(VOCAB) ** 2)
    keep = rng.random(VOCAB).astype("float32")
    return tokens, splits, probs, alias, keep


def _variables(dim=6, spherical=False, shared=False, seed=0, inside=False):
    # By default initial values partly outside the bounds: the rows that get
    # a gradient must be projected, the others left alone.
    rng = np.random.default_rng(seed)
    var_dim = 1 if spherical else dim
    low, high = (0.7, 1.3) if inside else (0.5, 1.5)
    scale = 0.1 if inside else 0.2
    tables = []
    for _ in range(1 if shared else 2):
        tables += [tf.Variable(rng.uniform(-scale, scale, (VOCAB, dim)).astype("float32")),
                   tf.Variable(rng.uniform(low, high, (VOCAB, var_dim)).astype("float32"))]
    accumulators = [tf.Variable(tf.fill(t.shape, 1e-6)) for t in tables]
    if shared:
        return tables * 2, accumulators * 2
    return tables, accumulators


def _values(tables, accumulators):
    seen = []
    for v in tables + accumulators:
        if not any(v is s for s in seen):
            seen.append(v)
    return [v.numpy() for v in seen]


def _python_triples(tokens, splits, window, dynamic_window, negatives, keep, probs, alias,
                    seed, shuffle=False):
    """An independent implementation of the documented random draws."""
    mask = (1 << 64) - 1
    golden = 0x9E3779B97F4A7C15

    def mix(z):
        z &= mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    out = []
    for s in range(len(splits) - 1):
        key = mix(seed + golden * (s + 1))
        sentence = tokens[splits[s]:splits[s + 1]]
        kept = [(p, int(t)) for p, t in enumerate(sentence)
                if keep is None or np.float32((mix(key + golden * (4 * p + 1)) >> 40) / 2**24)
                < keep[t]]
        for q, (p, word) in enumerate(kept):
            reach = window
            if dynamic_window:
                reach = 1 + (mix(key + golden * (4 * p + 2)) >> 33) % window
            base = mix(key + golden * (4 * p + 3))
            for j in range(max(0, q - reach), min(len(kept), q + reach + 1)):
                if j == q:
                    continue
                negs = []
                for m in range(negatives):
                    u = mix(base + golden * (kept[j][0] * negatives + m + 1))
                    i = ((u >> 32) * len(probs)) >> 32
                    negs.append(i if ((u >> 8) & 0xFFFFFF) / 2**24 < probs[i] else alias[i])
                out.append((word, kept[j][1], tuple(negs)))
    if shuffle:
        base = mix(seed ^ 0xD1B54A32D192ED03)
        keys = [(mix(base + golden * (i + 1)) >> 1, i) for i in range(len(out))]
        out = [out[i] for _, i in sorted(keys)]
    return out


def test_alias_table_reproduces_the_distribution():
    weights = np.array([5.0, 0.0, 1.0, 2.5, 0.25])
    probs, alias = alias_table(weights)
    n = len(weights)
    exact = np.zeros(n)
    for i in range(n):
        exact[i] += probs[i] / n
        exact[alias[i]] += (1 - probs[i]) / n
    np.testing.assert_allclose(exact, weights / weights.sum(), atol=1e-7)
    with pytest.raises(ValueError, match="non-negative"):
        alias_table([1.0, -1.0])
    with pytest.raises(ValueError, match="not all zero"):
        alias_table([0.0, 0.0])


@needs_op
@pytest.mark.parametrize(
    "settings",
    [dict(window=5, dynamic_window=True, negatives=1, subsample=False),
     dict(window=3, dynamic_window=True, negatives=2, subsample=True),
     dict(window=2, dynamic_window=False, negatives=3, subsample=True),
     dict(window=4, dynamic_window=True, negatives=1, subsample=True, shuffle=True)],
)
def test_triples_follow_the_documented_draws(settings):
    tokens, splits, probs, alias, keep = _chunk()
    settings = dict(settings)  # parametrize shares the dict between runs
    keep = keep if settings.pop("subsample") else None
    word, context, negs = skipgram_triples(tokens, splits, 11, probs, alias, keep=keep,
                                           **settings)
    expected = _python_triples(tokens, splits, settings["window"],
                               settings["dynamic_window"], settings["negatives"], keep,
                               probs, alias, 11, settings.get("shuffle", False))
    got = list(zip(word.numpy().tolist(), context.numpy().tolist(),
                   map(tuple, negs.numpy().tolist())))
    assert got == expected
    assert len(got) > 100


@needs_op
def test_triples_statistics():
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, 8, 20_000).astype("int32")
    splits = np.array([0, 20_000], "int64")
    weights = np.arange(1.0, 9.0)
    probs, alias = alias_table(weights)
    word, context, negs = skipgram_triples(tokens, splits, 5, probs, alias, window=5,
                                           negatives=2)
    # Reduced window: 2 * (1 + 2 + 3 + 4 + 5) / 5 = 6 pairs per token.
    assert abs(len(word) / 20_000 - 6.0) < 0.1
    freq = np.bincount(negs.numpy().ravel(), minlength=8) / negs.numpy().size
    np.testing.assert_allclose(freq, weights / weights.sum(), atol=0.01)
    # Subsampling keeps about keep * count occurrences.
    keep = np.full(8, 0.25, "float32")
    w, _, _ = skipgram_triples(tokens, splits, 5, probs, alias, keep=keep, window=1,
                               dynamic_window=False)
    assert abs(len(w) / (2 * 20_000 * 0.25) - 1) < 0.05


def reference_training(values, accumulators, triples, batch_size, learning_rate, margin,
                       energy="el", **bounds):
    """`skipgram_train` on `triples` by the `keras.ops` reference: each
    `batch_size` of them one ranking step (`test_fused_pair_step._reference`,
    the word on the general side of every candidate). Returns `(summed loss,
    tables, accumulators)`."""
    from test_fused_pair_step import _reference

    total, n = 0.0, len(values)
    for i in range(0, len(triples), batch_size):
        batch = triples[i:i + batch_size]
        word = np.array([t[0] for t in batch], "int32")
        candidates = np.array([(t[1], *t[2]) for t in batch], "int32")
        general = np.repeat(word[:, None], candidates.shape[1], 1)
        loss, after = _reference(values, accumulators, general, candidates, learning_rate,
                                 margin, energy=energy, **bounds)
        values, accumulators = after[:n], after[n:]
        total += loss * len(batch)
    return total, values, accumulators


@needs_op
@pytest.mark.parametrize("energy", ["el", "kl"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_equals_the_keras_ops_reference_on_the_documented_draws(energy, shuffle):
    # Rows start inside the bounds, where the reference's projection of the
    # rows without gradient changes nothing (the op skips them).
    tokens, splits, probs, alias, keep = _chunk(2)
    tables, accumulators = _variables(inside=True)
    values, accs = _values(tables, accumulators)[:4], _values(tables, accumulators)[4:]
    loss, pairs = skipgram_train(tables, accumulators, tokens, splits, 5, 0.3, probs, alias,
                                 keep=keep, window=2, batch_size=4, num_threads=1,
                                 margin=0.5, energy=energy, shuffle=shuffle, **BOUNDS)
    triples = _python_triples(tokens, splits, 2, True, 1, keep, probs, alias, 5, shuffle)
    total, ref_values, ref_accs = reference_training(values, accs, triples, 4, 0.3, 0.5,
                                                     energy, **BOUNDS)
    assert int(pairs) == len(triples) > 100
    np.testing.assert_allclose(float(loss), total, rtol=1e-5)
    for a, b in zip(_values(tables, accumulators), ref_values + ref_accs):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    # The bounds hold on every row that was in a batch.
    means, variances = tables[0].numpy(), tables[1].numpy()
    seen = np.unique([t[0] for t in triples])
    assert (np.linalg.norm(means[seen], axis=1) <= 0.3 + 1e-6).all()
    assert ((variances[seen] >= 0.6) & (variances[seen] <= 1.4)).all()


@needs_op
def test_threads_train_and_learn():
    rng = np.random.default_rng(0)
    # Two "topics": words 0-9 and 10-19 never share a sentence.
    sentences = [rng.integers(0, 10, 30) + 10 * (i % 2) for i in range(400)]
    tokens = np.concatenate(sentences).astype("int32")
    splits = np.arange(0, len(tokens) + 1, 30).astype("int64")
    probs, alias = alias_table(np.ones(VOCAB))
    tables, accumulators = _variables(dim=8)

    def epoch(seed, learning_rate):
        # Two Hogwild threads on 20 rows collide all the time: lost
        # accumulator updates keep the steps large, and without the norm
        # bound the means can drift away (the loss then jumps now and then).
        loss, pairs = skipgram_train(tables, accumulators, tokens, splits, seed, learning_rate,
                                     probs, alias, window=3, num_threads=2, margin=1.0,
                                     max_norm=2.0)
        return float(loss) / int(pairs)

    before = epoch(99, 0.0)  # learning rate 0: the loss of the starting tables
    for seed in range(5):
        epoch(seed, 0.2)
    after = epoch(99, 0.0)
    assert after < 0.5 * before  # (60 runs: at most 0.33)
    means = tables[0].numpy()
    assert np.isfinite(means).all()
    unit = means / np.linalg.norm(means, axis=1, keepdims=True)
    same = np.mean(unit[:10] @ unit[:10].T)
    other = np.mean(unit[:10] @ unit[10:20].T)
    assert same > other + 0.5  # (60 runs: at least 1.5)


@needs_op
def test_bad_chunks_raise_clear_errors():
    tokens, splits, probs, alias, _ = _chunk()
    tables, accumulators = _variables()

    def train(**overrides):
        args = dict(tokens=tokens, row_splits=splits, negative_probs=probs,
                    negative_alias=alias)
        args.update(overrides)
        return skipgram_train(tables, accumulators, seed=0, learning_rate=0.1, **args)

    bad_tokens = tokens.copy()
    bad_tokens[5] = VOCAB
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match="tokens"):
        train(tokens=bad_tokens)
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match="row_splits|splits"):
        train(row_splits=np.array([0, 10], "int64"))
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match="keep"):
        train(keep=np.ones(3, "float32"))
    with pytest.raises(ValueError, match="batch_size"):
        train(batch_size=0)
    with pytest.raises(ValueError, match="energy"):
        skipgram_train(tables, accumulators, tokens, splits, 0, 0.1, probs, alias,
                       energy="cosine")
