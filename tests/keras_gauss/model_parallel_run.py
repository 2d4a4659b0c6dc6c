"""Trains the corpus model on one JAX device and with `--distribution model`
(ModelParallel, the tables split by rows over 2 devices); with `EDGES RUNS`,
then `train_hierarchy` on one device and with `--distribution data`
(DataParallel over the 2 devices), in the same process (one JAX start for both).

    XLA_FLAGS=--xla_force_host_platform_device_count=2 KERAS_BACKEND=jax \
        python model_parallel_run.py OUT.npz [EDGES RUNS]

Writes the tables of both runs (`one/<path>`, `sharded/<path>`) and, for
every table and AdaGrad accumulator of the sharded run, its sharding spec
(`spec/<path>`) and the shapes of its per-device shards (`shards/<path>`);
with `EDGES`, the hierarchy runs' training edges (`hierarchy/edges`: one per
run), whether each wrote a `distribution` record (`hierarchy/recorded`) and
the largest difference between their tables (`hierarchy/maxdiff`).
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


def hierarchy(edges, runs):
    """`train_hierarchy` on one device and with DataParallel (runs `RUNS`/one, two)."""
    from keras_gauss.hierarchy.train import WordNetConfig
    from keras_gauss.hierarchy.train import train_hierarchy
    from keras_gauss.runs import load_run

    config = WordNetConfig(edges=edges, dim=4, epochs=2, batch_size=16, negatives=2,
                           val_size=0, test_size=0, reconstruction_nodes=10, engine="keras")
    counts, recorded = [], []
    for name, dist in (("one", None), ("two", DistributionConfig("data"))):
        metrics = train_hierarchy(config, os.path.join(runs, name), verbose=0,
                                  checkpoint_every=0, distribution=dist)
        counts.append(metrics["num_train_edges"])
        recorded.append("distribution" in metrics)
    a, b = ([w.numpy() for w in load_run(os.path.join(runs, n)).model.weights]
            for n in ("one", "two"))
    return {"hierarchy/edges": np.array(counts), "hierarchy/recorded": np.array(recorded),
            "hierarchy/maxdiff": np.array(max(float(np.abs(x - y).max())
                                              for x, y in zip(a, b)))}


def main(out, edges=None, runs=None):
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
    if edges:
        results.update(hierarchy(edges, runs))
    np.savez(out, **results)


if __name__ == "__main__":
    main(*sys.argv[1:])
