import math
import threading

import keras
from keras import ops

from keras_gauss import kernels
from keras_gauss.checks import check_number
from keras_gauss.checks import checked_in_jax_step
from keras_gauss.checks import is_number
from keras_gauss.constraints.norm_clip import NormClip
from keras_gauss.constraints.variance_clip import VarianceClip
from keras_gauss.optimizers.adagrad_floor import EPSILON
from keras_gauss.optimizers.adagrad_floor import INITIAL_ACCUMULATOR


@keras.saving.register_keras_serializable(package="keras_gauss")
class SparseAdagrad(keras.optimizers.Optimizer):
    """AdaGrad that reads and writes only the table rows in the batch.

    The update is Keras's `Adagrad` exactly
    (`acc += g^2; w -= lr * g / sqrt(acc + epsilon)`), but where Keras
    densifies the sparse gradient of an embedding lookup and then projects
    every row of every constrained table after each step, this optimizer:

    - sums the gradient rows of repeated ids (the exact minibatch gradient),
    - updates only those rows of the variable and of its accumulator,
    - applies a row-wise constraint (`keras_gauss.constraints.RowConstraint`,
      such as the `NormClip` and `VarianceClip` of `GaussianEmbedding`) to
      those rows only, inside the same step.

    So the cost of a step depends on the batch, not on the vocabulary, and
    the constraints hold after every step, also when `model.fit` runs
    several steps per call (`steps_per_execution > 1`). Dense gradients and
    constraints that are not row-wise take Keras's ordinary dense path.
    Sparse gradients come from the TensorFlow backend (`tf.IndexedSlices`)
    and, on JAX and torch, from the train step of
    `keras_gauss.models.GaussianModel` (row gradients, sparse tensors);
    otherwise the optimizer runs the dense path. With the
    `GaussianEmbedding` constraints (or none) the update is one compiled
    kernel per table where there is one (`keras_gauss.kernels`): on JAX's
    dense path it updates the rows whose gradient is not zero, as does the
    torch code for a table's dense gradient (a plain `keras.Model`).

    Defaults differ from Keras's `Adagrad` (0.001 and 0.1) on purpose: with
    a loss averaged over the batch, an embedding row receives a gradient of
    order `1 / batch_size`, which a starting accumulator of 0.1 would swamp
    (steps some 100x too small: training barely moves). A tiny starting
    accumulator makes each row's first step about `learning_rate` long,
    whatever the batch size, as in per-row AdaGrad implementations such as
    word2gauss.

    Args:
        learning_rate: float or schedule (default 0.1).
        initial_accumulator_value: starting value of the accumulators
            (default 1e-6).
        epsilon: small float added inside the square root (default 1e-7;
            `> 0` when `initial_accumulator_value` is 0).
        name: name of the optimizer.
        **kwargs: other `keras.optimizers.Optimizer` arguments.

    Example:

    >>> from keras_gauss.hierarchy.model import build_kl_model
    >>> from keras_gauss.losses import MaxMarginRanking
    >>> model = build_kl_model(10, dim=2)
    >>> model.compile(optimizer=SparseAdagrad(0.05), loss=MaxMarginRanking())
    """

    # `keras_gauss.models.GaussianModel` passes it row gradients on JAX.
    supports_row_gradients = True

    def __init__(
        self,
        learning_rate=0.1,
        initial_accumulator_value=INITIAL_ACCUMULATOR,
        epsilon=EPSILON,
        name="sparse_adagrad",
        **kwargs,
    ):
        if is_number(learning_rate):  # not a schedule or a variable
            # float: Keras's base rejects NumPy numbers
            learning_rate = float(check_number(learning_rate, "`learning_rate`", above=0))
        check_number(initial_accumulator_value, "`initial_accumulator_value`", at_least=0)
        check_number(epsilon, "`epsilon`", at_least=0)
        if initial_accumulator_value + epsilon <= 0:
            # a row in the batch whose gradient is 0 would step by 0 / sqrt(0)
            raise ValueError("`epsilon` must be > 0 when `initial_accumulator_value` is 0 "
                             "(else a row whose gradient is 0 turns NaN).")
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)
        self._row_constraints = {}
        self._hiding = 0  # replicas inside `apply` (no list here: Keras would track it)

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._accumulators = self.add_optimizer_variables(
            var_list,
            "accumulator",
            initializer=keras.initializers.Constant(self.initial_accumulator_value),
        )

    def apply(self, grads, trainable_variables=None):
        # Row constraints are applied to the touched rows in `update_step`;
        # hide them from the base class, which would project whole tables.
        # Under `tf.distribute.MirroredStrategy` every replica runs `apply`
        # in its own thread (they meet in the all-reduce of the gradients):
        # the first one in hides the constraints, the last one out restores
        # them, so no replica finds them half hidden.
        if trainable_variables is None:
            variables = self._trainable_variables
        else:
            variables = list(trainable_variables)
        if self.loss_scale_factor is not None and keras.backend.backend() == "tensorflow":
            grads = [_divisible(g) for g in grads]
        with _HIDING:
            if not self._hiding:
                hidden = [v for v in variables if _row_constraint(v) is not None]
                self._row_constraints = {self._var_key(v): v.constraint for v in hidden}
                for v in hidden:
                    v.constraint = None
            self._hiding += 1
        try:
            return super().apply(grads, trainable_variables)
        finally:
            with _HIDING:
                self._hiding -= 1
                if not self._hiding:
                    for v in variables:
                        key = self._var_key(v)
                        if key in self._row_constraints:
                            v.constraint = self._row_constraints[key]

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        accumulator = self._accumulators[index]
        constraint = self._row_constraints.get(self._var_key(variable))
        lr = ops.cast(learning_rate, variable.dtype)
        if self._kernel_update(gradient, variable, accumulator, constraint, lr):
            return
        if _is_indexed_slices(gradient):
            self._sparse_update(gradient, variable, accumulator, constraint, lr)
            return
        if _is_row_gradient(gradient):
            self._row_update_jax(gradient, variable, accumulator, constraint, lr)
            return
        if _is_torch_sparse(gradient) or _is_torch_table(gradient):
            self._row_update_torch(gradient, variable, accumulator, constraint, lr)
            return
        gradient = ops.cast(gradient, variable.dtype)
        self.assign_add(accumulator, ops.square(gradient))
        self.assign_sub(
            variable, lr * gradient / ops.sqrt(accumulator + self.epsilon)
        )
        if constraint is not None:
            self.assign(variable, constraint(variable))

    def _kernel_update(self, gradient, variable, accumulator, constraint, lr):
        """The update as one compiled kernel; False when there is none for it."""
        kernel = kernels.get()
        bounds = _row_bounds(constraint)
        if kernel is None or bounds is None:
            return False
        if _is_indexed_slices(gradient):
            return kernel.sparse_adagrad(
                _tf_variable(variable), _tf_variable(accumulator), gradient.indices,
                gradient.values, lr, self.epsilon, bounds)
        if keras.backend.backend() != "jax":
            return False
        if _is_row_gradient(gradient):
            new = kernel.adagrad_rows(variable.value, accumulator.value, gradient.indices,
                                      gradient.values, lr, self.epsilon, bounds)
        else:
            new = kernel.adagrad_dense(variable.value, accumulator.value, gradient, lr,
                                       self.epsilon, bounds)
        if new is None:
            return False
        variable.assign(new[0])
        accumulator.assign(new[1])
        return True

    def _sparse_update(self, gradient, variable, accumulator, constraint, lr):
        import tensorflow as tf

        from keras_gauss.models.row_lookups import materialized

        # Inside an XLA cluster, the gradient rows are read, not recomputed,
        # by the scatter that sums them (see `materialized`).
        rows, positions = tf.unique(gradient.indices)
        values = tf.math.unsorted_segment_sum(
            tf.cast(materialized(gradient.values), variable.dtype), positions,
            tf.shape(rows)[0])
        accumulator = _tf_variable(accumulator)
        variable = _tf_variable(variable)
        acc_rows = tf.gather(accumulator, rows) + tf.square(values)
        accumulator.scatter_update(tf.IndexedSlices(acc_rows, rows))
        new_rows = tf.gather(variable, rows) - lr * values / tf.sqrt(
            acc_rows + self.epsilon
        )
        if constraint is not None:
            new_rows = constraint(new_rows)
        variable.scatter_update(tf.IndexedSlices(new_rows, rows))

    def _row_update_torch(self, gradient, variable, accumulator, constraint, lr):
        # torch: the sparse gradient of `GaussianModel`'s train step (a
        # `sparse=True` embedding lookup; `coalesce` sums repeated rows), or
        # a table's dense gradient (a plain `keras.Model`), of which only the
        # rows that are not all zero are updated, as on JAX's dense path:
        # elementwise work on the whole table each step cost more than the
        # rest of the step. Without autograd: the tables are leaves that
        # require grad (Keras's trainer applies under `no_grad`, a custom
        # loop's `apply` may not).
        import torch

        with torch.no_grad():
            if gradient.layout == torch.sparse_coo:
                gradient = gradient.coalesce()
                rows, values = gradient.indices()[0], gradient.values()
            else:
                # (a sum of absolute values: faster than `ne(0).any(1)`; NaN counts)
                rows = torch.nonzero(gradient.abs().sum(dim=1) != 0).squeeze(1)
                values = gradient.index_select(0, rows)
            values = values.to(variable.value.dtype)
            acc, table = accumulator.value, variable.value
            acc_rows = acc.index_select(0, rows) + values.square()
            new_rows = table.index_select(0, rows) - lr * values / (acc_rows + self.epsilon).sqrt()
            if constraint is not None:
                new_rows = ops.convert_to_tensor(constraint(new_rows))
            acc.index_copy_(0, rows, acc_rows)
            table.index_copy_(0, rows, new_rows.to(table.dtype))

    def _row_update_jax(self, gradient, variable, accumulator, constraint, lr):
        # JAX: the rows of `keras_gauss.models.GaussianModel`'s train step.
        # `unique` needs a static size: the padding slots get the row index
        # `len(table)`, which the gathers fill and the scatters drop.
        from jax import numpy as jnp
        from jax.ops import segment_sum

        from keras_gauss.models.row_lookups import materialized

        # The scatters read the gradient rows from memory: XLA must not fuse
        # the backward pass into `segment_sum` (see `materialized`).
        indices, values = materialized(gradient.indices, gradient.values)
        size = indices.shape[0]
        rows, positions = jnp.unique(indices, size=size,
                                     fill_value=variable.shape[0],
                                     return_inverse=True)
        values = segment_sum(values.astype(variable.dtype),
                             jnp.reshape(positions, (-1,)), num_segments=size)
        acc = accumulator.value
        table = variable.value
        acc_rows = acc.at[rows].get(mode="fill", fill_value=0) + jnp.square(values)
        new_rows = table.at[rows].get(mode="fill", fill_value=0) - lr * values / jnp.sqrt(
            acc_rows + self.epsilon)
        if constraint is not None:
            new_rows = constraint(new_rows)
        accumulator.assign(acc.at[rows].set(acc_rows, mode="drop"))
        variable.assign(table.at[rows].set(new_rows, mode="drop"))

    @property
    def learning_rate(self):
        return self._get_current_learning_rate()

    @learning_rate.setter
    def learning_rate(self, value):
        if is_number(value):  # a schedule's values are checked as it gives them
            check_number(value, "`learning_rate`", at_least=0)
        keras.optimizers.Optimizer.learning_rate.fset(self, value)

    def _get_current_learning_rate(self):
        rate = super()._get_current_learning_rate()
        if callable(self._learning_rate) and not isinstance(self._learning_rate,
                                                            keras.Variable):
            # A schedule: its value is checked at every step it is used.
            rate = checked_learning_rate(rate, self.iterations)
        return rate

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon,
            }
        )
        return config


_HIDING = threading.Lock()  # see `SparseAdagrad.apply`


class LearningRateError(ValueError):
    """A learning-rate schedule gave a value that is not finite and >= 0."""


def _bad_rate_message(rate, step):
    return (f"SparseAdagrad: the learning-rate schedule gave {rate} at step {step}; "
            "a learning rate must be finite and >= 0 (else every trained row turns NaN).")


def _raise_bad_rate(rate, step):
    raise LearningRateError(_bad_rate_message(float(rate), int(step)))


def checked_learning_rate(rate, step):
    """`rate`, a learning-rate schedule's value at `step`, checked: a NaN, an
    infinity or a negative rate raises `LearningRateError` (naming both)
    instead of turning the tables NaN.

    A plain number is checked at once; a tensor inside a compiled step is
    checked when the step runs, by an assertion (TensorFlow) or a host
    callback taken only on a bad value (JAX): one scalar comparison a step;
    on torch (eager) the tensor's value is read and checked.

    Example:

    >>> checked_learning_rate(0.1, 0)
    0.1
    >>> checked_learning_rate(float("nan"), 3)
    Traceback (most recent call last):
    keras_gauss.optimizers.sparse_adagrad.LearningRateError: SparseAdagrad: the learning-rate schedule gave nan at step 3; ...
    """
    if is_number(rate):
        if not (math.isfinite(rate) and rate >= 0):
            _raise_bad_rate(rate, step)
        return rate
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        if tf.executing_eagerly():
            value = float(rate)
            if not (math.isfinite(value) and value >= 0):
                _raise_bad_rate(value, step)
            return rate
        def bad():  # the message is formatted only on a bad value
            message = tf.strings.format(_bad_rate_message("{}", "{}"), [rate, step])
            with tf.control_dependencies([tf.debugging.Assert(False, [message])]):
                return tf.identity(rate)

        ok = tf.logical_and(tf.math.is_finite(rate), rate >= 0)
        return tf.cond(ok, lambda: tf.identity(rate), bad)
    if backend == "jax":
        import jax
        from jax import numpy as jnp

        if not isinstance(rate, jax.core.Tracer):
            value = float(rate)
            if not (math.isfinite(value) and value >= 0):
                _raise_bad_rate(value, step)
            return rate
        rate, step = jnp.asarray(rate), jnp.asarray(keras.ops.convert_to_tensor(step))
        ok = jnp.isfinite(rate) & (rate >= 0)
        return checked_in_jax_step(rate, ~ok, _raise_bad_rate, rate, step)
    if backend == "torch":  # eager: the value is at hand
        value = float(rate)
        if not (math.isfinite(value) and value >= 0):
            _raise_bad_rate(value, step)
    return rate


def _row_bounds(constraint):
    """`(max_norm, min, max)` of the kernels for the `GaussianEmbedding`
    constraints (or none), else None (other constraints: the reference)."""
    if constraint is None:
        return (0.0, -math.inf, math.inf)
    if type(constraint) is NormClip:
        return (constraint.max_norm, -math.inf, math.inf)
    if type(constraint) is VarianceClip:
        return (0.0, constraint.min_value, constraint.max_value)
    return None


def _row_constraint(variable):
    constraint = getattr(variable, "constraint", None)
    return constraint if getattr(constraint, "rowwise", False) else None


def _is_indexed_slices(value):
    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf

    return isinstance(value, tf.IndexedSlices)


def _is_row_gradient(value):
    if keras.backend.backend() != "jax":
        return False
    from keras_gauss.models.row_lookups import RowGradient

    return isinstance(value, RowGradient)


def _is_torch_sparse(value):
    if keras.backend.backend() != "torch":
        return False
    import torch

    return isinstance(value, torch.Tensor) and value.layout == torch.sparse_coo


def _is_torch_table(value):
    """A dense torch gradient of a table (2-D): updated by its non-zero rows."""
    if keras.backend.backend() != "torch":
        return False
    import torch

    return isinstance(value, torch.Tensor) and value.layout == torch.strided and value.ndim == 2


def _divisible(gradient):
    """`gradient`, a `tf.IndexedSlices` made divisible by a number: Keras's
    `apply` divides every gradient by `loss_scale_factor`, and an
    IndexedSlices has no `/` ("unsupported operand type(s) for /:
    'IndexedSlices' and 'float'"); other gradients as they are."""
    if not _is_indexed_slices(gradient):
        return gradient
    import tensorflow as tf

    class DivisibleSlices(tf.IndexedSlices):
        def __truediv__(self, scale):
            return tf.IndexedSlices(self.values / scale, self.indices, self.dense_shape)

    return DivisibleSlices(gradient.values, gradient.indices, gradient.dense_shape)


def _tf_variable(variable):
    return variable.value if isinstance(variable, keras.Variable) else variable
