"""The fused pair ranking step (C++ op) == the `keras.ops` reference: the energies
of `keras_gauss.ops`, their gradients, AdaGrad on every row of the batch and the
row constraints (one shared or two tables, both sides of a pair changing; the
`fit` step of the hierarchy model is compared in tests/hierarchy/test_hierarchy_model.py)."""

import numpy as np
import pytest
import tensorflow as tf

from keras_gauss import ops as gauss_ops
from keras_gauss.fused import pair_ranking_step

TOL = dict(rtol=1e-5, atol=1e-5)


def _values(rng, vocab, dim, var_dim, sides):
    values = []
    for _ in range(sides):
        values += [rng.uniform(-1.0, 1.0, (vocab, dim)).astype("float32"),
                   rng.uniform(0.2, 2.0, (vocab, var_dim)).astype("float32")]
    accs = [rng.uniform(0.0, 0.01, v.shape).astype("float32") for v in values]
    return values, accs


def _run(values, accs, general, specific, **kwargs):
    tables = [tf.Variable(v) for v in values]
    accumulators = [tf.Variable(a) for a in accs]
    if len(tables) == 2:
        tables, accumulators = tables * 2, accumulators * 2
    loss = pair_ranking_step(tables, accumulators, general, specific, **kwargs)
    unique = []
    for v in tables + accumulators:
        if not any(v is u for u in unique):
            unique.append(v)
    return float(loss), [v.numpy() for v in unique]


def _reference(values, accs, general, specific, learning_rate, margin, max_norm,
               min_variance, max_variance, energy, epsilon=1e-7):
    """The step in `keras.ops` and NumPy: `[means, variances] * sides` then
    their accumulators, after the step."""
    shared = len(values) == 2
    tables = [tf.constant(v) for v in values]
    with tf.GradientTape() as tape:
        tape.watch(tables)
        four = tables * 2 if shared else tables
        mean_g, var_g = tf.gather(four[0], general), tf.gather(four[1], general)
        mean_s, var_s = tf.gather(four[2], specific), tf.gather(four[3], specific)
        var_g, var_s = (tf.broadcast_to(v, tf.shape(mean_g)) for v in (var_g, var_s))
        energy_of = gauss_ops.el_energy if energy == "el" else gauss_ops.kl_energy
        energies = energy_of(mean_g, var_g, mean_s, var_s)
        loss = tf.reduce_mean(tf.reduce_sum(
            tf.nn.relu(margin - energies[:, :1] + energies[:, 1:]), -1))
    grads = [tf.convert_to_tensor(g).numpy() for g in tape.gradient(loss, tables)]
    sides = [np.unique(np.concatenate([general.ravel(), specific.ravel()]))] if shared \
        else [np.unique(general), np.unique(specific)]
    new_values, new_accs = [v.copy() for v in values], [a.copy() for a in accs]
    for side, rows in enumerate(sides):
        for k in (2 * side, 2 * side + 1):  # means, variances: AdaGrad on the batch's rows
            new_accs[k][rows] += grads[k][rows] ** 2
            new_values[k][rows] -= (learning_rate * grads[k][rows]
                                    / np.sqrt(new_accs[k][rows] + epsilon))
        means = new_values[2 * side]
        norms = np.linalg.norm(means[rows], axis=-1, keepdims=True)
        means[rows] *= np.minimum(1.0, max_norm / np.maximum(norms, 1e-30))
        new_values[2 * side + 1][rows] = np.clip(new_values[2 * side + 1][rows],
                                                 min_variance, max_variance)
    return float(loss), new_values + new_accs


@pytest.mark.parametrize("energy", ["kl", "el"])
@pytest.mark.parametrize("spherical", [False, True])
@pytest.mark.parametrize("shared", [True, False])
def test_fused_pair_step_equals_the_keras_ops_reference(energy, spherical, shared):
    rng = np.random.default_rng(3)
    vocab, dim, batch, list_size = 11, 6, 40, 4
    values, accs = _values(rng, vocab, dim, 1 if spherical else dim, 1 if shared else 2)
    # A small vocabulary repeats ids within and across sides.
    general = rng.integers(0, vocab, (batch, list_size)).astype("int32")
    specific = rng.integers(0, vocab, (batch, list_size)).astype("int32")
    kwargs = dict(learning_rate=0.3, margin=1.0, max_norm=1.5, min_variance=0.3,
                  max_variance=1.8, energy=energy)
    fused_loss, fused = _run(values, accs, general, specific, **kwargs)
    reference_loss, reference = _reference(values, accs, general, specific, **kwargs)
    assert fused_loss > 0
    np.testing.assert_allclose(fused_loss, reference_loss, **TOL)
    for ours, theirs in zip(fused, reference):
        np.testing.assert_allclose(ours, theirs, **TOL)
    assert not np.allclose(fused[0], values[0])  # the step moved the means


def test_pair_step_rejects_ids_outside_the_table():
    values, accs = _values(np.random.default_rng(0), 5, 3, 3, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="specific"):
        _run(values, accs, [[0, 1]], [[2, 5]], learning_rate=0.1)
