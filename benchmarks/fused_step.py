"""Speed of one ranking training step: Keras path vs pure-TF step vs fused op.

EL energy, 50-d diagonal Gaussians, separate word and context tables of
60k rows, 1 negative; the same in-memory batch every step (data pipeline
excluded), warm-up (tracing, compiling) excluded, best of three runs.

    python benchmarks/fused_step.py [--batches 1024 4096 16384] [--vocab 60000]
        [--dim 50] [--negatives 1] [--seconds 2]

Prints ms per step and triples (word, context, negative) per second for

- keras: `model.fit` of the functional model (GaussianEmbedding + ELEnergy +
  MaxMarginRanking + SparseAdagrad), `steps_per_execution=16`;
- tf step: `keras_gauss.fused.ranking_step(use_fused=False)` in one
  `tf.function` looping over 16 steps;
- fused op: the same with `use_fused=True`;
- fused fit: `FusedRankingModel.fit` (`steps_per_execution=16`).
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import ops  # noqa: E402

import keras_gauss as kg  # noqa: E402
from keras_gauss.fused import FusedRankingModel  # noqa: E402
from keras_gauss.fused import fused_available  # noqa: E402
from keras_gauss.fused import ranking_step  # noqa: E402

INNER = 16  # steps per tf.function call / per fit execution


def batch_data(vocab, batch, negatives, seed=0):
    rng = np.random.default_rng(seed)
    # Zipf-like ids, so that batches repeat frequent rows as a corpus does.
    ranks = rng.zipf(1.1, size=(batch, 2 + negatives)) % vocab
    ids = ranks.astype("int32")
    return ids[:, 0], ids[:, 1], ids[:, 2:]


def best_of(run, steps, repeats=3):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(steps)
        times.append((time.perf_counter() - start) / steps)
    return min(times)


def steps_for(step_seconds, seconds):
    return max(INNER, int(seconds / max(step_seconds, 1e-6)) // INNER * INNER)


def time_keras(vocab, dim, batch, negatives, seconds):
    words = kg.GaussianEmbedding(vocab, dim, name="words")
    contexts = kg.GaussianEmbedding(vocab, dim, name="contexts")
    word = keras.Input((), dtype="int32", name="word")
    context = keras.Input((), dtype="int32", name="context")
    negative = keras.Input((negatives,), dtype="int32", name="negatives")
    mean_w, var_w = words(word)
    candidates = ops.concatenate([ops.expand_dims(context, -1), negative], -1)
    mean_c, var_c = contexts(candidates)
    energy = kg.ELEnergy()(
        ops.expand_dims(mean_w, 1), ops.expand_dims(var_w, 1), mean_c, var_c
    )
    model = keras.Model({"word": word, "context": context, "negatives": negative}, energy)
    model.compile(
        optimizer=kg.SparseAdagrad(0.1),
        loss=kg.MaxMarginRanking(),
        steps_per_execution=INNER,
    )
    w, c, n = batch_data(vocab, batch, negatives)
    y = np.zeros((batch, 1 + negatives), "float32")
    y[:, 0] = 1
    data = tf.data.Dataset.from_tensors(
        ({"word": w, "context": c, "negatives": n}, y)
    ).repeat()

    def run(steps):
        model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)

    run(INNER * 2)
    estimate = best_of(run, INNER, repeats=1)
    return best_of(run, steps_for(estimate, seconds))


def time_fit_fused(vocab, dim, batch, negatives, seconds):
    model = FusedRankingModel(vocab, dim, use_fused=True)
    model.compile(optimizer=kg.SparseAdagrad(0.1), steps_per_execution=INNER)
    w, c, n = batch_data(vocab, batch, negatives)
    y = np.zeros((batch, 1 + negatives), "float32")
    data = tf.data.Dataset.from_tensors(
        ({"word": w, "context": c, "negatives": n}, y)
    ).repeat()

    def run(steps):
        model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)

    run(INNER * 2)
    estimate = best_of(run, INNER, repeats=1)
    return best_of(run, steps_for(estimate, seconds))


def time_step(vocab, dim, batch, negatives, seconds, use_fused):
    rng = np.random.default_rng(1)
    tables = []
    accumulators = []
    for _ in range(2):
        tables += [
            tf.Variable(rng.uniform(-0.05, 0.05, (vocab, dim)).astype("float32")),
            tf.Variable(np.ones((vocab, dim), "float32")),
        ]
    accumulators = [tf.Variable(tf.fill(t.shape, 1e-6)) for t in tables]
    w, c, n = (tf.constant(a) for a in batch_data(vocab, batch, negatives))

    @tf.function
    def steps16():
        loss = tf.constant(0.0)
        for _ in tf.range(INNER):
            loss = ranking_step(
                tables, accumulators, w, c, n, learning_rate=0.1, max_norm=2.0,
                min_variance=0.05, max_variance=5.0, use_fused=use_fused,
            )
        return loss

    def run(steps):
        loss = None
        for _ in range(steps // INNER):
            loss = steps16()
        loss.numpy()  # wait for the last call

    run(INNER * 2)
    estimate = best_of(run, INNER, repeats=1)
    return best_of(run, steps_for(estimate, seconds))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--vocab", type=int, default=60_000)
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--negatives", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    keras.utils.set_random_seed(0)

    paths = [
        ("keras fit (SparseAdagrad)", time_keras),
        ("tf step (fallback)", lambda *a: time_step(*a, use_fused=False)),
    ]
    if fused_available():
        paths += [
            ("fused op", lambda *a: time_step(*a, use_fused=True)),
            ("fused fit (FusedRankingModel)", time_fit_fused),
        ]
    else:
        print("fused op unavailable: only the TensorFlow paths are timed")
    print(
        f"vocab {args.vocab}, d={args.dim} diagonal, EL, {args.negatives} negative(s), "
        f"{os.cpu_count()} CPUs"
    )
    print(f"| {'path':<30} | {'batch':>6} | {'ms/step':>8} | {'triples/s':>10} |")
    print(f"|{'-' * 32}|{'-' * 8}|{'-' * 10}|{'-' * 12}|")
    for name, timer in paths:
        for batch in args.batches:
            seconds = timer(args.vocab, args.dim, batch, args.negatives, args.seconds)
            triples = batch * args.negatives / seconds
            print(
                f"| {name:<30} | {batch:>6} | {seconds * 1e3:>8.3f} | {triples:>10.3g} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
