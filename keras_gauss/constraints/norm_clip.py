import math

import keras
from keras import ops

from keras_gauss.checks import is_number
from keras_gauss.constraints.row_constraint import RowConstraint


@keras.saving.register_keras_serializable(package="keras_gauss")
class NormClip(RowConstraint):
    """The paper's mean constraint `||mu_i||_2 <= C`, applied row by row.

    Rows whose L2 norm exceeds `max_norm` are scaled back onto the sphere of
    radius `max_norm`; other rows are left exactly as they are (unlike
    `keras.constraints.MaxNorm`, which adds an epsilon and rescales all rows).

    Args:
        max_norm: `C > 0`, the largest allowed norm of a mean vector.

    Example:

    >>> import numpy as np
    >>> clipped = NormClip(1.0)(np.array([[3.0, 4.0], [0.3, 0.4]]))
    >>> keras.ops.convert_to_numpy(clipped)  # rows longer than 1 scaled to 1
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """

    def __init__(self, max_norm=2.0):
        if not is_number(max_norm):  # Python or NumPy numbers
            raise TypeError(
                f"`max_norm` must be a number, got {max_norm!r} "
                f"of type {type(max_norm).__name__}."
            )
        if not math.isfinite(max_norm) or not max_norm > 0:
            raise ValueError(
                f"`max_norm` (the mean norm bound C) must be finite and > 0, got {max_norm}."
            )
        self.max_norm = float(max_norm)

    def __call__(self, w):
        w = ops.convert_to_tensor(w)
        norms = ops.sqrt(ops.sum(ops.square(w), axis=-1, keepdims=True))
        # `where`, not `minimum(1, C / maximum(norms, tiny))`: Keras on torch
        # computes `maximum` of float64 tensors in float32.
        scale = ops.where(norms > self.max_norm, self.max_norm / norms, 1.0)
        return w * ops.cast(scale, w.dtype)

    def get_config(self):
        return {"max_norm": self.max_norm}
