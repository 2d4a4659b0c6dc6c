"""Keras callbacks: `ProjectConstraints` (hard constraints on chosen
variables) and `ProgressLogger` (a progress bar on a terminal, one line per
epoch otherwise). `FiniteLoss` stops training on a non-finite loss. `Phase` prints one line for a long
step. The classes load on first use (`Phase` needs no Keras)."""

from keras_gauss._lazy import lazy_exports

_EXPORTS = {
    "ProgressLogger": "progress_logger",
    "ProjectConstraints": "project_constraints",
    "Phase": "progress",
    "FiniteLoss": "finite_loss",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
