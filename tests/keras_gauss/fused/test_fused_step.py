"""The fused ranking step (C++ op) == a `fit` step of the Keras model on the
reference `keras.ops` code."""

import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

import keras_gauss as kg
from keras_gauss.fused import build as fused_build
from keras_gauss.fused import fused_available
from keras_gauss.fused import ranking_step

TOL = dict(rtol=1e-5, atol=1e-5)


def _tables(rng, vocab, dim, spherical, shared):
    var_dim = 1 if spherical else dim
    sides = 1 if shared else 2
    tables, accumulators = [], []
    for _ in range(sides):
        tables += [
            rng.uniform(-1.0, 1.0, (vocab, dim)).astype("float32"),
            rng.uniform(0.2, 2.0, (vocab, var_dim)).astype("float32"),
        ]
        accumulators += [
            rng.uniform(0.0, 0.01, (vocab, dim)).astype("float32"),
            rng.uniform(0.0, 0.01, (vocab, var_dim)).astype("float32"),
        ]
    return tables, accumulators


def _variables(tables, accumulators):
    tables = [tf.Variable(t) for t in tables]
    accumulators = [tf.Variable(a) for a in accumulators]
    if len(tables) == 2:
        return tables * 2, accumulators * 2
    return tables, accumulators


def _batch(rng, vocab, batch, negatives):
    # A small vocabulary makes many ids repeat, within and across roles.
    word = rng.integers(0, vocab, batch).astype("int32")
    context = rng.integers(0, vocab, batch).astype("int32")
    negative = rng.integers(0, vocab, (batch, negatives)).astype("int32")
    return word, context, negative


def _run(tables, accumulators, batch, **kwargs):
    variables, accs = _variables(tables, accumulators)
    loss = ranking_step(variables, accs, *batch, **kwargs)
    unique = []
    for v in variables + accs:
        if not any(v is u for u in unique):
            unique.append(v)
    return float(loss), [v.numpy() for v in unique]


def test_fused_op_builds():
    assert fused_available(), f"the fused op did not build: {fused_build.error()}"
    path = fused_build.library_path()
    assert path.startswith(fused_build.cache_dir())
    assert os.path.exists(path)
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.endswith(".tmp")]


def test_untouched_rows_are_bit_identical():
    rng = np.random.default_rng(3)
    vocab = 50
    tables, accumulators = _tables(rng, vocab, 4, False, False)
    batch = (
        np.array([1, 2, 2], "int32"),
        np.array([3, 4, 3], "int32"),
        np.array([[5], [1], [6]], "int32"),
    )
    _, after = _run(
        tables, accumulators, batch, learning_rate=1.0, max_norm=0.5,
        min_variance=0.5, max_variance=1.5,
    )
    words_touched = np.zeros(vocab, bool)
    words_touched[[1, 2]] = True
    contexts_touched = np.zeros(vocab, bool)
    contexts_touched[[1, 3, 4, 5, 6]] = True
    before = [tables[0], tables[1], tables[2], tables[3]] + accumulators
    masks = [words_touched, words_touched, contexts_touched, contexts_touched]
    masks += masks
    for old, new, touched in zip(before, after, masks):
        np.testing.assert_array_equal(old[~touched], new[~touched])
        assert not np.array_equal(old[touched], new[touched])


@pytest.mark.parametrize("bad", ["word", "context", "negatives"])
def test_out_of_range_ids_raise(bad):
    rng = np.random.default_rng(0)
    tables, accumulators = _tables(rng, 10, 3, False, False)
    tables[2] = tables[2][:8]  # the context table has 8 rows
    tables[3] = tables[3][:8]
    accumulators[2] = accumulators[2][:8]
    accumulators[3] = accumulators[3][:8]
    ids = {
        "word": np.array([0, 9], "int32"),
        "context": np.array([1, 7], "int32"),
        "negatives": np.array([[2], [3]], "int32"),
    }
    ids[bad] = ids[bad] * 0 + (10 if bad == "word" else 8)
    variables, accs = _variables(tables, accumulators)
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"{bad}.*(10|8)"):
        ranking_step(
            variables, accs, ids["word"], ids["context"], ids["negatives"],
            learning_rate=0.1,
        )
    np.testing.assert_array_equal(variables[0].numpy(), tables[0])


def test_says_why_when_the_library_cannot_be_built(monkeypatch, caplog):
    def broken(path=None):
        raise RuntimeError("C++ compiler 'g++' not found")

    monkeypatch.setattr(fused_build, "build", broken)
    fused_build._reset()
    try:
        with caplog.at_level(logging.WARNING, logger="keras_gauss.fused"):
            assert not fused_available()
            assert not fused_available()  # warned once
        warnings = [r for r in caplog.records if "unavailable" in r.getMessage()]
        assert len(warnings) == 1 and "not found" in warnings[0].getMessage()
        rng = np.random.default_rng(0)
        tables, accumulators = _tables(rng, 10, 3, False, False)
        variables, accs = _variables(tables, accumulators)
        batch = _batch(rng, 10, 4, 1)
        with pytest.raises(RuntimeError, match="unavailable: .*C\\+\\+ compiler 'g\\+\\+' not found"):
            ranking_step(variables, accs, *batch, learning_rate=0.1)
    finally:
        monkeypatch.undo()
        fused_build._reset()


# ---------------------------------------------------------------------------
# The key check: one step equals one `fit` step of the ordinary Keras model.


def _keras_model(vocab, dim, negatives, energy, covariance, constraints, shared):
    words = kg.GaussianEmbedding(vocab, dim, covariance=covariance, name="words",
                                 **constraints)
    contexts = words if shared else kg.GaussianEmbedding(
        vocab, dim, covariance=covariance, name="contexts", **constraints)
    word = keras.Input((), dtype="int32", name="word")
    context = keras.Input((), dtype="int32", name="context")
    negative = keras.Input((negatives,), dtype="int32", name="negatives")
    mean_w, var_w = words(word)
    candidates = ops.concatenate([ops.expand_dims(context, -1), negative], -1)
    mean_c, var_c = contexts(candidates)
    layer = kg.ELEnergy() if energy == "el" else kg.KLEnergy()
    energies = layer(ops.expand_dims(mean_w, 1), ops.expand_dims(var_w, 1), mean_c, var_c)
    model = keras.Model({"word": word, "context": context, "negatives": negative},
                        energies)
    return model, words, contexts


@pytest.mark.parametrize("energy", ["el", "kl"])
@pytest.mark.parametrize("covariance", ["diagonal", "spherical"])
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("binding", [False, True])
def test_step_equals_keras_fit_step(energy, covariance, shared, binding, monkeypatch):
    monkeypatch.setenv("KERAS_GAUSS_KERNELS", "reference")  # the keras.ops code
    rng = np.random.default_rng(11)
    vocab, dim, batch, negatives = 12, 5, 32, 2
    if binding:  # a large step: the constraints bind
        constraints, learning_rate = dict(max_norm=0.8, min_variance=0.5, max_variance=1.6), 2.0
    else:
        constraints, learning_rate = dict(max_norm=50.0, min_variance=0.01,
                                          max_variance=50.0), 0.3
    keras_model, words, contexts = _keras_model(
        vocab, dim, negatives, energy, covariance, constraints, shared
    )
    var_dim = dim if covariance == "diagonal" else 1
    values = [
        rng.uniform(-0.5, 0.5, (vocab, dim)).astype("float32"),
        rng.uniform(0.6, 1.5, (vocab, var_dim)).astype("float32"),
    ]
    if not shared:
        values += [rng.uniform(-0.5, 0.5, (vocab, dim)).astype("float32"),
                   rng.uniform(0.6, 1.5, (vocab, var_dim)).astype("float32")]
    keras_tables = [words.means, words.variances]
    keras_tables += [] if shared else [contexts.means, contexts.variances]
    for variable, value in zip(keras_tables, values):
        variable.assign(value)

    word, context, negative = _batch(rng, vocab, batch, negatives)
    x = {"word": word, "context": context, "negatives": negative}
    y = np.zeros((batch, 1 + negatives), "float32")
    y[:, 0] = 1.0
    optimizer = kg.SparseAdagrad(learning_rate)
    keras_model.compile(optimizer=optimizer, loss=kg.MaxMarginRanking())
    keras_loss = keras_model.fit(x, y, batch_size=batch, epochs=1, verbose=0,
                                 shuffle=False).history["loss"][0]

    # The fused step, from the same values and SparseAdagrad's starting accumulators.
    start = kg.SparseAdagrad(learning_rate)
    tables = [tf.Variable(v) for v in values]
    start.build(tables)
    accumulators = [start._accumulators[start._get_variable_index(v)].value for v in tables]
    if shared:
        tables, accumulators = tables * 2, accumulators * 2
    fused_loss = ranking_step(tables, accumulators, word, context, negative,
                              learning_rate=learning_rate, margin=1.0,
                              epsilon=optimizer.epsilon, energy=energy, **constraints)

    np.testing.assert_allclose(float(fused_loss), keras_loss, **TOL)
    theirs_acc = [optimizer._accumulators[optimizer._get_variable_index(v)]
                  for v in keras_tables]
    for ours, theirs, value in zip(tables, keras_tables, values):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), **TOL)
        assert not np.allclose(ours.numpy(), value)  # the step moved them
    for a, b in zip(accumulators, theirs_acc):
        np.testing.assert_allclose(a.numpy(), b.numpy(), **TOL)
    if binding:  # the constraints really bound
        norms = np.linalg.norm(tables[0].numpy()[np.unique(word)], axis=-1)
        assert np.isclose(norms.max(), 0.8, atol=1e-5)
        touched = np.unique(np.concatenate([word, context, negative.ravel()]))
        variances = tables[-1].numpy()[touched]
        assert variances.min() == np.float32(0.5) or variances.max() == np.float32(1.6)


@pytest.mark.parametrize("energy", ["el", "kl"])
@pytest.mark.parametrize("dim", [5, 50, 300])
def test_fused_loss_matches_float64_energies_over_wide_variances(energy, dim):
    # The op's energies use its own vectorised log (VecLog) and sums in 16
    # lanes: variances over 10 (EL) or 4 (KL: the ratio terms grow as fast)
    # orders of magnitude and 300 dimensions (several lane blocks and a
    # tail) must still give float64's loss.
    rng = np.random.default_rng(11)
    vocab, batch = 9, 12
    spread = 5.0 if energy == "el" else 2.0
    means = [rng.normal(0.0, 1e-2, (vocab, dim)) for _ in range(2)]
    variances = [10.0 ** rng.uniform(-spread, spread, (vocab, dim)) for _ in range(2)]
    word, context, negative = _batch(rng, vocab, batch, 1)

    def energies(c):
        mw, vw = means[0][word], variances[0][word]
        mc, vc = means[1][c], variances[1][c]
        if energy == "el":
            t = vw + vc
            return -0.5 * (np.log(t) + (mw - mc) ** 2 / t).sum(-1)
        return -0.5 * (vc / vw + (mw - mc) ** 2 / vw - 1.0 - np.log(vc / vw)).sum(-1)

    hinge = -energies(context) + energies(negative[:, 0])
    same = context == negative[:, 0]  # hinge exactly 0
    assert ((np.abs(hinge) > 1.0) | same).all() and (hinge > 1.0).any()
    expected = np.mean(np.maximum(hinge, 0.0))
    tables = [means[0], variances[0], means[1], variances[1]]
    tables = [t.astype("float32") for t in tables]
    accumulators = [np.zeros_like(t) for t in tables]
    loss, _ = _run(tables, accumulators, (word, context, negative),
                   learning_rate=0.0, margin=0.0, epsilon=1e-7, max_norm=0.0,
                   min_variance=1e-6, max_variance=1e6, energy=energy)
    assert loss == pytest.approx(expected, rel=1e-5)
