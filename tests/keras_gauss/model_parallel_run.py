"""Trains the corpus model on one JAX device and with `--distribution model`
(ModelParallel, the tables split by rows over 2 devices).

    XLA_FLAGS=--xla_force_host_platform_device_count=2 KERAS_BACKEND=jax \
        python model_parallel_run.py OUT.npz

Writes the tables of both runs (`one/<path>`, `sharded/<path>`) and, for
every table and AdaGrad accumulator of the sharded run, its sharding spec
(`spec/<path>`) and the shapes of its per-device shards (`shards/<path>`).
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_gauss.distribution import DistributionConfig  # noqa: E402
from keras_gauss.distribution import start_distribution  # noqa: E402
from keras_gauss.losses import MaxMarginRanking  # noqa: E402
from keras_gauss.optimizers import SparseAdagrad  # noqa: E402
from keras_gauss.pipelines.model import build_corpus_model  # noqa: E402

K, VOCAB = 2, 50


def train():
    keras.utils.set_random_seed(0)
    model = build_corpus_model(VOCAB, 4, negatives=K, energy="el")
    rng = np.random.default_rng(0)
    for v in model.weights:
        low, high = (-0.5, 0.5) if v.path.endswith("means") else (0.1, 3.0)
        v.assign(rng.uniform(low, high, v.shape).astype("float32"))
    x = {"word": rng.integers(0, VOCAB, 64).astype("int32"),
         "context": rng.integers(0, VOCAB, 64).astype("int32"),
         "negatives": rng.integers(0, VOCAB, (64, K)).astype("int32")}
    y = np.zeros((64, 1 + K), "float32")
    y[:, 0] = 1
    model.compile(optimizer=SparseAdagrad(0.1), loss=MaxMarginRanking(1.0))
    model.optimizer.build(model.trainable_variables)
    model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    return model


def main(out):
    results = {f"one/{v.path}": np.asarray(v.numpy()) for v in train().weights}
    job = start_distribution(DistributionConfig("model", model_shards=2))
    with job.scope():
        model = train()
    results.update({f"sharded/{v.path}": np.asarray(v.numpy()) for v in model.weights})
    for v in [*model.weights, *model.optimizer.variables]:
        if len(v.shape) == 2:
            results[f"spec/{v.path}"] = np.array(str(tuple(v.value.sharding.spec)))
            results[f"shards/{v.path}"] = np.array(
                [s.data.shape for s in v.value.addressable_shards])
    np.savez(out, **results)


if __name__ == "__main__":
    main(sys.argv[1])
