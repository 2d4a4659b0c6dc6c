"""The fused pair ranking step: C++ op == pure TensorFlow step == Keras path
of the hierarchy model (one shared table, KL energy, both sides corrupted)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_gauss as kg
from keras_gauss.fused import pair_ranking_step
from keras_gauss.hierarchy.model import FusedKLTrainer
from keras_gauss.hierarchy.model import build_kl_model

TOL = dict(rtol=1e-5, atol=1e-5)


def _values(rng, vocab, dim, var_dim, sides):
    values = []
    for _ in range(sides):
        values += [rng.uniform(-1.0, 1.0, (vocab, dim)).astype("float32"),
                   rng.uniform(0.2, 2.0, (vocab, var_dim)).astype("float32")]
    accs = [rng.uniform(0.0, 0.01, v.shape).astype("float32") for v in values]
    return values, accs


def _run(values, accs, general, specific, use_fused, **kwargs):
    tables = [tf.Variable(v) for v in values]
    accumulators = [tf.Variable(a) for a in accs]
    if len(tables) == 2:
        tables, accumulators = tables * 2, accumulators * 2
    loss = pair_ranking_step(tables, accumulators, general, specific,
                             use_fused=use_fused, **kwargs)
    unique = []
    for v in tables + accumulators:
        if not any(v is u for u in unique):
            unique.append(v)
    return float(loss), [v.numpy() for v in unique]


@pytest.mark.parametrize("energy", ["kl", "el"])
@pytest.mark.parametrize("spherical", [False, True])
@pytest.mark.parametrize("shared", [True, False])
def test_fused_pair_step_equals_tf_step(energy, spherical, shared):
    rng = np.random.default_rng(3)
    vocab, dim, batch, list_size = 11, 6, 40, 4
    values, accs = _values(rng, vocab, dim, 1 if spherical else dim, 1 if shared else 2)
    # A small vocabulary repeats ids within and across sides.
    general = rng.integers(0, vocab, (batch, list_size)).astype("int32")
    specific = rng.integers(0, vocab, (batch, list_size)).astype("int32")
    kwargs = dict(learning_rate=0.3, margin=1.0, max_norm=1.5, min_variance=0.3,
                  max_variance=1.8, energy=energy)
    fused_loss, fused = _run(values, accs, general, specific, True, **kwargs)
    tf_loss, reference = _run(values, accs, general, specific, False, **kwargs)
    assert fused_loss > 0
    np.testing.assert_allclose(fused_loss, tf_loss, **TOL)
    for ours, theirs, before in zip(fused, reference, values + accs):
        np.testing.assert_allclose(ours, theirs, **TOL)
    assert not np.allclose(fused[0], values[0])  # the step moved the means


@pytest.mark.parametrize("use_fused", [True, False])
def test_pair_step_rejects_ids_outside_the_table(use_fused):
    values, accs = _values(np.random.default_rng(0), 5, 3, 3, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="specific"):
        _run(values, accs, [[0, 1]], [[2, 5]], use_fused, learning_rate=0.1)


def _hierarchy_batch(rng, vocab, batch, negatives):
    x = {"general": rng.integers(0, vocab, batch).astype("int32"),
         "specific": rng.integers(0, vocab, batch).astype("int32"),
         "neg_general": rng.integers(0, vocab, (batch, negatives)).astype("int32"),
         "neg_specific": rng.integers(0, vocab, (batch, negatives)).astype("int32")}
    y = np.zeros((batch, 1 + negatives), "float32")
    y[:, 0] = 1.0
    return x, y


@pytest.mark.parametrize("use_fused", [True, False])
def test_trainer_equals_keras_fit_of_the_hierarchy_model(use_fused):
    rng = np.random.default_rng(5)
    vocab, dim, negatives = 15, 5, 3
    bounds = dict(max_norm=0.9, min_variance=0.4, max_variance=1.7)
    keras_model = build_kl_model(vocab, dim, negatives=negatives, **bounds)
    fused_model = build_kl_model(vocab, dim, negatives=negatives, **bounds)
    values = [rng.uniform(-0.5, 0.5, (vocab, dim)).astype("float32"),
              rng.uniform(0.5, 1.6, (vocab, dim)).astype("float32")]
    for model in (keras_model, fused_model):
        nodes = model.get_layer("nodes")
        nodes.means.assign(values[0])
        nodes.variances.assign(values[1])
    # Two batches (the second smaller): the second step starts from the
    # tables and accumulators the first one wrote.
    x, y = _hierarchy_batch(rng, vocab, 48, negatives)
    keras_model.compile(optimizer=kg.SparseAdagrad(0.3), loss=kg.MaxMarginRanking(0.7))
    optimizer = kg.SparseAdagrad(0.3)
    fused_model.compile(optimizer=optimizer, loss=kg.MaxMarginRanking(0.7))
    trainer = FusedKLTrainer(fused_model, margin=0.7, use_fused=use_fused)
    trainer.compile(optimizer=optimizer)
    fit = dict(batch_size=32, epochs=2, verbose=0, shuffle=False)
    keras_loss = keras_model.fit(x, y, **fit).history["loss"]
    fused_loss = trainer.fit(x, y, **fit).history["loss"]

    np.testing.assert_allclose(fused_loss, keras_loss, **TOL)
    for name in ("means", "variances"):
        ours = getattr(fused_model.get_layer("nodes"), name)
        theirs = getattr(keras_model.get_layer("nodes"), name)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), **TOL)
        theirs_acc = keras_model.optimizer._accumulators[
            keras_model.optimizer._get_variable_index(theirs)]
        np.testing.assert_allclose(
            optimizer._accumulators[optimizer._get_variable_index(ours)].numpy(),
            theirs_acc.numpy(), **TOL)
    assert int(optimizer.iterations) == 4


def test_trainer_refuses_other_optimizers():
    trainer = FusedKLTrainer(build_kl_model(10, 4))
    with pytest.raises(TypeError, match="SparseAdagrad"):
        trainer.compile(optimizer=keras.optimizers.SGD(0.1))
