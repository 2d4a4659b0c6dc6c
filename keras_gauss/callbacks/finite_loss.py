"""Stops training with an error when the loss is not finite."""

import keras

from keras_gauss.checks import check_loss


class FiniteLoss(keras.callbacks.Callback):
    """Raises `keras_gauss.checks.TrainingDivergedError` when an epoch ends
    with a non-finite loss (Keras's `TerminateOnNaN` stops silently).

    The check runs once an epoch, so it costs nothing per step.

    Example:

    >>> model.fit(dataset, epochs=3, callbacks=[FiniteLoss()])  # doctest: +SKIP
    """

    def on_epoch_end(self, epoch, logs=None):
        if logs and "loss" in logs:
            check_loss(float(logs["loss"]), f"after epoch {epoch + 1}")
