"""Best-epoch selection and early stopping on a validation score.

`BestEpoch` scores the tables at the end of every epoch, keeps a copy
of the best epoch's weights and asks training to stop after `patience`
epochs without improvement. Its state (the scores so far and the best
weights) travels with the run's checkpoints (`BestEpoch.wrap`), so a
killed and resumed run selects the same epoch, bit for bit.

Example: stop after two epochs without improvement.

>>> best = BestEpoch(patience=2)
>>> [best.update(epoch, score, [np.full(2, epoch)]) for epoch, score in
...  enumerate([0.5, 0.7, 0.6, 0.69])]
[False, False, False, True]
>>> best.best_epoch, best.best_score, best.weights[0].tolist()
(1, 0.7, [1, 1])
"""

from __future__ import annotations

import math

import numpy as np

from keras_gauss import energies
from keras_gauss.metrics import best_f1
from keras_gauss.metrics import threshold_classification

__all__ = ["BestEpoch", "monitor_of", "validation_scorer"]

_PREFIX = "best"


class BestEpoch:
    """Keeps the weights of the epoch with the best validation score; stops on a plateau.

    Args:
        patience: epochs without improvement after which training stops
            (`None`: never stop early, only select).
        min_delta: an epoch improves on the best only by more than this.
        monitor: the score's name (recorded in the summary).
        score: `(means, variances, epoch) -> float`, the validation score
            (higher is better) of a table's means and variances (`(n, d)`
            each) after epoch `epoch` (counting from 0), used by `callback`
            and by the native engine.
        latest_on_tie: an epoch as good as the best replaces it (for a
            score on few pairs, where later, better-trained epochs tie
            with the first perfect one; default False: the first stays).

    Attributes:
        best_epoch: the best epoch so far (counting from 0), or -1.
        best_score: its score (`-inf` before the first epoch).
        weights: copies of the best epoch's weights (a list of arrays).
        history: every epoch's score, in order.
        stopped_epoch: the epoch after which training was stopped, or `None`.
    """

    def __init__(self, patience=None, min_delta=0.0, monitor="val_f1", score=None,
                 latest_on_tie=False):
        if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int)
                                     or patience < 1):
            raise ValueError(f"--patience must be an integer >= 1, got {patience!r}.")
        if not (isinstance(min_delta, (int, float)) and math.isfinite(min_delta)
                and min_delta >= 0):
            raise ValueError(f"min_delta must be a finite number >= 0, got {min_delta!r}.")
        self.patience = patience
        self.min_delta = float(min_delta)
        self.monitor = monitor
        self.score = score
        self.latest_on_tie = latest_on_tie
        self.best_epoch = -1
        self.best_score = -math.inf
        self.weights = None
        self.history: list[float] = []
        self.stopped_epoch = None

    def update(self, epoch, score, weights):
        """Records epoch `epoch`'s `score` (higher is better) and, if it is the
        best so far, copies of `weights`; returns True when training should stop."""
        score = float(score)
        if not math.isfinite(score):
            score = -math.inf  # a NaN epoch is never the best
        self.history.append(score)
        if (self.best_epoch < 0 or score > self.best_score + self.min_delta
                or (self.latest_on_tie and score >= self.best_score)):
            self.best_epoch, self.best_score = int(epoch), score
            self.weights = [np.array(w, copy=True) for w in weights]
        stop = self.patience is not None and epoch - self.best_epoch >= self.patience
        if stop:
            self.stopped_epoch = int(epoch)
        return stop

    def summary(self):
        """What the run records: `{"monitor", "best_epoch", "best_score", "epochs_trained",
        "stopped_early", "patience", "history"}` (epochs counted from 1; a
        non-finite score is `None`)."""
        return {"monitor": self.monitor, "best_epoch": self.best_epoch + 1,
                "best_score": _finite(self.best_score), "epochs_trained": len(self.history),
                "stopped_early": self.stopped_epoch is not None, "patience": self.patience,
                "history": [_finite(s) for s in self.history]}

    # --- checkpoints -------------------------------------------------------------

    def state(self):
        """The JSON-able part of the state (for a checkpoint)."""
        return {"best_epoch": self.best_epoch, "best_score": _finite(self.best_score),
                "history": [_finite(s) for s in self.history]}

    def arrays(self):
        """The best weights as checkpoint arrays `best/i`."""
        return {f"{_PREFIX}/{i}": w for i, w in enumerate(self.weights or [])}

    def restore(self, state, arrays):
        """Continues from a checkpoint's `state["selection"]` and its `best/i` arrays."""
        state = state or {}
        self.best_epoch = int(state.get("best_epoch", -1))
        score = state.get("best_score", -math.inf)
        self.best_score = -math.inf if score is None else float(score)
        self.history = [(-math.inf if s is None else float(s)) for s in state.get("history", [])]
        keys = sorted((k for k in arrays if k.startswith(_PREFIX + "/")),
                      key=lambda k: int(k.rsplit("/", 1)[1]))
        self.weights = [np.array(arrays[k], copy=True) for k in keys] or None

    def wrap(self, checkpointer):
        """`checkpointer` (a `keras_gauss.checkpoint.Checkpointer`) saving this
        selection's state with each checkpoint: `state["selection"]` and the
        arrays `best/i`."""
        return _Saving(checkpointer, self)

    # --- Keras -------------------------------------------------------------------

    def callback(self, model, trainer=None):
        """A Keras callback: at each epoch's end, `self.score` of the `"nodes"`
        table of `model` decides;
        `trainer.stop_training` (default `model`'s) is set when training should stop.

        Args:
            model: the model whose `weights` are kept.
            trainer: the model `fit` runs, if not `model`.
        """
        import keras

        selection = self
        fitted = model if trainer is None else trainer

        class Select(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                sync = getattr(fitted, "jax_state_sync", None)
                if sync is not None:  # JAX's fit holds the values between epochs
                    sync()
                weights = [w.numpy() for w in model.weights]
                table = model.get_layer("nodes")
                means = table.means.numpy()
                variances = np.broadcast_to(table.variances.numpy(), means.shape)
                if selection.update(epoch, selection.score(means, variances, epoch), weights):
                    fitted.stop_training = True

        return Select()

    def restore_best(self, model):
        """Assigns the best epoch's weights to `model` (no-op before any epoch)."""
        if self.weights is not None:
            for variable, value in zip(model.weights, self.weights):
                variable.assign(value)


def _finite(score):
    return score if math.isfinite(score) else None


class _Saving:
    """A `Checkpointer` whose checkpoints carry a `BestEpoch`'s state."""

    def __init__(self, checkpointer, selection):
        self.checkpointer = checkpointer
        self.selection = selection

    def due(self):
        return self.checkpointer.due()

    def save(self, position, arrays):
        self.checkpointer.save({**position, "selection": self.selection.state()},
                               {**arrays, **self.selection.arrays()})

    def wait(self):
        self.checkpointer.wait()


def monitor_of(method):
    """The validation score a split's runs select on: `"val_f1"` for the
    `"ganea"` and given splits (their protocol's figure), else `"val_accuracy"`."""
    return "val_f1" if method in ("ganea", "given") else "val_accuracy"


def validation_scorer(split, monitor, generality=0.0, energy=energies.KL.name):
    """`(means, variances, epoch=None) -> float`: the validation F1 or
    accuracy of a hierarchy table on `split` (its threshold chosen on the
    same pairs), scored by the run's energy (`generality`, `energy`, see
    `keras_gauss.hierarchy.evaluate.edge_scores`); `epoch` is not used.

    Example:

    >>> score = validation_scorer(split, "val_f1")  # doctest: +SKIP
    >>> score(means, variances)  # doctest: +SKIP
    0.91
    """
    # Deliberately lazy: evaluate imports NLTK (closure -> wordnet); `--help` stays light.
    from keras_gauss.hierarchy.evaluate import kl_scorer

    labels = np.r_[np.ones(len(split.val), bool), np.zeros(len(split.val_neg), bool)]

    def score(means, variances, epoch=None):
        means = np.asarray(means)
        variances = np.broadcast_to(np.asarray(variances), means.shape)
        if not (np.isfinite(means).all() and np.isfinite(variances).all()):
            return -math.inf
        scorer = kl_scorer(means, variances, generality, energy)
        pos, neg = scorer(split.val), scorer(split.val_neg)
        if monitor == "val_f1":
            return best_f1(labels, np.r_[pos, neg])[0]
        return threshold_classification(pos, neg, pos[:0], neg[:0])["val_accuracy"]

    return score
