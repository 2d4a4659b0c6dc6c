"""Time of one training step at vocabulary 10k and 1M, same batch.

A step of `SparseAdagrad` reads and writes only the rows in the batch, so its
cost should not grow with the vocabulary. Keras's own `Adagrad` with the same
constraints is shown beside it for contrast: it densifies the sparse
gradient and projects every row of every table after each step.

    python benchmarks/step_scaling.py [--batch 1024] [--dim 50] [--steps 200]
        [--backend tensorflow|jax]

`--backend` picks Keras's backend (default: `KERAS_BACKEND`, else
tensorflow); on JAX the model is a `keras_gauss.GaussianModel`, whose train
step hands `SparseAdagrad` the touched rows.

Prints a table and, last, `ratio <x>`: the SparseAdagrad step time at 1M rows
over the time at 10k rows (goal: <= 1.3).
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _backend_from_argv(argv):
    """`--backend NAME` must be known before Keras is imported."""
    for i, arg in enumerate(argv):
        if arg == "--backend" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--backend="):
            return arg.split("=", 1)[1]
    return None


if _backend_from_argv(sys.argv[1:]):
    os.environ["KERAS_BACKEND"] = _backend_from_argv(sys.argv[1:])

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

import keras_gauss as kg  # noqa: E402


def build_model(vocab, dim, optimizer):
    words = kg.GaussianEmbedding(vocab, dim, name="words")
    contexts = kg.GaussianEmbedding(vocab, dim, name="contexts")
    word = keras.Input((), dtype="int32", name="word")
    candidates = keras.Input((2,), dtype="int32", name="candidates")
    mean_w, var_w = words(word)
    mean_c, var_c = contexts(candidates)
    energy = kg.ELEnergy()(
        ops.expand_dims(mean_w, 1), ops.expand_dims(var_w, 1), mean_c, var_c
    )
    # GaussianModel: on JAX its train step updates the touched rows only
    # (on TensorFlow it is a plain functional model).
    model = kg.GaussianModel({"word": word, "candidates": candidates}, energy)
    model.compile(optimizer=optimizer, loss=kg.MaxMarginRanking())
    return model


def _repeat(x, y):
    """The same batch forever: a tf.data pipeline on TensorFlow, a generator elsewhere."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.data.Dataset.from_tensors((x, y)).repeat().prefetch(2)

    def forever():
        while True:
            yield x, y

    return forever()


def time_step(vocab, dim, batch, steps, optimizer):
    keras.utils.set_random_seed(0)
    model = build_model(vocab, dim, optimizer)
    rng = np.random.default_rng(0)
    # The same ids at every vocabulary size: only the table size changes.
    x = {
        "word": rng.integers(0, 10_000, batch).astype("int32"),
        "candidates": rng.integers(0, 10_000, (batch, 2)).astype("int32"),
    }
    y = np.tile(np.array([[1.0, 0.0]], "float32"), (batch, 1))
    dataset = _repeat(x, y)
    model.fit(dataset, steps_per_epoch=10, epochs=1, verbose=0, shuffle=False)  # warm up
    times = []
    for _ in range(3):  # the best of three runs: robust to a busy machine
        start = time.perf_counter()
        model.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0, shuffle=False)
        times.append((time.perf_counter() - start) / steps * 1e3)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--backend", choices=("tensorflow", "jax"),
                        help="Keras backend (default: KERAS_BACKEND)")
    parser.add_argument(
        "--no-keras-baseline",
        action="store_true",
        help="skip Keras's dense Adagrad (slow at 1M rows)",
    )
    args = parser.parse_args()

    rows = []
    optimizers = [("SparseAdagrad", lambda: kg.SparseAdagrad(0.05))]
    if not args.no_keras_baseline:
        optimizers.append(("keras Adagrad", lambda: keras.optimizers.Adagrad(0.05)))
    for name, make in optimizers:
        steps = args.steps if name == "SparseAdagrad" else max(args.steps // 10, 5)
        times = {v: time_step(v, args.dim, args.batch, steps, make()) for v in (10_000, 1_000_000)}
        rows.append((name, times[10_000], times[1_000_000]))

    print(f"backend {keras.backend.backend()}, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"batch {args.batch} (word, context, negative) triples, {args.dim}-d diagonal, 2 tables")
    print(f"{'optimizer':<16}{'10k rows ms/step':>18}{'1M rows ms/step':>18}{'ratio':>8}")
    for name, small, large in rows:
        print(f"{name:<16}{small:>18.2f}{large:>18.2f}{large / small:>8.2f}")
    print(f"ratio {rows[0][2] / rows[0][1]:.2f}")


if __name__ == "__main__":
    main()
