"""A SparseAdagrad that records, in-graph, the state of watched tables after
every optimizer step (also inside `steps_per_execution > 1` loops, where
callbacks only see every k-th step)."""

import tensorflow as tf

from keras_gauss import SparseAdagrad


class RecordingSparseAdagrad(SparseAdagrad):
    """Records the largest row norm of `norm_tables` and the smallest and
    largest entry of `range_tables` seen after any step, and counts steps."""

    def __init__(self, norm_tables=(), range_tables=(), **kwargs):
        super().__init__(**kwargs)
        self._norm_tables = list(norm_tables)
        self._range_tables = list(range_tables)
        self.max_row_norm = tf.Variable(0.0, trainable=False)
        self.min_value = tf.Variable(float("inf"), trainable=False)
        self.max_value = tf.Variable(float("-inf"), trainable=False)
        self.steps = tf.Variable(0, trainable=False)

    def apply(self, grads, trainable_variables=None):
        result = super().apply(grads, trainable_variables)
        for table in self._norm_tables:
            norms = tf.norm(tf.convert_to_tensor(table), axis=-1)
            self.max_row_norm.assign(tf.maximum(self.max_row_norm, tf.reduce_max(norms)))
        for table in self._range_tables:
            values = tf.convert_to_tensor(table)
            self.min_value.assign(tf.minimum(self.min_value, tf.reduce_min(values)))
            self.max_value.assign(tf.maximum(self.max_value, tf.reduce_max(values)))
        self.steps.assign_add(1)
        return result
