"""Pairs/s of `model.fit` with the layers, against the native trainer, one run.

Models, all composed from the layers and trained by `model.fit` with
`MaxMarginRanking` and `SparseAdagrad`, each three ways: `kernels` (the
compiled kernels of `keras_gauss.kernels`, the default), `reference` (the
reference `keras.ops` code, `KERAS_GAUSS_KERNELS=reference`, in the same
process) and `before` (the reference code with malloc left alone,
`KERAS_GAUSS_MALLOC=0`, in its own process: what main did before the kernels):

- `quick-start`: the README quick start, two 19,000 x 50 tables, EL, one
  negative, at each batch size; on TensorFlow also fed as a `tf.data`
  dataset without the autotuner (path `tf.data`:
  `keras_gauss.tf_data.array_batches`;
  Keras's own dataset of the arrays keeps it, and deleting its iterator at
  the end of the fit waits for the autotuner's thread);
- `kl-5neg-temp`: a model keras-gauss does not ship: KL energy, five
  negatives and a trainable temperature (`energies / exp(t)`) on the energies;
- `hierarchy`: `keras_gauss.hierarchy.model.build_kl_model` (82,115 nodes,
  shared table, 5 corrupted + 1 reversed edge per positive, batch 1,024).

The ids are drawn once with NumPy: a Zipf token stream over 19,000 words; its
(word, context) pairs are the neighbours at distance 1 (window 1), the
negatives unigram^0.75 draws. The native trainer (`NativeTables.train`, what
`train-corpus` runs: no TensorFlow, 2 threads, batch 2,048 per thread) trains
on the same token stream with the same window right before every timed fit,
so every figure is a ratio to it at the same load. The peer a user knows
is `keras-gauss train-corpus` itself (defaults: window 10, 1 negative, the
native engine) on news2017: each repeat first runs it as a user does, a
fresh process, and reads the pairs/s it reports; `/ train-corpus` is a
row's pairs/s over that figure of its repeat, the median of the repeats
(the issue 32 target: the quick start at batch 16,384 on TensorFlow >=
1/3). `--backends torch` (not run by default) times `KERAS_BACKEND=torch`:
no compiled kernels there, so the `reference` path only (the hierarchy
model, a `GaussianModel`, with sparse row gradients; the others, plain
`keras.Model`s, dense gradients of which `SparseAdagrad` updates the
non-zero rows). Each backend runs in its
own subprocesses; each timed fit follows a warm-up fit of the same shapes
(tracing, compiling, building the kernels). Prints a table (best of the
repeats, the spread, wall and CPU milliseconds a step, the ratios to the
native trainer and to `train-corpus`) and the load average. Beside the whole
`fit` call, each row times its steps alone (a callback: the first batch's
start to the last batch's end, as `train-corpus` times its epochs) and the
rest of the call (`fit ms`: Keras building and tearing down its dataset of
the arrays).

    python benchmarks/fit_speed.py [--repeats 3] [--pairs 1000000]
        [--batches 2048 16384 65536] [--backends tensorflow jax torch]
        [--no-reference]  # kernels only
        [--steps-per-execution 1]  # every model's compile(steps_per_execution=...)
        [--corpus ../shared/data/corpus/news2017.txt.gz | --corpus none]
"""

import argparse
import json
import os
import re
import runpy
import subprocess
import sys
import tempfile
import time

import numpy as np

# The tests' Zipf ids, by path (`tests/` on `sys.path` would shadow the
# package with `tests/keras_gauss`).
zipf_ids = runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "tests", "zipf_ids.py"))["zipf_ids"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NEWS2017 = os.path.join(os.path.dirname(ROOT), "shared", "data", "corpus", "news2017.txt.gz")
VOCAB, DIM = 19_000, 50
HIERARCHY_NODES, HIERARCHY_NEGATIVES, HIERARCHY_BATCH = 82_115, 6, 1024


def _load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ---------------------------------------------------------------------------
# Data (parent process, NumPy only)


def make_data(path, pairs, seed=0):
    """Writes the token stream, its window-1 pairs, negatives and hierarchy edges."""
    rng = np.random.default_rng(seed)
    tokens = zipf_ids(rng, VOCAB, pairs // 2 + 1)
    word = np.concatenate([tokens[:-1], tokens[1:]])
    context = np.concatenate([tokens[1:], tokens[:-1]])
    order = rng.permutation(len(word))
    counts = np.bincount(tokens, minlength=VOCAB).astype("float64") + 1.0
    negative_p = counts ** 0.75 / (counts ** 0.75).sum()
    negatives = rng.choice(VOCAB, (len(word), 5), p=negative_p).astype("int32")
    edges = HIERARCHY_BATCH * 300
    np.savez(path, tokens=tokens, word=word[order], context=context[order],
             negatives=negatives, negative_weights=negative_p,
             general=zipf_ids(rng, HIERARCHY_NODES, edges, exponent=0.7),
             specific=rng.integers(0, HIERARCHY_NODES, edges).astype("int32"),
             neg_general=rng.integers(0, HIERARCHY_NODES, (edges, HIERARCHY_NEGATIVES),
                                      dtype="int32"),
             neg_specific=rng.integers(0, HIERARCHY_NODES, (edges, HIERARCHY_NEGATIVES),
                                       dtype="int32"))


def native_pairs_per_second(data, warm=True):
    """The native trainer on the token stream: (pairs/s, pairs)."""
    from keras_gauss.fused.native import NativeTables
    from keras_gauss.fused.sampling import alias_table

    probs, alias = alias_table(data["negative_weights"])
    tokens = data["tokens"]

    def train(ids):
        tables = NativeTables.initial(VOCAB, DIM, seed=0, bounds=(2.0, 0.05, 5.0))
        start = time.perf_counter()
        _, pairs = tables.train(ids, np.array([0, len(ids)]), seed=0, learning_rate=0.1,
                                negative_probs=probs, negative_alias=alias, window=1,
                                dynamic_window=False, negatives=1, batch_size=2048)
        return pairs / (time.perf_counter() - start), pairs

    if warm:
        train(tokens[:100_000])  # warm-up (and the first build of the library)
    return train(tokens)


def reported_pairs_per_second(output):
    """The pairs/s of `train-corpus`'s last line (`... pairs in 10.2 s
    (1,191,475 pairs/s, ...`), or None.

    >>> reported_pairs_per_second("19,064 words, 12 pairs in 1 s (6,212,345 pairs/s, 1 tokens/s)")
    6212345.0
    """
    found = re.findall(r"\(([\d,]+) pairs/s", output)
    return float(found[-1].replace(",", "")) if found else None


def train_corpus_pairs_per_second(corpus, scratch):
    """`keras-gauss train-corpus --corpus CORPUS` (its defaults), a fresh
    process as a user runs it: (the pairs/s it reports, wall s, load after)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "keras_gauss", "train-corpus", "--corpus", corpus,
         "--out", os.path.join(scratch, "train-corpus"), "--overwrite",
         "--checkpoint-every", "0"],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    rate = reported_pairs_per_second(done.stdout)
    if done.returncode != 0 or rate is None:
        sys.exit(f"fit_speed: train-corpus failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return rate, time.perf_counter() - start, _load()


# ---------------------------------------------------------------------------
# Workers (one subprocess per backend)


def quick_start_model(negatives=1, energy="el", temperature=False, steps_per_execution=1):
    import keras
    from keras import ops

    import keras_gauss as kg

    words = kg.GaussianEmbedding(VOCAB, DIM, name="words")
    contexts = kg.GaussianEmbedding(VOCAB, DIM, name="contexts")
    word = keras.Input((), dtype="int32", name="word")
    context = keras.Input((), dtype="int32", name="context")
    negative = keras.Input((negatives,), dtype="int32", name="negatives")
    mean_w, var_w = words(word)
    candidates = ops.concatenate([ops.expand_dims(context, -1), negative], -1)
    mean_c, var_c = contexts(candidates)
    layer = kg.ELEnergy() if energy == "el" else kg.KLEnergy()
    out = layer(ops.expand_dims(mean_w, 1), ops.expand_dims(var_w, 1), mean_c, var_c)
    if temperature:
        out = Temperature()(out)
    model = keras.Model({"word": word, "context": context, "negatives": negative}, out)
    model.compile(optimizer=kg.SparseAdagrad(0.1), loss=kg.MaxMarginRanking(margin=1.0),
                  steps_per_execution=steps_per_execution)
    return model


def _temperature_class():
    import keras
    from keras import ops

    class Temperature(keras.layers.Layer):
        """energies / exp(t), t trainable (not part of keras-gauss)."""

        def build(self, input_shape):
            self.t = self.add_weight(shape=(), initializer="zeros", name="t")

        def call(self, energies):
            return energies / ops.exp(self.t)

    return Temperature


def Temperature():  # noqa: N802 - a layer, made on first use (Keras imported late)
    return _temperature_class()()


def _steps_clock():
    """A callback that notes when the fit's first batch begins and its last
    batch ends (`.seconds()`: the time between, the steps without `fit`'s
    own setup and teardown)."""
    import keras

    class StepsClock(keras.callbacks.Callback):
        first = last = None

        def on_train_batch_begin(self, batch, logs=None):
            if self.first is None:
                self.first = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.last = time.perf_counter()

        def seconds(self):
            return self.last - self.first

    return StepsClock()


def _fit_rate(model, x, y, batch, steps, warmup_steps, feed="arrays"):
    """(pairs/s, ms/step, CPU ms/step, pairs/s of the steps alone, ms of
    `fit`'s own work outside the steps) of a timed fit of `steps` batches
    after a warm-up fit. `feed="tf.data"`: the arrays as a `tf.data` dataset
    of batches without the autotuner (`keras_gauss.tf_data.array_batches`),
    built inside the timed call, instead of Keras's own dataset of them."""
    n = steps * batch
    warm = warmup_steps * batch

    def fit(count, **kwargs):
        inputs, labels = {k: v[:count] for k, v in x.items()}, y[:count]
        if feed == "arrays":
            return model.fit(inputs, labels, batch_size=batch, epochs=1, shuffle=False,
                             verbose=0, **kwargs)
        from keras_gauss.tf_data import array_batches

        return model.fit(array_batches(inputs, labels, batch), epochs=1, shuffle=False, verbose=0,
                         **kwargs)

    fit(warm)
    clock = _steps_clock()
    start, cpu = time.perf_counter(), time.process_time()
    history = fit(n, callbacks=[clock])
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    loss = float(history.history["loss"][-1])
    if not np.isfinite(loss):
        raise RuntimeError(f"the loss is {loss}")
    return (n / seconds, seconds / steps * 1e3, cpu / steps * 1e3, n / clock.seconds(),
            (seconds - clock.seconds()) * 1e3)


def worker(data_path, pairs, batches, paths, label, out, steps_per_execution=1):
    import keras_gauss  # noqa: F401 - before Keras, as the README says (OMP_WAIT_POLICY)
    import keras

    from keras_gauss import kernels
    from keras_gauss.hierarchy.model import build_kl_model

    backend = keras.backend.backend()
    data = dict(np.load(data_path))
    results = []

    native_warm = []

    def record(model_name, path, batch, measured):
        # The native trainer right before: the ratio holds at any load.
        native, _ = native_pairs_per_second(data, warm=not native_warm)
        native_warm.append(True)
        rate, ms, cpu, steps_rate, call_ms = measured()
        results.append({"backend": backend, "model": model_name, "path": label or path,
                        "batch": batch, "pairs_per_s": rate, "ms_per_step": ms,
                        "cpu_ms_per_step": cpu, "steps_pairs_per_s": steps_rate,
                        "call_ms": call_ms, "native": native, "load": _load()})

    def run(path, make, model_name, batch, x, y, steps, warmup):
        # `tf.data`: the kernels, fed a dataset without the autotuner
        feed = "tf.data" if path == "tf.data" else "arrays"
        if path == "reference":
            os.environ["KERAS_GAUSS_KERNELS"] = "reference"
        else:
            os.environ.pop("KERAS_GAUSS_KERNELS", None)
            if kernels.get() is None:
                raise RuntimeError("the kernels are unavailable")
        keras.utils.set_random_seed(0)
        record(model_name, path, batch, lambda: _fit_rate(make(), x, y, batch, steps, warmup, feed))

    for negatives, energy, temperature, model_name, model_batches in (
            (1, "el", False, "quick-start", batches),
            (5, "kl", True, "kl-5neg-temp", [b for b in batches if b == 16384] or batches[:1])):
        x = {"word": data["word"], "context": data["context"],
             "negatives": data["negatives"][:, :negatives]}
        y = np.zeros((len(data["word"]), 1 + negatives), "float32")
        y[:, 0] = 1
        for batch in model_batches:
            steps = max(pairs // batch, 2)
            quick_tf = model_name == "quick-start" and backend == "tensorflow" and "kernels" in paths
            for path in paths + (["tf.data"] if quick_tf else []):
                run(path, lambda: quick_start_model(negatives, energy, temperature,
                                                    steps_per_execution),
                    model_name, batch, x, y, steps, min(4, steps))

    x = {k: data[k] for k in ("general", "specific", "neg_general", "neg_specific")}
    y = np.zeros((len(x["general"]), 1 + HIERARCHY_NEGATIVES), "float32")
    y[:, 0] = 1

    def hierarchy():
        import keras_gauss as kg

        model = build_kl_model(HIERARCHY_NODES, DIM, negatives=HIERARCHY_NEGATIVES,
                               max_norm=4.0)
        model.compile(optimizer=kg.SparseAdagrad(0.05), loss=kg.MaxMarginRanking(),
                      steps_per_execution=steps_per_execution)
        return model

    for path in paths:
        run(path, hierarchy, "hierarchy", HIERARCHY_BATCH, x, y, 200, 20)
    with open(out, "w") as f:
        json.dump(results, f)


def run_worker(backend, data_path, args, scratch, paths, label="", env_extra=None):
    out = os.path.join(scratch, f"{backend}.json")
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
               **(env_extra or {}))
    env.pop("KERAS_GAUSS_KERNELS", None)
    command = [sys.executable, os.path.abspath(__file__), "--worker", data_path, out,
               "--pairs", str(args.pairs), "--batches", *map(str, args.batches),
               "--paths", *paths, "--label", label,
               "--steps-per-execution", str(args.steps_per_execution)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"fit_speed: the {backend} worker failed:\n{done.stderr[-3000:]}")
    with open(out) as f:
        return json.load(f)


# ---------------------------------------------------------------------------
# The table


def summarise(rows, repeats, peers=None):
    """The table: per row the best of the repeats and their spread; `/ native`
    is the row's pairs/s over the native trainer's measured right before it,
    `/ t-c` over `train-corpus`'s of the same repeat (`peers[repeat]`)."""
    peers = peers or {}
    for repeat, (rate, seconds, load) in sorted(peers.items()):
        print(f"keras-gauss train-corpus (news2017, defaults), repeat {repeat + 1}: "
              f"{rate / 1e6:.2f} M pairs/s reported, {seconds:.1f} s wall, load after {load}")
    natives = [r["native"] for r in rows]
    print(f"native trainer (NativeTables.train, window 1, 1 negative, 2 threads, batch 2,048), "
          f"measured before every row: {min(natives) / 1e6:.2f}-{max(natives) / 1e6:.2f} M "
          f"pairs/s over {repeats} repeat(s)")
    groups = {}
    for row in rows:
        key = (row["backend"], row["model"], row["path"], row["batch"])
        groups.setdefault(key, []).append(row)
    header = (f"{'backend':<11}{'model':<13}{'path':<11}{'batch':>6}{'M pairs/s':>10}"
              f"{'spread':>12}{'ms/step':>8}{'cpu ms':>8}{'steps':>7}{'fit ms':>7}"
              f"{'/ native':>9}{'range':>12}"
              + (f"{'/ t-c':>7}{'range':>12}{'steps':>7}{'range':>12}" if peers else ""))
    print(header)
    print("-" * len(header))
    order = {"kernels": 0, "tf.data": 1, "reference": 2, "before": 3}
    for key in sorted(groups, key=lambda k: (k[1] != "quick-start", k[1], k[0], k[3],
                                             order.get(k[2], 9))):
        group = groups[key]
        rates = [r["pairs_per_s"] for r in group]
        to_native = [r["pairs_per_s"] / r["native"] for r in group]
        line = (f"{key[0]:<11}{key[1]:<13}{key[2]:<11}{key[3]:>6}{max(rates) / 1e6:>10.3f}"
                f"{min(rates) / 1e6:>6.2f}-{max(rates) / 1e6:<5.2f}"
                f"{min(r['ms_per_step'] for r in group):>8.2f}"
                f"{min(r['cpu_ms_per_step'] for r in group):>8.2f}"
                f"{max(r['steps_pairs_per_s'] for r in group) / 1e6:>7.3f}"
                f"{min(r['call_ms'] for r in group):>7.0f}"
                f"{max(to_native):>9.3f}{min(to_native):>6.3f}-{max(to_native):<5.3f}")
        if peers:
            for rate in ("pairs_per_s", "steps_pairs_per_s"):
                to_peer = [r[rate] / peers[r["repeat"]][0] for r in group]
                line += (f"{float(np.median(to_peer)):>7.3f}"
                         f"{min(to_peer):>6.3f}-{max(to_peer):<5.3f}")
        print(line)
    for key in sorted(groups):
        group = sorted(groups[key], key=lambda r: r["repeat"])
        if peers and key[1] == "quick-start":
            print(f"{key[0]} {key[1]} {key[2]} {key[3]}, each repeat: "
                  + "; ".join(f"{r['pairs_per_s'] / 1e6:.2f} M ({r['steps_pairs_per_s'] / 1e6:.2f} "
                              f"in the steps) / {peers[r['repeat']][0] / 1e6:.2f} M" for r in group))
    print("(steps: M pairs/s from the fit's first batch to its last, without `fit`'s own "
          "setup and teardown; fit ms: that setup and teardown, the least of the repeats; "
          "/ native: pairs/s over the native trainer's measured right before; "
          + ("/ t-c: over train-corpus's of the same repeat, the whole fit's and the steps', "
             "the median of the repeats (its own speed varies most); " if peers else "")
          + "the hierarchy's pairs are edges, 7 candidate pairs each)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=1_000_000,
                        help="(word, context) pairs of each timed fit")
    parser.add_argument("--batches", type=int, nargs="+", default=[2048, 16384, 65536])
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax"],
                        choices=("tensorflow", "jax", "torch"))
    parser.add_argument("--steps-per-execution", type=int, default=1,
                        help="every model's `compile(steps_per_execution=...)` (default 1, "
                             "as the README's quick start)")
    parser.add_argument("--no-reference", action="store_true",
                        help="only the kernels (no reference or before runs)")
    parser.add_argument("--corpus", default=NEWS2017,
                        help="the corpus `train-corpus` runs on before each repeat "
                             "(default: news2017 in ../shared/data; `none`: no such run)")
    parser.add_argument("--worker", nargs=2, metavar=("DATA", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--paths", nargs="+", default=["kernels"], help=argparse.SUPPRESS)
    parser.add_argument("--label", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.pairs, args.batches, args.paths, args.label,
               args.worker[1], args.steps_per_execution)
        return
    if args.steps_per_execution < 1:
        sys.exit(f"fit_speed: --steps-per-execution must be >= 1, got {args.steps_per_execution}")
    print(f"load average at start {_load()}; {os.cpu_count()} CPUs; "
          f"steps_per_execution={args.steps_per_execution}")
    corpus = None if args.corpus == "none" else args.corpus
    if corpus is not None and not os.path.exists(corpus):
        sys.exit(f"fit_speed: --corpus {corpus} does not exist (`--corpus none`: no "
                 "train-corpus reference)")
    rows, peers = [], {}
    with tempfile.TemporaryDirectory() as scratch:
        data_path = os.path.join(scratch, "data.npz")
        make_data(data_path, args.pairs)
        for repeat in range(args.repeats):
            if corpus is not None:
                peers[repeat] = train_corpus_pairs_per_second(corpus, scratch)
                print(f"repeat {repeat + 1}: train-corpus {peers[repeat][0] / 1e6:.2f} M "
                      f"pairs/s, load {peers[repeat][2]}", flush=True)
            for backend in args.backends:
                if backend == "torch":  # no compiled kernels: the keras.ops code, row updates
                    got = run_worker(backend, data_path, args, scratch, ["reference"])
                    rows.extend(dict(row, repeat=repeat) for row in got)
                    print(f"repeat {repeat + 1}: {backend} done, load {_load()}", flush=True)
                    continue
                got = run_worker(backend, data_path, args, scratch,
                                 ["kernels"] + ([] if args.no_reference else ["reference"]))
                if not args.no_reference:
                    got += run_worker(backend, data_path, args, scratch, ["reference"],
                                      "before", {"KERAS_GAUSS_MALLOC": "0"})
                rows.extend(dict(row, repeat=repeat) for row in got)
                print(f"repeat {repeat + 1}: {backend} done, load {_load()}", flush=True)
    summarise(rows, args.repeats, peers)
    print(f"load average at end {_load()}")


if __name__ == "__main__":
    main()
