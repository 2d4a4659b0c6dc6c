import functools

import keras
import numpy as np
from keras import ops

from keras_gauss import kernels
from keras_gauss.checks import INT32_MAX
from keras_gauss.checks import check_variance_range
from keras_gauss.checks import checked_in_jax_step
from keras_gauss.checks import tracing_for_tensorflow
from keras_gauss.constraints.norm_clip import NormClip
from keras_gauss.constraints.variance_clip import VarianceClip

COVARIANCES = ("diagonal", "spherical")


@keras.saving.register_keras_serializable(package="keras_gauss")
class GaussianEmbedding(keras.layers.Layer):
    """Maps integer ids to Gaussians `N(mu, Sigma)` with diagonal or
    spherical covariance.

    The layer holds two tables: `means`, shaped `(input_dim, output_dim)`, and
    `variances`, shaped `(input_dim, output_dim)` for `"diagonal"` covariance
    or `(input_dim, 1)` for `"spherical"` (one variance per row). Calling it on
    ids shaped `(...)` returns the pair `(mean, variance)`, both shaped
    `(..., output_dim)`; a spherical variance is broadcast.

    The variances are stored directly (no softplus or log), as in the paper,
    and kept inside `[min_variance, max_variance]` by a hard constraint; the
    means are kept inside the ball `||mu|| <= max_norm`. Both constraints are
    attached to the variables, so every Keras optimizer enforces them after
    each step. `keras_gauss.optimizers.SparseAdagrad` enforces them on the
    touched rows only, which keeps a step's cost independent of the
    vocabulary size.

    In a training step (`model.fit`) the lookups run a compiled gather where
    there is one (`keras_gauss.kernels`): on TensorFlow its gradient is a
    `tf.IndexedSlices` as `tf.gather`'s; on JAX's CPU a scatter-add kernel
    writes the table-shaped gradient (`keras_gauss.models.GaussianModel`
    hands `SparseAdagrad` the rows instead).

    An id outside `[0, input_dim)` fails the call, or the compiled step as
    it runs, with one line on every backend: `GaussianEmbedding 'NAME': ids
    must lie in [0, input_dim=N)` (TensorFlow: the gather's or an
    assertion's `InvalidArgumentError`, which adds the first id outside,
    `(id 12 outside [0, N))`, and in a graph (`fit`, `predict`) ends
    TensorFlow's "Graph execution error"; JAX in a jitted step: a host
    callback taken only on a bad id, or in a training step on CPU the
    compiled gather at no cost, inside a `jax.errors.JaxRuntimeError` (a
    `ValueError` where JAX's C++ dispatch ran the step), after which
    Keras has dropped the model's variable values: reload it; torch and
    eager JAX: `IndexError`). NumPy ids given to the layer are checked
    before Keras converts them (JAX without `jax_enable_x64` cuts int64 to
    32 bits); a model's `keras.Input(dtype="int32")` casts its data before
    the layer sees it, so there an int64 id from 2**31 on wraps and a float
    id is truncated, unchecked. On JAX the exported function of
    `model.export` (jax2tf, which cannot serialize that callback) does not
    fail: an id outside gives NaN rows there, never another row.

    Use two layers for separate word and context tables (the paper's corpus
    model) or call one layer on both sides for a shared table (required for
    hierarchies trained with KL, where separate tables let variances grow
    without bound).

    Defaults: means start uniform in `[-0.05, 0.05]` (like
    `keras.layers.Embedding`), variances start at 1. The bounds `C = 2`,
    `m = 0.05`, `M = 5` are wide enough for both energies at 50 dimensions;
    the paper leaves them open and the training pipelines set their own.

    Args:
        input_dim: size of the vocabulary (number of Gaussians), `> 0`;
            above 2**31 - 1 on JAX only with `jax_enable_x64` (64-bit ids).
        output_dim: dimension `d` of the embedding space, `> 0`.
        covariance: `"diagonal"` or `"spherical"`.
        mean_initializer: initializer of the means table.
        variance_initializer: initializer of the variances table; its values
            are clipped into `[min_variance, max_variance]` when built.
        max_norm: `C`, the bound on each mean's L2 norm, or `None` for no
            bound.
        min_variance: `m > 0`, the smallest variance (a normal number of
            the tables' dtype: at least 1.18e-38 in float32).
        max_variance: `M >= m`, the largest variance (finite in the
            tables' dtype).
        **kwargs: other `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Example:

    >>> import numpy as np
    >>> layer = GaussianEmbedding(1000, 50)
    >>> mean, var = layer(np.array([[3, 14], [15, 92]]))
    >>> mean.shape, var.shape
    (TensorShape([2, 2, 50]), TensorShape([2, 2, 50]))
    """

    def __init__(
        self,
        input_dim,
        output_dim,
        covariance="diagonal",
        mean_initializer="uniform",
        variance_initializer="ones",
        max_norm=2.0,
        min_variance=0.05,
        max_variance=5.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (("input_dim", input_dim), ("output_dim", output_dim)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise ValueError(
                    f"`{name}` must be a positive integer, got {value!r}."
                )
        if covariance not in COVARIANCES:
            raise ValueError(
                f"`covariance` must be one of {COVARIANCES}, got {covariance!r}."
            )
        _check_ids_fit(int(input_dim))
        self.input_dim = int(input_dim)  # a NumPy integer (`ids.max() + 1`) too
        self.output_dim = int(output_dim)
        self.covariance = covariance
        self.mean_initializer = _initializer(mean_initializer, "mean_initializer")
        self.variance_initializer = _initializer(variance_initializer, "variance_initializer")
        # NormClip validates `max_norm` (TypeError for non-numbers) before
        # it is converted to float.
        self.mean_constraint = None if max_norm is None else NormClip(max_norm)
        self.max_norm = None if max_norm is None else float(max_norm)
        try:
            self.variance_constraint = VarianceClip(min_variance, max_variance)
        except (TypeError, ValueError) as error:
            # Name this layer's arguments, not VarianceClip's.
            raise type(error)(
                f"Invalid `min_variance`={min_variance!r} / "
                f"`max_variance`={max_variance!r}: {error}"
            ) from None
        self.min_variance = self.variance_constraint.min_value
        self.max_variance = self.variance_constraint.max_value
        # A bound the table cannot hold would clip to 0 (1e-50 in float32:
        # zero variances, NaN energies) or to infinity.
        check_variance_range(self.min_variance, self.max_variance, self.variable_dtype,
                             ("`min_variance`", "`max_variance`"))
        # Sparse row updates and the id range check are not XLA friendly on
        # TensorFlow; JAX always compiles its steps (without jit every op
        # would run on its own).
        self.supports_jit = keras.backend.backend() == "jax"

    def build(self, input_shape=None):
        if self.built:
            return
        self.means = self.add_weight(
            shape=(self.input_dim, self.output_dim),
            initializer=self.mean_initializer,
            constraint=self.mean_constraint,
            name="means",
        )
        variance_columns = self.output_dim if self.covariance == "diagonal" else 1
        self.variances = self.add_weight(
            shape=(self.input_dim, variance_columns),
            initializer=self.variance_initializer,
            constraint=self.variance_constraint,
            name="variances",
        )
        # Start inside the constraints, whatever the initializers produced.
        self.variances.assign(self.variance_constraint(self.variances))
        if self.mean_constraint is not None:
            self.means.assign(self.mean_constraint(self.means))
        self._check_initialized()
        self.built = True

    def _check_initialized(self):
        """One `ValueError` for an initializer that gave NaN or inf (the
        clips keep a NaN); nothing to read where the build is traced."""
        for argument, table in (("mean_initializer", self.means),
                                ("variance_initializer", self.variances)):
            try:
                finite = bool(ops.all(ops.isfinite(table.value)))
            except TypeError:  # (a symbolic tensor: built inside a traced function)
                return
            if not finite:
                raise ValueError(
                    f"{self.__class__.__name__} '{self.name}': `{argument}` gave "
                    "non-finite values (NaN or inf); give one that yields finite numbers.")

    def __call__(self, *args, **kwargs):
        ids = args[0] if args else kwargs.get("ids")
        if isinstance(ids, (np.ndarray, np.generic)):
            self._check_numpy_ids(ids)
        else:
            self._require_dense(ids)
        return super().__call__(*args, **kwargs)

    def _require_dense(self, ids):
        """Raises one `TypeError` for ragged or sparse ids (TensorFlow's), which
        failed deep in the call ("object of type 'RaggedTensor' has no len()")."""
        ragged = getattr(ids, "ragged_rank", None) is not None
        if ragged or (getattr(ids, "indices", None) is not None
                      and getattr(ids, "dense_shape", None) is not None):
            fix = "ids.to_tensor()" if ragged else "tf.sparse.to_dense(ids)"
            raise TypeError(
                f"{self.__class__.__name__} '{self.name}' expects a dense tensor of ids, got "
                f"a {type(ids).__name__}: pad it first ({fix}).")

    def _check_numpy_ids(self, ids):
        """NumPy ids checked before Keras converts them: their dtype (JAX
        read strings as floats: "could not convert string to float"), and on
        JAX and torch their range, since JAX without `jax_enable_x64` cuts
        64-bit ids to 32 bits (2**32 + 3 read row 3) and torch has no uint64
        ("Unsupported dtype for PyTorch")."""
        if ids.dtype.kind not in "iu":
            raise TypeError(self._id_dtype_message(ids.dtype.name))
        if (keras.backend.backend() in ("jax", "torch") and ids.size
                and (ids.min() < 0 or ids.max() >= self.input_dim)):
            self._raise_out_of_range()

    def call(self, ids, training=None):
        ids = self._cast_ids(ids)
        kernel = kernels.get(training)
        rows = None
        if kernel is not None and keras.backend.backend() == "tensorflow":
            # The compiled gather checks the ids' range itself, with this
            # layer's message: no separate assertions in the step.
            rows = self._kernel_lookups(kernel, ids)
        if rows is None:
            ids = self._assert_in_range(ids, kernel)
            if keras.backend.backend() == "tensorflow":
                kernel = None
            rows = (self._lookup(self.means, ids, kernel),
                    self._lookup(self.variances, ids, kernel))
        mean, var = rows
        if self.covariance == "spherical":
            var = ops.broadcast_to(var, ops.shape(mean))
        return mean, var

    def _kernel_lookups(self, kernel, ids):
        """(mean, variance) rows by TensorFlow's compiled gather, which fails
        the step on an id outside the table with `_range_message`; None
        where the kernel does not cover the tables or the ids."""
        rows = []
        for table in (self.means, self.variances):
            found = kernel.lookup(table.value, ids, message=self._range_message())
            if found is None:
                return None
            rows.append(ops.cast(found, self.compute_dtype))
        return tuple(rows)

    def _lookup(self, table, ids, kernel=None):
        if keras.backend.backend() == "jax":
            return self._lookup_jax(table, ids, kernel)
        if keras.backend.backend() == "torch":
            return self._lookup_torch(table, ids)
        if keras.backend.backend() != "tensorflow":
            return ops.take(table, ids, axis=0)
        import tensorflow as tf

        # Gather straight from the resource variable: reading the whole
        # table into a tensor (what `ops.take` does) keeps a reference alive
        # that makes the optimizer's row scatter copy the entire table. In a
        # training step the kernel's gather, where there is one.
        from keras_gauss.models.row_lookups import materialized_gradient

        rows = None if kernel is None else kernel.lookup(table.value, ids)
        if rows is None:
            # Inside an XLA cluster, the gradient rows are materialized before
            # the optimizer's scatter sums them (`materialized_gradient`).
            rows = materialized_gradient(tf.gather(table.value, ids))
        return ops.cast(rows, self.compute_dtype)

    def _lookup_torch(self, table, ids):
        import torch

        from keras_gauss.models.row_lookups import TorchRowLookups

        # `embedding`, not `ops.take` (which reads id -1 as the last row): its
        # kernel checks the range as it gathers. In `GaussianModel`'s train
        # step (`TorchRowLookups`) the table's gradient is one row per id.
        try:
            rows = torch.nn.functional.embedding(ops.convert_to_tensor(ids).long(), table.value,
                                                 sparse=TorchRowLookups.active())
        except IndexError:
            raise IndexError(self._range_message()) from None
        return ops.cast(rows, self.compute_dtype)

    def _lookup_jax(self, table, ids, kernel):
        from keras_gauss.models.row_lookups import active_row_lookups

        # Inside `GaussianModel`'s train step the lookup is differentiated
        # row by row (see `keras_gauss.models.row_lookups`). In a training
        # step the gather (and its gradient, a scatter-add into the table's
        # shape) runs the compiled kernel where there is one: XLA's own
        # gathers and scatters on CPU cost more than the rest of the step.
        # The kernel fails the step on an id outside the table with this
        # layer's message (as TensorFlow's; `_assert_in_range` leaves it to it).
        take = None if kernel is None else functools.partial(
            kernel.lookup, message=self._range_message())
        lookups = active_row_lookups()
        if lookups is not None:
            rows = lookups.lookup(table, ids, take)
        else:
            rows = None if take is None else take(table.value, ids)
            if rows is None:
                rows = ops.take(table, ids, axis=0)
        return ops.cast(rows, self.compute_dtype)

    def _require_int_dtype(self, ids):
        dtype = keras.backend.standardize_dtype(ids.dtype)
        if "int" not in dtype:
            raise TypeError(self._id_dtype_message(dtype))
        return dtype

    def _id_dtype_message(self, dtype):
        return (f"{self.__class__.__name__} '{self.name}' expects integer ids, got dtype "
                f"{dtype}. Convert words to ids with a vocabulary lookup first.")

    def _cast_ids(self, ids):
        dtype = self._require_int_dtype(ids)
        if dtype in ("uint32", "uint64"):
            # int64, not int32: a uint64 2^32 + 3 must fail the range check,
            # not wrap to row 3 (uint64 >= 2^63 turns negative: caught too).
            ids = ops.cast(ids, "int64")
        elif dtype not in ("int32", "int64"):
            ids = ops.cast(ids, "int32")
        return ids

    def _range_message(self):
        return (f"{self.__class__.__name__} '{self.name}': ids must lie in "
                f"[0, input_dim={self.input_dim})")

    def _raise_out_of_range(self):
        raise IndexError(self._range_message())

    def _assert_in_range(self, ids, kernel=None):
        """`ids`, on TensorFlow behind assertions of their range; on JAX
        checked at once where they are values (an eager call), and inside a
        compiled step when it runs: by the `kernel`'s gather where it reads
        both tables (a training step on CPU), else by `checked_in_jax_step`
        (a host callback taken only on a bad id), or once a call where its
        steps are scanned (`RowLookups(defer_checks=True)`); while jax2tf
        converts the layer for `model.export`, ids outside read NaN rows
        instead."""
        if keras.backend.backend() == "jax":
            import jax
            from jax import numpy as jnp

            if isinstance(ids, jax.core.Tracer):
                if kernel is not None and all(kernel.gathers(table.value)
                                              for table in (self.means, self.variances)):
                    return ids  # the kernel's gather checks them, with this layer's message
                from keras_gauss.models.row_lookups import active_row_lookups

                ids = jnp.asarray(ids)
                outside = (ids < 0) | (ids >= self.input_dim)
                lookups = active_row_lookups()
                if lookups is not None and lookups.defer_checks:
                    # checked once a scanned call (`scanned_steps`), not by a
                    # `cond` a step (on a GPU each waits for the device)
                    lookups.checks.append((jnp.any(outside), self._raise_out_of_range))
                    return ids
                if tracing_for_tensorflow():
                    # jax2tf cannot serialize the check's callback: an id
                    # outside reads a NaN row (`jnp.take` fills), never
                    # another row (-1 would read the last).
                    return jnp.where(outside, self.input_dim, ids)
                return checked_in_jax_step(ids, jnp.any(outside), self._raise_out_of_range)
            values = np.asarray(ids)
            if values.size and (values.min() < 0 or values.max() >= self.input_dim):
                self._raise_out_of_range()
        if keras.backend.backend() == "tensorflow":
            ids = self._checked_in_tensorflow(ids)
        return ids

    def _checked_in_tensorflow(self, ids):
        """`ids` behind a check of their range that fails with the compiled
        gather's line, naming the first id outside (`_outside_message`):
        at once when eager, else by an assertion whose message is built
        only on a bad id (TensorFlow's "Graph execution error" then ends
        with that line, not with the ids' first values). Inside XLA, which
        compiles no string op, by TensorFlow's assertions."""
        import tensorflow as tf
        from tensorflow.python.framework import ops as tf_ops
        from tensorflow.python.ops import control_flow_util

        ids = tf.convert_to_tensor(ids)
        if control_flow_util.GraphOrParentsInXlaContext(tf_ops.get_default_graph()):
            message = self._range_message()
            checks = [tf.debugging.assert_non_negative(ids, message=message),
                      tf.debugging.assert_less(ids, tf.cast(self.input_dim, ids.dtype),
                                               message=message)]
            with tf.control_dependencies(checks):
                return tf.identity(ids)
        flat = tf.reshape(ids, [-1])
        outside = (flat < 0) | (flat >= tf.cast(self.input_dim, flat.dtype))
        if tf.executing_eagerly():
            if bool(tf.reduce_any(outside)):
                bad = int(flat[int(tf.argmax(tf.cast(outside, tf.int32)))])
                raise tf.errors.InvalidArgumentError(None, None, self._outside_message(bad))
            return ids

        def fail():
            bad = tf.gather(flat, tf.argmax(tf.cast(outside, tf.int32)))
            head, tail = self._outside_parts()
            line = tf.strings.join([head, tf.strings.as_string(bad), tail])
            with tf.control_dependencies([tf.debugging.Assert(False, [line])]):
                return tf.constant(False)

        checked = tf.cond(tf.reduce_any(outside), fail, lambda: tf.constant(True))
        with tf.control_dependencies([checked]):
            return tf.identity(ids)

    def _outside_message(self, bad):
        """The range error naming the id `bad`, as the compiled gathers say it."""
        head, tail = self._outside_parts()
        return f"{head}{bad}{tail}"

    def _outside_parts(self):
        return f"{self._range_message()} (id ", f" outside [0, {self.input_dim}))"

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape) + (self.output_dim,)
        return shape, shape

    def compute_output_spec(self, ids):
        self._require_int_dtype(ids)
        shape = tuple(ids.shape) + (self.output_dim,)
        return (keras.KerasTensor(shape, dtype=self.compute_dtype),
                keras.KerasTensor(shape, dtype=self.compute_dtype))

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "covariance": self.covariance,
                "mean_initializer": keras.initializers.serialize(
                    self.mean_initializer
                ),
                "variance_initializer": keras.initializers.serialize(
                    self.variance_initializer
                ),
                "max_norm": self.max_norm,
                "min_variance": self.min_variance,
                "max_variance": self.max_variance,
            }
        )
        return config


def _check_ids_fit(input_dim):
    """Raises `ValueError` where the backend cannot hold every id of a table
    of `input_dim` rows: JAX without 64-bit integers (`jax_enable_x64`)
    turns int64 ids into int32, so ids from 2**31 on would wrap (2**32 + 3
    to row 3) before the layer sees them. (TensorFlow and torch keep int64
    ids: their range checks see them whole.)"""
    if input_dim <= INT32_MAX or keras.backend.backend() != "jax":
        return
    import jax

    if not jax.config.jax_enable_x64:
        raise ValueError(
            f"`input_dim`={input_dim:,}: ids above 2**31 - 1 need 64-bit integers, which "
            "JAX has only with jax_enable_x64 (JAX_ENABLE_X64=1, or "
            "jax.config.update('jax_enable_x64', True) before any array is made); without "
            "it they would be cut to 32 bits.")


def _initializer(identifier, argument):
    """`keras.initializers.get(identifier)`, its error naming `argument`."""
    try:
        return keras.initializers.get(identifier)
    except ValueError as error:
        raise ValueError(f"`{argument}`: {error}") from None
