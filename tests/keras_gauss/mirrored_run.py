"""Trains the corpus model on one TensorFlow device and under `--distribution
data` on TensorFlow (`MirroredStrategy`) over 2 logical CPU devices.

    KERAS_BACKEND=tensorflow python mirrored_run.py OUT.npz CORPUS EDGES RUNS

Writes the tables of both runs (`one/<path>`, `mirrored/<path>`), the
largest difference between the two replicas' copies of any table
(`replica_gap`) and the device counts of a `train_corpus` and a
`train_hierarchy` run under the same distribution (`corpus_devices`,
`hierarchy_devices`).
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from keras_gauss.fast_exit import done  # noqa: E402
from keras_gauss.fast_exit import end_without_teardown  # noqa: E402

end_without_teardown()

import tensorflow as tf  # noqa: E402

_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(_cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import numpy as np  # noqa: E402

from keras_gauss.distribution import DistributionConfig  # noqa: E402
from keras_gauss.distribution import start_distribution  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seeded_training import train_seeded  # noqa: E402


def train():
    # max_norm 0.6: the norm constraint really cuts rows (means start up to ~1).
    return train_seeded(30, lambda model, x, y: model.fit(
        tf.data.Dataset.from_tensor_slices((x, y)).batch(16), epochs=3, verbose=0),
        max_norm=0.6)


def main(out, corpus, edges, runs):
    results = {f"one/{v.path}": np.asarray(v.numpy()) for v in train().weights}
    job = start_distribution(DistributionConfig("data"))
    with job.scope():
        model = train()
    results.update({f"mirrored/{v.path}": np.asarray(v.numpy()) for v in model.weights})
    gap = 0.0
    for v in model.weights:
        copies = [np.asarray(c.numpy()) for c in v.value.values]
        assert len(copies) == 2, len(copies)
        gap = max(gap, float(np.abs(copies[0] - copies[1]).max()))
    results["replica_gap"] = np.array(gap)
    results["replicas"] = np.array(job.devices)

    from keras_gauss.hierarchy.train import WordNetConfig, train_hierarchy
    from keras_gauss.pipelines.train import CorpusConfig, train_corpus

    metrics = train_corpus(CorpusConfig(dim=4, epochs=1, window=2, min_count=1, sample=0,
                                        batch_size=256, engine="keras"), corpus,
                           f"{runs}/corpus", verbose=0, checkpoint_every=0,
                           distribution=DistributionConfig("data"))
    results["corpus_devices"] = np.array(metrics["distribution"]["devices"])
    metrics = train_hierarchy(WordNetConfig(edges=edges, dim=4, epochs=1, batch_size=16,
                                            negatives=2, val_size=0, test_size=0,
                                            reconstruction_nodes=10, engine="keras"),
                              f"{runs}/hierarchy", verbose=0, checkpoint_every=0,
                              distribution=DistributionConfig("data"))
    results["hierarchy_devices"] = np.array(metrics["distribution"]["devices"])
    np.savez(out, **results)


if __name__ == "__main__":
    main(*sys.argv[1:])
    done()
