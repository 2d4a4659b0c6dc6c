import math

import keras
from keras import ops

from keras_gauss.checks import is_number
from keras_gauss.constraints.row_constraint import RowConstraint


@keras.saving.register_keras_serializable(package="keras_gauss")
class VarianceClip(RowConstraint):
    """The paper's covariance constraint `m <= Sigma_ii <= M`.

    For diagonal (and spherical) covariances the eigenvalues are the
    variances themselves, so the constraint `m I < Sigma < M I` is an
    element-wise clip: `Sigma_ii <- max(m, min(M, Sigma_ii))`.

    Args:
        min_value: `m > 0`, the smallest allowed variance. It keeps the
            covariances positive definite and stops the `log det` term of
            the EL energy from rewarding ever smaller variances.
        max_value: `M >= m`, the largest allowed variance.

    Example:

    >>> import numpy as np
    >>> keras.ops.convert_to_numpy(VarianceClip(0.5, 2.0)(np.array([0.1, 1.0, 9.0])))
    array([0.5, 1. , 2. ])
    """

    def __init__(self, min_value=0.05, max_value=5.0):
        for name, value in (("min_value", min_value), ("max_value", max_value)):
            if not is_number(value):  # Python or NumPy numbers
                raise TypeError(
                    f"`{name}` must be a number, got {value!r} "
                    f"of type {type(value).__name__}."
                )
        for name, value in (("min_value", min_value), ("max_value", max_value)):
            if not math.isfinite(value):
                raise ValueError(f"`{name}` must be finite, got {value}.")
        if not min_value > 0:
            raise ValueError(
                f"`min_value` (the variance lower bound m) must be > 0, "
                f"got {min_value}."
            )
        if min_value > max_value:
            raise ValueError(
                f"`min_value` (m={min_value}) must not exceed `max_value` "
                f"(M={max_value})."
            )
        self.min_value = float(min_value)
        self.max_value = float(max_value)

    def __call__(self, w):
        return ops.clip(ops.convert_to_tensor(w), self.min_value, self.max_value)

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value}
