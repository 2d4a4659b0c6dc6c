import keras


class ProjectConstraints(keras.callbacks.Callback):
    """Enforces hard constraints on chosen variables during `model.fit`.

    For tables that were built without a constraint (a plain
    `keras.layers.Embedding`, a pretrained table, or a `GaussianEmbedding`
    whose bounds should change for one run), this callback attaches the
    given constraints to the variables for the duration of the run and
    retraces the train step, so the optimizer projects after **every**
    step, also the steps that `model.fit` runs inside one call when
    `steps_per_execution > 1` (a callback that projected in
    `on_train_batch_end` would only see every k-th step). With
    `keras_gauss.optimizers.SparseAdagrad` and a row-wise constraint
    (`NormClip`, `VarianceClip`) only the touched rows are projected.

    The variables are projected once when training begins, so the run
    starts feasible, and their previous constraints are restored when it
    ends.

    Args:
        constraints: a dict mapping variable paths such as
            `"words/means"` (see `model.variables[i].path`) to constraint
            objects. (Keras variables are not hashable, so they cannot be
            the keys.)

    Example:

    >>> import numpy as np
    >>> from keras_gauss.constraints import NormClip
    >>> ids = keras.Input((1,), dtype="int32")
    >>> rows = keras.layers.Embedding(4, 2, name="words",
    ...     embeddings_initializer=keras.initializers.Constant(3.0))(ids)
    >>> model = keras.Model(ids, keras.layers.Dense(1)(keras.layers.Flatten()(rows)))
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> clip = ProjectConstraints({"words/embeddings": NormClip(2.0)})
    >>> _ = model.fit(np.arange(4)[:, None], np.zeros(4), verbose=0, callbacks=[clip])
    >>> table = model.get_layer("words").embeddings.numpy()
    >>> np.linalg.norm(table, axis=1) <= 2.0  # the rows started at norm 4.24
    array([ True,  True,  True,  True])
    """

    def __init__(self, constraints):
        super().__init__()
        if not isinstance(constraints, dict) or not constraints:
            raise ValueError(
                "`constraints` must be a non-empty dict mapping variable paths "
                f"to constraints, got {constraints!r}."
            )
        for key, constraint in constraints.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"ProjectConstraints keys are variable paths (str), got "
                    f"{key!r}; use `variable.path`."
                )
            if not callable(constraint):
                raise TypeError(
                    f"The constraint for {key!r} is not callable: {constraint!r}."
                )
        self.constraints = constraints
        self._saved = []

    def _resolve(self):
        by_path = {v.path: v for v in self.model.variables}
        unknown = [path for path in self.constraints if path not in by_path]
        if unknown:
            raise ValueError(
                f"ProjectConstraints: the model has no variable {unknown[0]!r}. "
                f"Known paths: {sorted(by_path)}."
            )
        return [(by_path[path], c) for path, c in self.constraints.items()]

    def on_train_begin(self, logs=None):
        self._saved = []
        for variable, constraint in self._resolve():
            self._saved.append((variable, variable.constraint))
            variable.constraint = constraint
            variable.assign(constraint(variable))
        self.model.make_train_function(force=True)

    def on_train_end(self, logs=None):
        for variable, previous in self._saved:
            variable.constraint = previous
        self._saved = []
        # The traced step projects; let the next run trace its own.
        self.model.train_function = None
