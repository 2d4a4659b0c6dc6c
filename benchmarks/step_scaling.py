"""Time of one training step at vocabulary 10k and 1M, same batch.

A step of `SparseAdagrad` reads and writes only the rows in the batch, so its
cost should not grow with the vocabulary. Keras's own `Adagrad` with the same
constraints is shown beside it for contrast: it densifies the sparse
gradient and projects every row of every table after each step.

Two models: the corpus model (word and context tables, EL energy, batches of
(word, context, negative) triples) and the hierarchy model
(`keras_gauss.hierarchy.model.build_kl_model`: one shared table gathered for
the general and the specific side of every edge, KL energy, 5 corrupted +
1 reversed edge per positive, batches with an unknown batch dimension as
`make_dataset` gives them), both trained by `model.fit`.

    python benchmarks/step_scaling.py [--batch 1024] [--dim 50] [--steps 200]
        [--models corpus hierarchy] [--no-keras-baseline] [--backend tensorflow|jax]

`--backend` picks Keras's backend (default: `KERAS_BACKEND`, else
tensorflow); the models are `keras_gauss.GaussianModel`s, whose train step on
JAX hands `SparseAdagrad` the touched rows.

Prints a table and, last, `ratio <x>`: the largest `SparseAdagrad` step time
at 1M rows over the time at 10k rows (goal: <= 1.3 for each model).
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
from keras_gauss.hierarchy.model import build_kl_model  # noqa: E402

TENSORFLOW = keras.backend.backend() == "tensorflow"

HIERARCHY_NEGATIVES = 6  # the train-wordnet defaults: 5 corrupted + 1 reversed


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
    model = kg.GaussianModel({"word": word, "candidates": candidates}, energy)
    model.compile(optimizer=optimizer, loss=kg.MaxMarginRanking())
    return model


def corpus_data(batch):
    rng = np.random.default_rng(0)
    # The same ids at every vocabulary size: only the table size changes.
    x = {
        "word": rng.integers(0, 10_000, batch).astype("int32"),
        "candidates": rng.integers(0, 10_000, (batch, 2)).astype("int32"),
    }
    y = np.tile(np.array([[1.0, 0.0]], "float32"), (batch, 1))
    return _repeat(x, y)


def hierarchy_data(batch):
    rng = np.random.default_rng(0)
    k = HIERARCHY_NEGATIVES
    x = {
        "general": rng.integers(0, 10_000, batch).astype("int32"),
        "specific": rng.integers(0, 10_000, batch).astype("int32"),
        "neg_general": rng.integers(0, 10_000, (batch, k)).astype("int32"),
        "neg_specific": rng.integers(0, 10_000, (batch, k)).astype("int32"),
    }
    y = np.zeros((batch, 1 + k), "float32")
    y[:, 0] = 1.0
    if not TENSORFLOW:
        return _repeat(x, y)
    import tensorflow as tf

    # Unbatch + batch: the batch dimension is unknown (None) to the traced
    # step, as with `make_dataset`.
    dataset = tf.data.Dataset.from_tensors((x, y)).unbatch().batch(batch)
    return dataset.cache().repeat().prefetch(2)


def _repeat(x, y):
    """The same batch forever: a tf.data pipeline on TensorFlow, a generator elsewhere."""
    if TENSORFLOW:
        import tensorflow as tf

        return tf.data.Dataset.from_tensors((x, y)).repeat().prefetch(2)

    def forever():
        while True:
            yield x, y

    return forever()


def build_trainer(model, vocab, dim, optimizer):
    """The model `fit` runs: `(trainer, dataset maker)`."""
    if model == "corpus":
        trainer = build_model(vocab, dim, optimizer)
        return trainer, corpus_data
    network = build_kl_model(vocab, dim, negatives=HIERARCHY_NEGATIVES, max_norm=4.0)
    network.compile(optimizer=optimizer, loss=kg.MaxMarginRanking())
    return network, hierarchy_data


def time_step(model, vocab, dim, batch, steps, optimizer):
    keras.utils.set_random_seed(0)
    trainer, data = build_trainer(model, vocab, dim, optimizer)
    dataset = data(batch)
    trainer.fit(dataset, steps_per_epoch=10, epochs=1, verbose=0, shuffle=False)  # warm up
    times = []
    for _ in range(3):  # the best of three runs: robust to a busy machine
        start = time.perf_counter()
        trainer.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0, shuffle=False)
        times.append((time.perf_counter() - start) / steps * 1e3)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument(
        "--no-keras-baseline",
        action="store_true",
        help="skip Keras's dense Adagrad (slow at 1M rows)",
    )
    parser.add_argument("--models", nargs="+", choices=("corpus", "hierarchy"),
                        default=["corpus", "hierarchy"])
    parser.add_argument("--backend", choices=("tensorflow", "jax"),
                        help="Keras backend (default: KERAS_BACKEND, else tensorflow)")
    args = parser.parse_args()

    rows = []
    paths = {
        "corpus": [("SparseAdagrad", lambda: kg.SparseAdagrad(0.05))],
        "hierarchy": [("SparseAdagrad", lambda: kg.SparseAdagrad(0.05))],
    }
    for model in args.models:
        optimizers = list(paths[model])
        if not args.no_keras_baseline:
            optimizers.append(("keras Adagrad", lambda: keras.optimizers.Adagrad(0.05)))
        for name, make in optimizers:
            steps = args.steps if name != "keras Adagrad" else max(args.steps // 10, 5)
            times = {v: time_step(model, v, args.dim, args.batch, steps, make())
                     for v in (10_000, 1_000_000)}
            rows.append((model, name, times[10_000], times[1_000_000]))

    print(f"backend {keras.backend.backend()}, batch {args.batch}, {args.dim}-d diagonal; corpus: (word, context, negative) "
          f"triples, 2 tables; hierarchy: edges with {HIERARCHY_NEGATIVES} negatives, "
          "1 shared table; load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"{'model':<11}{'optimizer':<16}{'10k rows ms/step':>18}{'1M rows ms/step':>18}"
          f"{'ratio':>8}")
    for model, name, small, large in rows:
        print(f"{model:<11}{name:<16}{small:>18.2f}{large:>18.2f}{large / small:>8.2f}")
    ratios = [large / small for _, name, small, large in rows if name != "keras Adagrad"]
    print(f"ratio {max(ratios):.2f}")

if __name__ == "__main__":
    main()
