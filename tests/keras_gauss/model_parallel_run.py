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

import numpy as np  # noqa: E402

from keras_gauss.distribution import DistributionConfig  # noqa: E402
from keras_gauss.distribution import start_distribution  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seeded_training import train_seeded  # noqa: E402


def train():
    return train_seeded(50, lambda model, x, y: model.fit(
        x, y, batch_size=16, epochs=3, shuffle=False, verbose=0))


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
