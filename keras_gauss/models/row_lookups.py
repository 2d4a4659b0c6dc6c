"""Row lookups that a JAX train step differentiates row by row.

On the JAX backend the gradient of `take(table, ids)` is a dense array of the
table's shape (a scatter-add into zeros), so an optimizer step would cost
`O(vocabulary)`. `GaussianModel.train_step` instead differentiates the loss
with respect to a zero offset added to the gathered rows: inside a
`RowLookups` context, `GaussianEmbedding` reads `take(stop_gradient(table),
ids) + offset` and records `(variable, ids)`, so the gradient of each lookup
is one row per id, the JAX counterpart of TensorFlow's `tf.IndexedSlices`.

Row gradients are materialized (`materialized`) before any scatter sums
them: left to itself, XLA fuses the backward pass (the row gathers and the
energy's gradient) into the scatter's update computation, and on a GPU the
updates of a frequent (Zipfian) row, each recomputing that work, serialize
on the row (10-40x slower steps on real text).
"""

import threading
from typing import NamedTuple

_ACTIVE = threading.local()


class RowGradient(NamedTuple):
    """The gradient of a table as rows: `values[i]` belongs to row `indices[i]`.

    Repeated indices are summed by the optimizer (as for `tf.IndexedSlices`).
    """

    indices: object
    values: object
    dense_shape: tuple


def materialized(*arrays):
    """`arrays`, computed in full before anything that uses them.

    The compiler may not move work across this point: a scatter that sums
    the rows of a gradient then reads them from memory instead of fusing
    the computation that made them into its update (on a GPU that fused
    work reruns once per update, serialized on a frequent row). JAX:
    `jax.lax.optimization_barrier`; TensorFlow inside an XLA cluster
    (`jit_compile=True`): XLA's own barrier (`XlaOptimizationBarrier`); else
    (eager or a TensorFlow graph, which fuses nothing into a scatter) the
    arrays unchanged.

    Args:
        *arrays: tensors.

    Returns:
        The arrays (a tuple when there are several).

    Example:

    >>> import numpy as np
    >>> float(materialized(np.float32(2.0)))
    2.0
    """
    import keras

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        out = jax.lax.optimization_barrier(tuple(arrays))
    elif backend == "tensorflow" and in_xla_cluster():
        from tensorflow.compiler.tf2xla.python import xla

        out = tuple(xla.optimization_barrier(*arrays))
    else:
        out = tuple(arrays)
    return out[0] if len(out) == 1 else out


def in_xla_cluster():
    """Whether this TensorFlow trace compiles with XLA (`jit_compile=True`)."""
    from tensorflow.python.framework import ops as tf_ops
    from tensorflow.python.ops import control_flow_util

    return control_flow_util.GraphOrParentsInXlaContext(tf_ops.get_default_graph())


def materialized_gradient(rows):
    """`rows` (TensorFlow), whose gradient is `materialized`: the values of
    the `tf.IndexedSlices` that a `tf.gather` of a table passes to the
    optimizer. Outside an XLA cluster `rows` itself (no op added).

    Example:

    >>> import tensorflow as tf
    >>> materialized_gradient(tf.ones((2, 3))).shape
    TensorShape([2, 3])
    """
    import tensorflow as tf

    if not in_xla_cluster():
        return rows

    @tf.custom_gradient
    def identity(x):
        return tf.identity(x), materialized

    return identity(rows)


class RowLookups:
    """Context in which `GaussianEmbedding` lookups record their ids.

    Args:
        offsets: `None` (record only; the shapes are read from the records)
            or one array per lookup, in call order, shaped `ids.shape +
            (columns,)`, added to the gathered rows.
        defer_checks: False (default) or True: the layers leave their ids'
            range check to the caller, appending `(bad, raise_error)` to
            `checks` (`bad` a traced boolean, `raise_error()` raises the
            layer's error) instead of a `lax.cond` in the step (on a GPU
            each `cond` waits for the device: `scanned_steps` checks once
            a call instead).
    """

    def __init__(self, offsets=None, defer_checks=False):
        self.offsets = offsets
        self.defer_checks = defer_checks
        self.records = []
        self.checks = []

    def lookup(self, variable, ids, take=None):
        """The rows `ids` of `variable` (`take(table, ids)`, when given and
        not None, else `jnp.take`), plus this lookup's offset."""
        import jax
        from jax import numpy as jnp

        table = jax.lax.stop_gradient(variable.value)
        rows = None if take is None else take(table, ids)
        if rows is None:
            rows = jnp.take(table, ids, axis=0)
        if self.offsets is not None:
            rows = rows + self.offsets[len(self.records)]
        self.records.append((variable, ids))
        return rows

    def __enter__(self):
        self._previous = getattr(_ACTIVE, "lookups", None)
        _ACTIVE.lookups = self
        return self

    def __exit__(self, *exc):
        _ACTIVE.lookups = self._previous
        return False


def active_row_lookups():
    """The `RowLookups` context in force on this thread, or `None`."""
    return getattr(_ACTIVE, "lookups", None)


class TorchRowLookups:
    """Context: `GaussianEmbedding` lookups give sparse (row) gradients on torch.

    Inside it (`GaussianModel.train_step` on the torch backend, with an
    optimizer that takes row gradients), a lookup is
    `torch.nn.functional.embedding(ids, table, sparse=True)`: the table's
    gradient is a sparse tensor of one row per id, which `SparseAdagrad`
    applies row by row (the counterpart of TensorFlow's `tf.IndexedSlices`).
    Outside it the lookup is `keras.ops.take` and the gradient dense, what
    any optimizer takes.

    Example:

    >>> with TorchRowLookups():  # doctest: +SKIP
    ...     model.train_step(batch)
    """

    def __enter__(self):
        _ACTIVE.torch_rows = getattr(_ACTIVE, "torch_rows", 0) + 1
        return self

    def __exit__(self, *exc):
        _ACTIVE.torch_rows -= 1

    @staticmethod
    def active():
        """Whether a lookup now should give a sparse gradient."""
        return getattr(_ACTIVE, "torch_rows", 0) > 0

