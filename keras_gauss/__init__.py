"""keras-gauss: Gaussian embeddings (Vilnis & McCallum, ICLR 2015) for Keras 3.

Words or concepts are Gaussians `N(mu, Sigma)` with diagonal or spherical
covariance, compared by the log expected-likelihood kernel (symmetric) or by
KL divergence (asymmetric, for entailment), and trained with a max-margin
ranking loss under hard constraints on means and variances.
"""

import os
import sys

# TensorFlow's C++ start-up chatter (CPU features) is noise for our users;
# errors still show. Set TF_CPP_MIN_LOG_LEVEL yourself to override.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if os.path.basename(sys.argv[0]) == "keras-gauss":
    # The `keras-gauss` command: TF 2.21 prints a oneDNN notice (twice) that
    # no log level hides; oneDNN's rewrites do not touch our gather/scatter
    # and element-wise ops. Library users keep TensorFlow's default.
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

try:
    import tensorflow  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the install
    raise ImportError(
        "keras-gauss needs TensorFlow. Install it with the extra that fits "
        "your machine: `pip install keras-gauss[cpu]` (CPU-only wheel) or "
        "`pip install keras-gauss[gpu]`."
    ) from error

from keras_gauss import ops
from keras_gauss.callbacks import ProjectConstraints
from keras_gauss.constraints import NormClip
from keras_gauss.constraints import RowConstraint
from keras_gauss.constraints import VarianceClip
from keras_gauss.layers import ELEnergy
from keras_gauss.layers import GaussianEmbedding
from keras_gauss.layers import KLEnergy
from keras_gauss.losses import MaxMarginRanking
from keras_gauss.losses import ThresholdedDivergence
from keras_gauss.optimizers import SparseAdagrad

__version__ = "0.1.0"

__all__ = [
    "ELEnergy",
    "GaussianEmbedding",
    "KLEnergy",
    "MaxMarginRanking",
    "NormClip",
    "ProjectConstraints",
    "RowConstraint",
    "SparseAdagrad",
    "ThresholdedDivergence",
    "VarianceClip",
    "ops",
]
