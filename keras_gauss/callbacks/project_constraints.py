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

    >>> table = keras.layers.Embedding(10_000, 50, name="words")
    >>> ...
    >>> model.fit(ds, callbacks=[ProjectConstraints({"words/embeddings":
    ...                                             NormClip(2.0)})])
    """

    def __init__(self, constraints):
        super().__init__()
        if not isinstance(constraints, dict) or not constraints:
            raise ValueError(
                "`constraints` must be a non-empty dict mapping variables or "
                f"variable paths to constraints, got {constraints!r}."
            )
        for key, constraint in constraints.items():
            if not callable(constraint):
                raise TypeError(
                    f"The constraint for {key!r} is not callable: {constraint!r}."
                )
        self.constraints = constraints
        self._saved = []

    def _resolve(self):
        by_path = {v.path: v for v in self.model.variables}
        resolved = []
        for key, constraint in self.constraints.items():
            if isinstance(key, str):
                if key not in by_path:
                    raise ValueError(
                        f"ProjectConstraints: the model has no variable {key!r}. "
                        f"Known paths: {sorted(by_path)}."
                    )
                key = by_path[key]
            resolved.append((key, constraint))
        return resolved

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
