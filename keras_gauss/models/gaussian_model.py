import threading

import keras

from keras_gauss.checks import checked_in_jax_step
from keras_gauss.models.row_lookups import RowGradient
from keras_gauss.models.row_lookups import RowLookups
from keras_gauss.models.row_lookups import TorchRowLookups
from keras_gauss.models.row_lookups import materialized


@keras.saving.register_keras_serializable(package="keras_gauss")
class GaussianModel(keras.Model):
    """A functional `keras.Model` whose JAX train step updates touched rows only.

    Built like any functional model, `GaussianModel(inputs, outputs)`. On the
    TensorFlow backend it is a plain functional model (the gradient of a
    `GaussianEmbedding` lookup is already a `tf.IndexedSlices`). On the JAX
    backend, with an optimizer that takes row gradients
    (`keras_gauss.optimizers.SparseAdagrad`), `train_step` differentiates
    the gathered rows of every `GaussianEmbedding` table instead of the
    tables, so a step reads and writes only the rows of its batch, as on
    TensorFlow: its cost does not grow with the vocabulary. Other
    optimizers (Keras's own), and optimizers with gradient clipping,
    accumulation, EMA or loss scaling, get the same row gradients summed
    into dense arrays of the tables' shapes (what Keras's own step would
    hand them). The row gradients are materialized before any scatter sums
    them (`keras_gauss.models.row_lookups.materialized`), so XLA cannot fuse
    the backward pass into the scatter (on a GPU that fusion serializes on
    frequent ids). The tables must be read only through their
    `GaussianEmbedding` lookups (true of every model keras-gauss builds).
    On the torch backend, with an optimizer that takes row gradients, the
    lookups of the train step are sparse embedding lookups
    (`keras_gauss.models.row_lookups.TorchRowLookups`): the tables'
    gradients are sparse rows, which `SparseAdagrad` applies row by row.
    On JAX, a step that fails as it runs (an id outside a table) fails
    `fit` or `evaluate` at the end of that epoch at the latest (Keras's
    logs would drop the error, and the next read of the model raise it);
    the model's values are then lost, and a later `fit`, `evaluate` or
    `predict` says so.
    With `steps_per_execution=K` on a JAX GPU or TPU, the K steps of a call
    run in one compiled `lax.scan` (`scanned_steps`), not as K dispatches;
    `model.scan_steps = True` or `False` (an attribute, not saved) forces
    it on or off (the default, `None`: off on the CPU, where a scanned call
    measured 1.3-1.8x slower a step).

    The saved model (`model.save("m.keras")`) loads on any backend.

    Args:
        inputs, outputs, name, ...: as for a functional `keras.Model`.

    Example:

    >>> from keras_gauss.layers import GaussianEmbedding
    >>> ids = keras.Input((), dtype="int32")
    >>> mean, var = GaussianEmbedding(1000, 50)(ids)
    >>> model = GaussianModel(ids, mean)
    >>> model.count_params()  # 1000 x 50 means and variances
    100000
    """

    def train_step(self, *args, **kwargs):
        if keras.backend.backend() == "torch" and _takes_row_gradients(self.optimizer):
            with TorchRowLookups():  # the tables' gradients: sparse rows
                return super().train_step(*args, **kwargs)
        if keras.backend.backend() != "jax" or self.optimizer is None:
            return super().train_step(*args, **kwargs)
        return self._row_train_step(*args, **kwargs)

    def compile_from_config(self, config):
        # A model compiled on JAX records `jit_compile=True` (Keras saves
        # "auto" resolved); where its layers cannot be compiled with XLA (on
        # TensorFlow: the compiled kernels), Keras goes on without it but
        # warns "Model doesn't support `jit_compile=True`" at every load of
        # a run trained on JAX. Going on without it is the same, unwarned.
        from keras.src.trainers.trainer import model_supports_jit

        if isinstance(config, dict) and config.get("jit_compile") is True \
                and not model_supports_jit(self):
            config = {**config, "jit_compile": False}
        return super().compile_from_config(config)

    def get_metrics_result(self):
        # On JAX a step that fails as it runs (an id outside a table: the
        # compiled gather's or the range check's error) hands its error to
        # every output, the metrics' values among them, and Keras's logs
        # drop it where they turn those into floats (`pythonify_logs`):
        # `fit` and `evaluate` then returned as if all went well and the
        # next read of the model raised. Waiting for the values here (fit
        # reads them at each epoch's end anyway) raises it inside them.
        results = super().get_metrics_result()
        if keras.backend.backend() == "jax":
            import jax

            jax.block_until_ready(results)
        return results

    def fit(self, *args, **kwargs):
        return self._guarded(super().fit, *args, **kwargs)

    def evaluate(self, *args, **kwargs):
        return self._guarded(super().evaluate, *args, **kwargs)

    def predict(self, *args, **kwargs):
        return self._guarded(super().predict, *args, **kwargs)

    def _guarded(self, call, *args, **kwargs):
        """`call` (Keras's `fit`, `evaluate` or `predict`) with, on JAX, one
        line for a failed step, and one for a model that lost its values.

        A step that fails on JAX (an id outside a table) takes the model's
        values with it: Keras hands them to the compiled step (donated) and
        detaches them from the variables while it trains; a step that
        failed as it ran leaves its error in them instead. Such a model's
        next `fit`, `evaluate` or `predict` said "'NoneType' object is not
        callable", "Array has been deleted" or the old step's error again;
        it now says the values are lost, and why. A host check's failure
        (22 lines of the callback's traceback) is its last line."""
        if keras.backend.backend() != "jax":
            return call(*args, **kwargs)
        import jax

        self._check_values(jax)
        try:
            return call(*args, **kwargs)
        except jax.errors.JaxRuntimeError as error:
            self._failure = _failure_line(error)
            if "CpuCallback error" in str(error):
                raise ValueError(self._failure.split(": ", 1)[-1]) from None
            raise
        except Exception as error:
            self._failure = _failure_line(error)
            raise

    def _check_values(self, jax):
        # Keras detaches a variable by setting both to None (a deferred one
        # keeps its initializer); a donated array is deleted.
        values = [(getattr(v, "_value", 0), getattr(v, "_initializer", 0))
                  for v in self.variables]
        lost = any(value is None and initializer is None
                   or isinstance(value, jax.Array) and value.is_deleted()
                   for value, initializer in values)
        reason = getattr(self, "_failure", None)
        if not lost:
            try:
                jax.block_until_ready([v.value for v in self.variables])
            except jax.errors.JaxRuntimeError as error:
                lost, reason = True, _failure_line(error)
        if lost:
            raise RuntimeError(
                f"model '{self.name}' lost its values in a step that failed earlier"
                f"{f' ({reason})' if reason else ''}; build or load it again "
                "(keras.models.load_model, or a run's checkpoint).")

    # Whether `steps_per_execution` steps run in one `lax.scan` on JAX:
    # None (on an accelerator, not on the CPU), True or False.
    scan_steps = None

    def make_train_function(self, force=False):
        # On JAX, Keras runs `steps_per_execution` steps as a Python loop of
        # single compiled steps (one dispatch each); here they run in one
        # compiled `lax.scan` (`scanned_steps`).
        if (keras.backend.backend() != "jax" or self.steps_per_execution <= 1
                or self.run_eagerly or not self.jit_compile
                or keras.distribution.distribution() is not None
                or not _scans(self.scan_steps)):
            return super().make_train_function(force)
        if self.train_function is not None and not force:
            return
        self.train_function = scanned_steps(self.train_step, self.steps_per_execution)

    def _row_train_step(self, state, data):
        import jax
        from jax import numpy as jnp
        from keras.src.trainers.data_adapters import data_adapter_utils

        trainable, non_trainable, optimizer_values, metrics_values = state
        x, y, sample_weight = data_adapter_utils.unpack_x_y_sample_weight(data)
        kwargs = {"training": True} if self._call_has_training_arg else {}

        # Inside `scanned_steps`' scan the layers' id checks are left to it
        # (`_ScannedChecks`): no `cond` a step.
        scanned = _ScannedChecks.active()

        # 1. Which tables are looked up, with ids of what shapes (trace only).
        recorder = RowLookups()

        def forward(trainable_values):
            with recorder:
                return self.stateless_call(trainable_values, non_trainable, x, **kwargs)[0]

        jax.eval_shape(forward, trainable)
        if not recorder.records:
            return super().train_step(state, data)
        index = {id(v): i for i, v in enumerate(self.trainable_variables)}
        lookups = [(index[id(v)], ids.shape, v) for v, ids in recorder.records]
        table_indices = sorted({i for i, _, _ in lookups})
        dense_indices = [i for i in range(len(trainable)) if i not in table_indices]
        offsets = [jnp.zeros(tuple(shape) + (v.shape[-1],), v.dtype)
                   for _, shape, v in lookups]

        # 2. Differentiate the loss in the looked-up rows (and dense variables).
        def loss_fn(offsets, dense_values):
            values = list(trainable)
            for i, value in zip(dense_indices, dense_values):
                values[i] = value
            rows = RowLookups(offsets, defer_checks=scanned is not None)
            with rows:
                loss, aux = self.compute_loss_and_updates(
                    values, non_trainable, metrics_values, x, y, sample_weight,
                    training=True, optimizer_variables=optimizer_values)
            if [id(v) for v, _ in rows.records] != [id(v) for *_, v in lookups]:
                raise RuntimeError("GaussianModel: the lookups changed between traces.")
            raisers.extend(raise_error for _, raise_error in rows.checks)
            return loss, (aux, [ids for _, ids in rows.records],
                          [bad for bad, _ in rows.checks])

        dense_values = [trainable[i] for i in dense_indices]
        raisers = []
        (_, (aux, ids_list, bad)), (row_grads, dense_grads) = jax.value_and_grad(
            loss_fn, argnums=(0, 1), has_aux=True)(offsets, dense_values)
        unscaled_loss, y_pred, non_trainable, metrics_values = aux
        if scanned is not None:
            scanned.add(bad, raisers)

        # 3. One RowGradient per table (all its lookups), materialized;
        # summed into a dense array for optimizers that take no rows.
        grads = [None] * len(trainable)
        for i, g in zip(dense_indices, dense_grads):
            grads[i] = g
        rows = _takes_row_gradients(self.optimizer)
        for i in table_indices:
            variable = self.trainable_variables[i]
            parts = [(ids, g) for (j, _, _), ids, g in zip(lookups, ids_list, row_grads)
                     if j == i]
            columns = variable.shape[-1]
            indices, values = materialized(
                jnp.concatenate([jnp.reshape(ids, (-1,)) for ids, _ in parts]),
                jnp.concatenate([jnp.reshape(g, (-1, columns)) for _, g in parts]))
            gradient = RowGradient(indices, values, tuple(variable.shape))
            grads[i] = gradient if rows else dense_gradient(gradient, variable.dtype)
        trainable, optimizer_values = self.optimizer.stateless_apply(
            optimizer_values, grads, trainable)
        logs, metrics_values = self._update_metrics_variables(
            metrics_values, unscaled_loss, x, y, y_pred, sample_weight)
        return logs, (trainable, non_trainable, optimizer_values, metrics_values)


def _scans(setting):
    if setting is not None:
        return bool(setting)
    import jax

    return jax.default_backend() != "cpu"


class _ScannedChecks:
    """The id checks of the steps that `scanned_steps` traces in its scan:
    the layers' traced `bad` flags and the functions that raise their
    errors, in the order of the step's lookups. The scan carries the first
    failed check and the call checks it once, after its steps (on a GPU a
    `lax.cond` in every step waits for the device at each)."""

    _stack = threading.local()

    def __init__(self):
        self.bad, self.raisers = [], []

    def add(self, bad, raisers):
        self.bad.extend(bad)
        self.raisers.extend(raisers)

    def first_failed(self):
        """A traced int32: 1 + the index of the first check that failed, else 0."""
        from jax import numpy as jnp

        failed = jnp.int32(0)
        for i in reversed(range(len(self.bad))):
            failed = jnp.where(self.bad[i], jnp.int32(i + 1), failed)
        return failed

    @classmethod
    def active(cls):
        return getattr(cls._stack, "checks", None)

    def __enter__(self):
        self._previous = _ScannedChecks.active()
        _ScannedChecks._stack.checks = self
        return self

    def __exit__(self, *exc):
        _ScannedChecks._stack.checks = self._previous
        return False


def scanned_steps(train_step, steps):
    """Keras's JAX `train_function` for `steps` steps a call, the steps in one
    compiled `lax.scan` (JAX).

    `iterator_step(state, iterator) -> (logs, state)` takes up to `steps`
    batches from `iterator` (Keras's epoch iterator: it has counted them
    already, so callbacks, `fit`'s step numbers and checkpoints are those
    of single steps) and runs `train_step(state, batch)` on each in turn,
    carrying the state, inside one jitted function (donating the state);
    the logs are the last step's. The layers' id checks run once a call,
    after its steps (`_ScannedChecks`): an id outside a table in any step
    fails the call with the layer's line. Batches of differing shapes (a
    smaller last batch) run one compiled step each; a shorter last call
    compiles once more.

    Example:

    >>> model.compile(optimizer=SparseAdagrad(0.1), loss=MaxMarginRanking(),
    ...               steps_per_execution=32)  # doctest: +SKIP
    >>> model.fit(x, y, batch_size=16384)  # 32 steps a compiled call  # doctest: +SKIP
    """
    import jax
    from jax import numpy as jnp

    def scan(state, batches):
        stacked = jax.tree.map(lambda *parts: jnp.stack(parts), *batches)
        raisers = []

        def body(carry, batch):
            state, failed = carry
            with _ScannedChecks() as checks:
                logs, new_state = train_step(state, batch)
            raisers[:] = checks.raisers
            # the carry keeps its types (a weakly typed scalar stays so)
            new_state = jax.tree.map(lambda new, old: jnp.asarray(new, old.dtype)
                                     if hasattr(old, "dtype") else new, new_state, state)
            failed = jnp.where(failed > 0, failed, checks.first_failed())
            return (new_state, failed), logs

        (state, failed), logs = jax.lax.scan(body, (state, jnp.int32(0)), stacked)
        logs = jax.tree.map(lambda value: value[-1], logs)
        if raisers:  # the steps' id checks, once: a failed one fails the call
            leaves, tree = jax.tree.flatten(logs)
            leaves[0] = checked_in_jax_step(
                leaves[0], failed > 0, lambda failed: raisers[int(failed) - 1](), failed)
            logs = jax.tree.unflatten(tree, leaves)
        return logs, state

    many = jax.jit(scan, donate_argnums=0)
    one = jax.jit(train_step, donate_argnums=0)

    def shapes(batch):
        return jax.tree.map(lambda value: (getattr(value, "shape", None),
                                           str(getattr(value, "dtype", type(value)))), batch)

    def iterator_step(state, iterator):
        batches = [next(iterator)]
        try:
            while len(batches) < steps:
                batches.append(next(iterator))
        except StopIteration:
            pass
        if len(batches) > 1 and all(shapes(b) == shapes(batches[0]) for b in batches):
            return many(state, tuple(batches))
        for batch in batches:
            logs, state = one(state, batch)
        return logs, state

    iterator_step.scan = many  # the jitted scan: `scan(state, batches)`
    return iterator_step


def dense_gradient(gradient, dtype):
    """The dense array of a `RowGradient` (JAX): its rows summed into zeros
    of its `dense_shape` (ids outside the table dropped), as the gradient of
    a `take` would be.

    Example:

    >>> import numpy as np
    >>> g = RowGradient(np.array([1, 1]), np.ones((2, 3), "float32"), (4, 3))
    >>> dense_gradient(g, "float32")[1].tolist()
    [2.0, 2.0, 2.0]
    """
    from jax import numpy as jnp

    zeros = jnp.zeros(gradient.dense_shape, dtype)
    return zeros.at[gradient.indices].add(gradient.values.astype(dtype), mode="drop")


def _takes_row_gradients(optimizer):
    """Whether `optimizer.apply` accepts `RowGradient`s unchanged."""
    if not getattr(optimizer, "supports_row_gradients", False):
        return False
    return not (
        optimizer.clipnorm or optimizer.clipvalue or optimizer.global_clipnorm
        or optimizer.gradient_accumulation_steps or optimizer.use_ema
        or optimizer.loss_scale_factor is not None
    )


def _failure_line(error):
    """The line that says why a JAX step failed: past JAX's repeated
    "Error dispatching computation: " prefixes, or a host callback's
    traceback's last line."""
    text = str(error).strip()
    if "CpuCallback error" in text:
        return text.splitlines()[-1].strip()
    text = text.split("Error dispatching computation: ")[-1]
    return text.splitlines()[0] if text else type(error).__name__
