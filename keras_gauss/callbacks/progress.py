import time  # noqa: F401 - the clock the tests replace (time.perf_counter)

import keras

from keras_gauss.callbacks.progress_core import MODES  # noqa: F401 - re-exported
from keras_gauss.callbacks.progress_core import Progress
from keras_gauss.callbacks.progress_core import _clock  # noqa: F401 - re-exported
from keras_gauss.callbacks.progress_core import _isatty  # noqa: F401 - re-exported


class ProgressLogger(Progress, keras.callbacks.Callback):
    """Training progress as a Keras callback: a bar on a terminal, one line
    per epoch otherwise (`keras_gauss.callbacks.progress_core.Progress`, whose
    arguments it takes).

    Example:

    >>> model.fit(ds, epochs=10, verbose=0,
    ...           callbacks=[ProgressLogger(unit="edges", batch_size=1024)])
    Epoch 1/10: loss 0.5123, 729,241 edges in 17.2 s (42,398 edges/s)
    """

    def set_params(self, params):
        Progress.set_params(self, params)
