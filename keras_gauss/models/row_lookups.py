"""Row lookups that a JAX train step differentiates row by row.

On the JAX backend the gradient of `take(table, ids)` is a dense array of the
table's shape (a scatter-add into zeros), so an optimizer step would cost
`O(vocabulary)`. `GaussianModel.train_step` instead differentiates the loss
with respect to a zero offset added to the gathered rows: inside a
`RowLookups` context, `GaussianEmbedding` reads `take(stop_gradient(table),
ids) + offset` and records `(variable, ids)`, so the gradient of each lookup
is one row per id, the JAX counterpart of TensorFlow's `tf.IndexedSlices`.
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


class RowLookups:
    """Context in which `GaussianEmbedding` lookups record their ids.

    Args:
        offsets: `None` (record only; the shapes are read from the records)
            or one array per lookup, in call order, shaped `ids.shape +
            (columns,)`, added to the gathered rows.
    """

    def __init__(self, offsets=None):
        self.offsets = offsets
        self.records = []

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
