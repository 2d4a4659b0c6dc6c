"""The seeded corpus model and batch of the one-device-against-distributed
runs (`mirrored_run.py`, `model_parallel_run.py`): the same tables and data
whatever the devices.

Example:

>>> model = train_seeded(30, lambda m, x, y: m.fit(x, y, batch_size=16, verbose=0))  # doctest: +SKIP
"""

import keras
import numpy as np

from keras_gauss.losses import MaxMarginRanking
from keras_gauss.optimizers import SparseAdagrad
from keras_gauss.pipelines.model import build_corpus_model

K = 2  # negatives per pair
ROWS = 64  # pairs of the batch


def train_seeded(vocab, fit, **model_args):
    """A 4-d EL corpus model of `vocab` words, trained by `fit(model, x, y)`.

    Its tables start uniform (means in [-0.5, 0.5], variances in [0.1, 3]) and
    `x`, `y` are `ROWS` random (word, context, K negatives) rows with their
    ranking labels, all drawn from `np.random.default_rng(0)`; `SparseAdagrad(0.1)`,
    `MaxMarginRanking(1.0)`. `model_args` go to `build_corpus_model` (e.g.
    `max_norm`). Build it inside a distribution's scope to train there.
    """
    keras.utils.set_random_seed(0)
    model = build_corpus_model(vocab, 4, negatives=K, energy="el", **model_args)
    rng = np.random.default_rng(0)
    for v in model.weights:
        low, high = (-0.5, 0.5) if v.path.endswith("means") else (0.1, 3.0)
        v.assign(rng.uniform(low, high, v.shape).astype("float32"))
    x = {"word": rng.integers(0, vocab, ROWS).astype("int32"),
         "context": rng.integers(0, vocab, ROWS).astype("int32"),
         "negatives": rng.integers(0, vocab, (ROWS, K)).astype("int32")}
    y = np.zeros((ROWS, 1 + K), "float32")
    y[:, 0] = 1
    model.compile(optimizer=SparseAdagrad(0.1), loss=MaxMarginRanking(1.0))
    model.optimizer.build(model.trainable_variables)
    fit(model, x, y)
    return model
