"""A SparseAdagrad that records, in the step, the state of watched tables after
every optimizer step (also inside `steps_per_execution > 1` loops, where
callbacks only see every k-th step), on any backend: its records are
optimizer variables, so a JAX train step carries them as state."""

import keras
from keras import ops

from keras_gauss import SparseAdagrad


class RecordingSparseAdagrad(SparseAdagrad):
    """Records the largest row norm of `norm_tables` and the smallest and
    largest entry of `range_tables` seen after any step, and counts steps."""

    def __init__(self, norm_tables=(), range_tables=(), **kwargs):
        super().__init__(**kwargs)
        # Held by a function, not a list: Keras would track a list's variables
        # as the optimizer's own (on JAX they would be donated twice a step).
        self._tables = lambda: (list(norm_tables), list(range_tables))

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)

        def record(name, value, dtype="float32"):
            return self.add_variable((), initializer=keras.initializers.Constant(value),
                                     dtype=dtype, name=name)

        self.max_row_norm = record("max_row_norm", 0.0)
        self.min_value = record("min_value", float("inf"))
        self.max_value = record("max_value", float("-inf"))
        self.steps = record("steps", 0, "int32")

    def apply(self, grads, trainable_variables=None):
        result = super().apply(grads, trainable_variables)
        norm_tables, range_tables = self._tables()
        for table in norm_tables:
            norms = ops.sqrt(ops.sum(ops.square(table.value), axis=-1))
            self.max_row_norm.assign(ops.maximum(self.max_row_norm, ops.max(norms)))
        for table in range_tables:
            self.min_value.assign(ops.minimum(self.min_value, ops.min(table.value)))
            self.max_value.assign(ops.maximum(self.max_value, ops.max(table.value)))
        self.steps.assign_add(1)
        return result
