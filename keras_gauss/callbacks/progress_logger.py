"""`ProgressLogger`: `keras_gauss.callbacks.progress.Progress` as a Keras callback."""

import keras

from keras_gauss.callbacks.progress import Progress


class ProgressLogger(Progress, keras.callbacks.Callback):
    """Training progress as a Keras callback: a bar on a terminal, one line
    per epoch otherwise (`keras_gauss.callbacks.progress.Progress`, whose
    arguments it takes).

    Example:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> x = np.ones((8, 1))
    >>> logger = ProgressLogger(unit="samples", batch_size=4, mode="lines")
    >>> _ = model.fit(x, x, batch_size=4, epochs=2, verbose=0, callbacks=[logger])
    Epoch 1/2: loss ..., 8 samples in ... s (... samples/s)
    Epoch 2/2: loss ..., 8 samples in ... s (... samples/s)
    """

    def set_params(self, params):
        Progress.set_params(self, params)
