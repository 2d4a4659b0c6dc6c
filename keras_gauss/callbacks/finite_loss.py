"""Stops training with an error when the loss is not finite."""

import keras

from keras_gauss.checks import check_loss


class FiniteLoss(keras.callbacks.Callback):
    """Raises `keras_gauss.checks.TrainingDivergedError` when an epoch ends
    with a non-finite loss (Keras's `TerminateOnNaN` stops silently).

    The check runs once an epoch, so it costs nothing per step.

    Example:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer=keras.optimizers.SGD(1e30), loss="mse")  # diverges
    >>> x = np.ones((4, 1))
    >>> model.fit(x, x, epochs=3, verbose=0, callbacks=[FiniteLoss()])
    Traceback (most recent call last):
    keras_gauss.checks.TrainingDivergedError: ...
    """

    def on_epoch_end(self, epoch, logs=None):
        if logs and "loss" in logs:
            check_loss(float(logs["loss"]), f"after epoch {epoch + 1}")
