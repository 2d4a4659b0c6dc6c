"""Trains the corpus model on one JAX device and with DataParallel over all.

    XLA_FLAGS=--xla_force_host_platform_device_count=2 KERAS_BACKEND=jax \
        python data_parallel_run.py OUT.npz

Writes the tables of both runs (`one/<path>`, `parallel/<path>`), the
number of devices and the batch axis of the parallel input sharding.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_gauss.losses import MaxMarginRanking  # noqa: E402
from keras_gauss.optimizers import SparseAdagrad  # noqa: E402
from keras_gauss.pipelines.model import build_corpus_model  # noqa: E402

K = 2


def train():
    keras.utils.set_random_seed(0)
    model = build_corpus_model(50, 4, negatives=K, energy="el")
    rng = np.random.default_rng(0)
    for v in model.weights:
        low, high = (-0.5, 0.5) if v.path.endswith("means") else (0.1, 3.0)
        v.assign(rng.uniform(low, high, v.shape).astype("float32"))
    x = {"word": rng.integers(0, 30, 64).astype("int32"),
         "context": rng.integers(0, 30, 64).astype("int32"),
         "negatives": rng.integers(0, 30, (64, K)).astype("int32")}
    y = np.zeros((64, 1 + K), "float32")
    y[:, 0] = 1
    model.compile(optimizer=SparseAdagrad(0.1), loss=MaxMarginRanking(1.0))
    model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    return model


def main(out):
    results = {f"one/{v.path}": np.asarray(v.numpy()) for v in train().weights}
    distribution = keras.distribution.DataParallel()
    with distribution.scope():
        model = train()
        layout = distribution.get_data_layout((16,))
    results.update({f"parallel/{v.path}": np.asarray(v.numpy()) for v in model.weights})
    results["devices"] = np.array(len(jax.devices()))
    results["batch_axis"] = np.array(str(layout.axes[0]))
    np.savez(out, **results)


if __name__ == "__main__":
    main(sys.argv[1])
