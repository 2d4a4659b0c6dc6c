"""The fused pair ranking step: C++ op == pure TensorFlow step (one shared or
two tables, both sides of a pair changing; the Keras path of the hierarchy
model is compared in tests/hierarchy/test_hierarchy_model.py)."""

import numpy as np
import pytest
import tensorflow as tf

from keras_gauss.fused import pair_ranking_step

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
    for ours, theirs in zip(fused, reference):
        np.testing.assert_allclose(ours, theirs, **TOL)
    assert not np.allclose(fused[0], values[0])  # the step moved the means


@pytest.mark.parametrize("use_fused", [True, False])
def test_pair_step_rejects_ids_outside_the_table(use_fused):
    values, accs = _values(np.random.default_rng(0), 5, 3, 3, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="specific"):
        _run(values, accs, [[0, 1]], [[2, 5]], use_fused, learning_rate=0.1)
