"""Keras callbacks: `ProjectConstraints` (hard constraints on chosen
variables) and `ProgressLogger` (a progress bar on a terminal, one line per
epoch otherwise). `Phase` prints one line for a long
step. The classes load on first use (`Phase` needs no Keras)."""

import importlib

_EXPORTS = {
    "ProgressLogger": "progress",
    "ProjectConstraints": "project_constraints",
    "Phase": "progress_phase",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
