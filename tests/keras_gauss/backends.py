"""Helpers for tests that run on every Keras backend (`test_backends.py` runs
the unit tests again on JAX and torch, one child Python each).

`only_on_tensorflow(why)` marks a test that only makes sense on TensorFlow
(it skips, with `why`, elsewhere); `gradients` and `row_gradient` stand in
for `tf.GradientTape` and `tf.IndexedSlices`.
"""

import os

import keras
import numpy as np
import pytest

BACKEND = keras.backend.backend()


def only_on_tensorflow(why):
    """A mark: the test skips with `why` on a backend other than TensorFlow."""
    return pytest.mark.skipif(BACKEND != "tensorflow", reason=f"TensorFlow only: {why}")


def forced_host_devices(devices):
    """`XLA_FLAGS` for a child JAX process: this process's flags (the tests'
    `TEST_XLA_FLAGS`) and `devices` forced host devices."""
    return f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}"


def float64_available():
    """Whether the backend computes in float64 (JAX only with `jax_enable_x64`)."""
    if BACKEND != "jax":
        return True
    import jax

    return bool(jax.config.jax_enable_x64)


def float64_loss_available():
    """Whether a Keras loss of float64 values comes out float64: not where
    the backend computes in float32 (`float64_available`), nor on torch in
    Keras 3.15, whose `divide_no_nan` (the losses' mean over the batch)
    returns float32, for Keras's own losses too."""
    if not float64_available():
        return False
    one = keras.ops.convert_to_tensor(np.float64(1.0), dtype="float64")
    return keras.backend.standardize_dtype(keras.ops.divide_no_nan(one, one).dtype) == "float64"


def gradients(loss_fn, variables):
    """The gradients of the scalar `loss_fn()` in the Keras `variables`, as
    dense NumPy arrays, on the current backend."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = loss_fn()
        return [np.asarray(tf.convert_to_tensor(g)) for g in tape.gradient(loss, variables)]
    if BACKEND == "torch":
        for v in variables:
            v.value.grad = None
        loss_fn().backward()
        grads = [v.value.grad.to_dense().detach().cpu().numpy() for v in variables]
        for v in variables:
            v.value.grad = None
        return grads
    import jax

    def loss_of(values):
        with keras.StatelessScope(state_mapping=list(zip(variables, values))):
            return loss_fn()

    return [np.asarray(g) for g in jax.grad(loss_of)([v.value for v in variables])]


def row_gradient(indices, values, shape):
    """A sparse gradient, row `values[i]` for table row `indices[i]` (repeats
    add up), in the form the backend's lookups give `SparseAdagrad`:
    `tf.IndexedSlices`, a JAX `RowGradient` or a torch sparse COO tensor."""
    indices = np.asarray(indices, "int64")
    values = np.asarray(values, "float32")
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.IndexedSlices(tf.constant(values), tf.constant(indices),
                                tf.constant(shape, "int64"))
    if BACKEND == "torch":
        import torch

        return torch.sparse_coo_tensor(torch.from_numpy(indices)[None],
                                       torch.from_numpy(values), tuple(shape),
                                       check_invariants=True)
    from jax import numpy as jnp

    from keras_gauss.models.row_lookups import RowGradient

    return RowGradient(jnp.asarray(indices, "int32"), jnp.asarray(values), tuple(shape))


def dense_gradient(indices, values, shape):
    """`row_gradient`'s dense counterpart (rows of repeated indices added)."""
    out = np.zeros(shape, "float32")
    np.add.at(out, np.asarray(indices), np.asarray(values, "float32"))
    return keras.ops.convert_to_tensor(out)
