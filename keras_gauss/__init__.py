"""keras-gauss: Gaussian embeddings (Vilnis & McCallum, ICLR 2015) for Keras 3.

Words or concepts are Gaussians `N(mu, Sigma)` with diagonal or spherical
covariance, compared by the log expected-likelihood kernel (symmetric) or by
KL divergence (asymmetric, for entailment), and trained with a max-margin
ranking loss under hard constraints on means and variances.
"""

import os

# TensorFlow's C++ start-up chatter (CPU features) is noise for our users;
# errors still show. Set TF_CPP_MIN_LOG_LEVEL yourself to override.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# OpenMP threads (torch's CPU ops) that wait by sleeping, not spinning: on a
# CPU shared with other work, spinning threads made every torch op of a
# train step wait on descheduled ones (`benchmarks/fit_speed.py --backends
# torch`: 30x slower steps at a load of 3 per core). Read when torch loads:
# import keras_gauss before Keras. Set OMP_WAIT_POLICY yourself to override.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# The public names load on first use (PEP 562), so `import keras_gauss`, its
# subpackages `keras_gauss.hierarchy` and `keras_gauss.pipelines`, and the
# `keras-gauss` command start without importing TensorFlow or Keras.
_EXPORTS = {
    "ContainmentEnergy": "keras_gauss.layers",
    "ELEnergy": "keras_gauss.layers",
    "GaussianModel": "keras_gauss.models",
    "GaussianEmbedding": "keras_gauss.layers",
    "GaussianEnergy": "keras_gauss.layers",
    "KLEnergy": "keras_gauss.layers",
    "MaxMarginRanking": "keras_gauss.losses",
    "NormClip": "keras_gauss.constraints",
    "ProjectConstraints": "keras_gauss.callbacks",
    "RowConstraint": "keras_gauss.constraints",
    "Run": "keras_gauss.runs",
    "SparseAdagrad": "keras_gauss.optimizers",
    "ThresholdedDivergence": "keras_gauss.losses",
    "VarianceClip": "keras_gauss.constraints",
    "load_run": "keras_gauss.runs",
}

__version__ = "0.1.0"

__all__ = sorted([*_EXPORTS, "ops"])


def __getattr__(name):
    import importlib

    if name in _EXPORTS:
        require_backend()
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name == "ops":
        require_backend()
        value = importlib.import_module("keras_gauss.ops")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *__all__])


# Every serializable class registers with Keras now if Keras is imported, else
# the moment it is, so `keras.saving.load_model` needs only `import keras_gauss`.
from keras_gauss.keras_setup import install_registration  # noqa: E402
from keras_gauss.keras_setup import register_serializables  # noqa: E402, F401
from keras_gauss.keras_setup import require_backend  # noqa: E402

install_registration()
