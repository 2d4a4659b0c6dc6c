"""What GaussianEmbedding's id range check costs a JAX train step.

    KERAS_BACKEND=jax python benchmarks/id_check_cost.py [--batch 1024] [--repeats 4]
    KERAS_GAUSS_KERNELS=reference KERAS_BACKEND=jax python benchmarks/id_check_cost.py

Fits a `GaussianModel` (two 10k x 50 tables, EL energy, 5 negatives,
`SparseAdagrad`, 16 steps a compiled call) with the layer as it is
("check") and with the layer's check inside compiled steps patched out
("no check"), in turns, and prints a table of the wall and CPU time a step
(median of epochs 2-4 of each run; the first compiles). With the gather
kernel (CPU, the default) the kernel checks the ids and both variants
compile the same step (the spread of the two rows is the machine's noise); with
`KERAS_GAUSS_KERNELS=reference` (what a GPU runs) a host callback taken
only on a bad id does (`keras_gauss.checks.checked_in_jax_step`).
"""

import argparse
import os
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_gauss import ELEnergy, GaussianEmbedding, MaxMarginRanking, SparseAdagrad  # noqa: E402
from keras_gauss.layers import gaussian_embedding  # noqa: E402
from keras_gauss.models import GaussianModel  # noqa: E402

VOCAB, DIM, NEGATIVES, BATCHES = 10000, 50, 5, 64
CHECKED = gaussian_embedding.GaussianEmbedding._assert_in_range


def _unchecked(layer, ids, kernel=None):
    import jax

    return ids if isinstance(ids, jax.core.Tracer) else CHECKED(layer, ids)


def step_times(check, batch):
    """(wall, CPU) milliseconds a step of one fit, median of epochs 2-4."""
    gaussian_embedding.GaussianEmbedding._assert_in_range = CHECKED if check else _unchecked
    keras.backend.clear_session()
    rng = np.random.default_rng(0)
    x = [rng.integers(0, VOCAB, (batch * BATCHES, 1)),
         rng.integers(0, VOCAB, (batch * BATCHES, 1 + NEGATIVES))]
    y = np.tile(np.eye(1, 1 + NEGATIVES, dtype="float32"), (batch * BATCHES, 1))
    words, contexts = GaussianEmbedding(VOCAB, DIM), GaussianEmbedding(VOCAB, DIM)
    word = keras.Input((1,), dtype="int32")
    context = keras.Input((1 + NEGATIVES,), dtype="int32")
    model = GaussianModel([word, context], ELEnergy()(*words(word), *contexts(context)))
    model.compile(optimizer=SparseAdagrad(0.05), loss=MaxMarginRanking(), steps_per_execution=16)
    times = []

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = (time.perf_counter(), time.process_time())

        def on_epoch_end(self, epoch, logs=None):
            times.append((time.perf_counter() - self.start[0], time.process_time() - self.start[1]))

    model.fit(x, y, batch_size=batch, epochs=4, verbose=0, shuffle=False, callbacks=[Timer()])
    return tuple(np.median(np.array(times[1:]), axis=0) / BATCHES * 1e3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    runs = {"no check": [], "check": []}
    for _ in range(args.repeats):
        for name in runs:
            runs[name].append(step_times(name == "check", args.batch))
    print(f"kernels: {os.environ.get('KERAS_GAUSS_KERNELS', 'default')}, batch {args.batch}, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| layer | wall ms a step (runs) | CPU ms a step (runs) | median CPU | min CPU |")
    print("|---|---|---|---|---|")
    for name, values in runs.items():
        values = np.array(values)
        print(f"| {name} | {', '.join(f'{v:.2f}' for v in values[:, 0])} | "
              f"{', '.join(f'{v:.2f}' for v in values[:, 1])} | {np.median(values[:, 1]):.2f} | "
              f"{values[:, 1].min():.2f} |")
    ratio = np.median(np.array(runs["check"])[:, 1]) / np.median(np.array(runs["no check"])[:, 1])
    print(f"CPU a step, check / no check: {ratio:.3f}")


if __name__ == "__main__":
    main()
