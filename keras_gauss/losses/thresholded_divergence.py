import keras
from keras import ops

from keras_gauss.checks import check_number
from keras_gauss.losses.max_margin_ranking import check_label_shape
from keras_gauss.losses.max_margin_ranking import computation_dtype
from keras_gauss.losses.max_margin_ranking import nan_labels


def thresholded_divergence(y_true, y_pred, threshold=0.0, margin=1.0):
    """Density order embeddings' loss on energies `E = -divergence`.

    With `D = -E` the divergence, positive items (`y_true > 0`) pay
    `max(0, D - threshold)` (the divergence beyond a tolerance) and negative
    items (`y_true <= 0`) pay `max(0, threshold + margin - D)` (Athiwaratkun
    & Wilson, ICLR 2018). Unlike a ranking loss, it asks for absolute
    inclusion: a true `(specific, general)` pair must reach `D <= threshold`
    and a corrupted one `D >= threshold + margin`, however the other items
    of its list score, so one threshold separates them all.

    The paper writes the negatives' term `max(0, margin - max(0, D -
    threshold))`: equal wherever `D >= threshold`, but flat below it, so a
    negative inside the tolerance gets no gradient. From the usual start
    (all Gaussians alike, every `D` near 0) that stalls training with
    `threshold > 0`: every pair, positive or negative, sits in the flat
    part and the embedding stays collapsed. Here the negatives' term keeps
    its slope there.

    Args:
        y_true: `(batch, list_size)` labels, `> 0` for positive items
            (`(1, list_size)`: the same labels for every list); a NaN
            label makes its list's loss NaN (`max_margin_ranking`).
        y_pred: `(batch, list_size)` energies, such as `KLEnergy` outputs;
            or `(batch,)`, one pair each, with `(batch,)` labels.
        threshold: the tolerance `gamma >= 0` on the divergence of positives.
        margin: the divergence `m > 0` that negatives must exceed beyond the
            threshold.

    Returns:
        `(batch,)` losses summed over each list (one per pair for `(batch,)`
        energies).

    Example:

    >>> import numpy as np
    >>> float(thresholded_divergence(np.array([[1.0, 0.0]]),
    ...                              np.array([[-3.0, -4.0]]),
    ...                              threshold=1.0, margin=5.0)[0])
    4.0
    """
    y_pred = ops.convert_to_tensor(y_pred)
    dtype = computation_dtype(y_pred)  # float64 energies stay float64
    y_pred = ops.cast(y_pred, dtype)
    y_true = ops.convert_to_tensor(y_true)
    check_label_shape(y_true, y_pred, "ThresholdedDivergence")
    positive = ops.cast(ops.greater(y_true, 0), dtype)
    divergence = -y_pred
    losses = (positive * ops.relu(divergence - threshold)
              + (1.0 - positive) * ops.relu(threshold + margin - divergence))
    if len(y_pred.shape) == 1:
        # `(batch,)` energies of single pairs: a loss each (summed, the
        # batch's mean would have been its sum, and sample weights lost)
        return losses + ops.cast(nan_labels(ops.expand_dims(y_true, -1)), dtype)
    return ops.sum(losses, axis=-1) + ops.cast(nan_labels(y_true), dtype)


@keras.saving.register_keras_serializable(package="keras_gauss")
class ThresholdedDivergence(keras.losses.Loss):
    """Thresholded divergence loss of density order embeddings.

    Positives pay `max(0, D - threshold)`, negatives pay
    `max(0, threshold + margin - D)`, with `D = -E` the divergence (for
    `KLEnergy`, `KL(N_specific || N_general)`). See
    `keras_gauss.losses.thresholded_divergence` (and why the negatives' term
    differs from the paper's below the threshold).

    Args:
        threshold: tolerance `gamma >= 0` on positive divergences.
        margin: divergence `m > 0` that negatives must exceed.
        reduction: Keras loss reduction.
        name: name of the loss.
        dtype: dtype of the loss's inputs and result (default: Keras's
            float type, `keras.backend.floatx()`): `"float64"` computes in
            float64; float32 and half precision (whose energies are
            widened) in float32
            (`keras_gauss.losses.max_margin_ranking.computation_dtype`).

    Example:

    >>> from keras_gauss.hierarchy.model import build_kl_model
    >>> from keras_gauss.optimizers import SparseAdagrad
    >>> model = build_kl_model(10, dim=2)
    >>> model.compile(optimizer=SparseAdagrad(0.05),
    ...               loss=ThresholdedDivergence(threshold=0.0, margin=2.0))
    """

    def __init__(self, threshold=0.0, margin=1.0,
                 reduction="sum_over_batch_size",
                 name="thresholded_divergence", dtype=None):
        # finite (a NaN threshold made every loss NaN); NumPy numbers too
        check_number(threshold, "`threshold`", at_least=0)
        check_number(margin, "`margin`", above=0)
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.threshold = float(threshold)
        self.margin = float(margin)

    def call(self, y_true, y_pred):
        return thresholded_divergence(y_true, y_pred, self.threshold, self.margin)

    def get_config(self):
        config = super().get_config()
        config.update({"threshold": self.threshold, "margin": self.margin})
        return config
