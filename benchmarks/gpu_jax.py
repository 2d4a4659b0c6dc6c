"""The Keras path on JAX with large minibatches: pairs/s, step time against vocabulary, quality.

Two steps, so the machine that trains needs no TensorFlow:

    # here (TensorFlow): tokenize news2017 with the pipeline's tokenizer
    python benchmarks/gpu_jax.py prepare --out DATA_DIR
    # on the GPU machine (JAX + Keras + keras-gauss; no TensorFlow needed)
    python benchmarks/gpu_jax.py run --data DATA_DIR [--similarity DIR]

`prepare` writes `ids.npy` (the in-vocabulary token ids, int32, line after
line), `lengths.npy` (tokens per line) and `vocab.tsv` (min_count 5).

`run` trains `keras_gauss.pipelines.build_corpus_model` (a `GaussianModel`)
with `SparseAdagrad` and `MaxMarginRanking` through `model.fit` on
`KERAS_BACKEND=jax`, on skip-gram pairs with the pipeline's rules
(subsampling `keep_probabilities`, reduced window, one negative from
unigram^0.75) drawn, with `--pairs device` (default), on the device inside
the compiled step (`keras_gauss.layers.SkipGramSampler` in front of the
model, `keras_gauss.pipelines.device_pairs.device_trainer`: only the step
numbers are fed, `--steps-per-execution` steps a call), or with `--pairs
host` in NumPy on the host (a shuffled epoch of pairs), and prints three
tables:

1. speed: pairs/s of `model.fit` for each `--batches` size (one epoch
   after a warm-up epoch that compiles; `--pairs both`: each path);
2. scaling: ms per step at each `--vocabs` size (device pairs: news2017's
   ids modulo 10k; host pairs: the same ids < 10k every step) for
   `SparseAdagrad` (touched rows) and Keras's `Adagrad` (dense);
3. quality (with `--quality-epochs N > 0`): the corpus recipe of
   `benchmarks/corpus_quality.py` (batch 16384, lr 0.4, sample 1e-3,
   window 15, margin 0.5, C=4, 20 epochs) for each `--seeds`, scored by
   Spearman rho of the cosine of the word means on WordSim353 and
   SimLex-999 (files from `--similarity`), beside random vectors.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path


def _prepare(args):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf

    from keras_gauss.pipelines import build_vocabulary
    from keras_gauss.pipelines import load_corpus
    from keras_gauss.pipelines import tokenize

    corpus = Path(args.corpus)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    vocab = build_vocabulary(str(corpus), min_count=args.min_count)
    ids, lengths = [], []
    for batch in load_corpus(str(corpus)).batch(256):
        rows = vocab.lookup(tokenize(batch))
        rows = tf.ragged.boolean_mask(rows, rows >= 0)
        ids.append(rows.flat_values.numpy().astype("int32"))
        lengths.append(rows.row_lengths().numpy().astype("int32"))
    np.save(out / "ids.npy", np.concatenate(ids))
    np.save(out / "lengths.npy", np.concatenate(lengths))
    vocab.save(out / "vocab.tsv")
    print(f"{sum(map(len, ids))} tokens, {len(vocab)} words -> {out}")


# --------------------------------------------------------------------------- data


def read_vocab(path):
    words, counts = [], []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        word, count = line.rsplit("\t", 1)
        words.append(word)
        counts.append(int(count))
    return words, counts


def keep_probabilities(counts, sample):
    """word2vec's subsampling rule (as `keras_gauss.pipelines.keep_probabilities`)."""
    import numpy as np

    counts = np.asarray(counts, np.float64)
    threshold = sample * counts.sum()
    return np.minimum((np.sqrt(counts / threshold) + 1) * threshold / counts, 1.0)


def epoch_pairs(ids, lengths, counts, window, sample, rng):
    """One epoch of shuffled (word, context) pairs: subsampling, reduced window, both sides."""
    import numpy as np

    line = np.repeat(np.arange(len(lengths)), lengths)
    keep = rng.random(len(ids)) < keep_probabilities(counts, sample)[ids]
    ids, line = ids[keep], line[keep]
    reach = rng.integers(1, window + 1, len(ids))
    words, contexts = [], []
    for offset in range(1, window + 1):
        same = line[offset:] == line[:-offset]
        left, right = ids[:-offset], ids[offset:]
        forward = same & (offset <= reach[:-offset])   # centre left, context right
        backward = same & (offset <= reach[offset:])   # centre right, context left
        words += [left[forward], right[backward]]
        contexts += [right[forward], left[backward]]
    words, contexts = np.concatenate(words), np.concatenate(contexts)
    order = rng.permutation(len(words))
    return words[order], contexts[order]


def negative_table(counts, size=1_000_000, power=0.75):
    """word2vec's table (as `keras_gauss.pipelines.negative_table`)."""
    import numpy as np

    weights = np.asarray(counts, dtype=np.float64) ** power
    cdf = np.cumsum(weights) / weights.sum()
    ids = np.searchsorted(cdf, (np.arange(size) + 0.5) / size, side="right")
    return np.minimum(ids, len(cdf) - 1).astype(np.int32)


def device_pairs(data, batch, seed=0, window=15, sample=1e-3):
    """`(sampler, steps)`: a `SkipGramSampler` over the corpus and the steps
    of an epoch (the host epoch's expected pairs over `batch`)."""
    import numpy as np

    from keras_gauss.layers import SkipGramSampler
    from keras_gauss.layers.skipgram_sampler import expected_pairs

    ids, lengths, counts = data
    lines = np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)
    keep = keep_probabilities(counts, sample)
    sampler = SkipGramSampler.from_arrays(ids, lines, keep, negative_table(counts),
                                          window=window, batch_size=batch, seed=seed)
    _, pairs = expected_pairs(lines, keep[ids], window, True)
    return sampler, max(1, round(pairs / batch))


def device_fit(trainer, first, steps, args):
    """`trainer.fit` on steps `first..first+steps-1` (step numbers only)."""
    import numpy as np

    x = {"step": np.arange(first, first + steps, dtype=np.int32)}
    y = np.tile(np.array([[1.0, 0.0]], "float32"), (steps, 1))
    trainer.fit(x, y, batch_size=1, epochs=1, shuffle=False, verbose=0)


def trainer_for(model, sampler, args):
    from keras_gauss.pipelines.device_pairs import device_trainer

    return device_trainer(model, sampler, args.steps_per_execution)


def negatives_for(n, counts, k, rng):
    import numpy as np

    cdf = np.cumsum(np.asarray(counts, np.float64) ** 0.75)
    return np.searchsorted(cdf, rng.random((n, k)) * cdf[-1]).astype("int32")


def examples(words, contexts, counts, k, rng):
    import numpy as np

    x = {"word": words.astype("int32"), "context": contexts.astype("int32"),
         "negatives": negatives_for(len(words), counts, k, rng)}
    y = np.zeros((len(words), 1 + k), "float32")
    y[:, 0] = 1.0
    return x, y


# --------------------------------------------------------------------------- model


def corpus_model(vocab_size, lr, seed, energy="el", margin=0.5, dim=50, max_norm=4.0,
                 optimizer=None):
    import keras

    from keras_gauss.losses import MaxMarginRanking
    from keras_gauss.optimizers import SparseAdagrad
    from keras_gauss.pipelines.model import build_corpus_model

    keras.utils.set_random_seed(seed)
    model = build_corpus_model(
        vocab_size, dim, negatives=1, energy=energy, max_norm=max_norm,
        min_variance=0.05, max_variance=5.0,
        mean_initializer=keras.initializers.RandomUniform(-0.05, 0.05, seed=seed),
        variance_initializer=keras.initializers.Constant(1.0))
    model.compile(optimizer=optimizer or SparseAdagrad(lr), loss=MaxMarginRanking(margin))
    return model


def _sync(model):
    # model.fit may return before the device is done: wait for the tables
    # (reading one number, not copying a table to the host).
    import jax

    for variable in model.trainable_variables:
        jax.block_until_ready(variable.value)


def speed(data, batches, args, log):
    import numpy as np

    ids, lengths, counts = data
    rows = []
    paths = ["device", "host"] if args.pairs == "both" else [args.pairs]
    if "host" in paths:
        rng = np.random.default_rng(0)
        words, contexts = epoch_pairs(ids, lengths, counts, 15, 1e-3, rng)
        x, y = examples(words, contexts, counts, 1, rng)
    for path in paths:
        for batch in batches:
            model = corpus_model(len(counts), 0.4, 0)
            if path == "device":
                sampler, steps = device_pairs(data, batch)
                trainer = trainer_for(model, sampler, args)
                pairs = steps * batch

                def epoch(i):
                    device_fit(trainer, i * steps, steps, args)
            else:
                trainer, pairs, steps = model, len(words), -(-len(words) // batch)

                def epoch(i):
                    model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
            start = time.perf_counter()
            epoch(0)
            _sync(model)
            first = time.perf_counter() - start
            times = []
            for i in range(args.repeats):
                start = time.perf_counter()
                epoch(i + 1)
                _sync(model)
                times.append(time.perf_counter() - start)
            best = min(times)
            rows.append({"pairs_from": path, "batch": batch, "pairs": pairs,
                         "first_epoch_s": first, "epoch_s": best, "pairs_per_s": pairs / best,
                         "ms_per_step": best / steps * 1e3})
            log(f"speed {rows[-1]}")
    return rows


def scaling(data, vocabs, batch, steps, args, log):
    import keras
    import numpy as np

    from keras_gauss.optimizers import SparseAdagrad

    rng = np.random.default_rng(0)
    x = {"word": rng.integers(0, 10_000, batch).astype("int32"),
         "context": rng.integers(0, 10_000, batch).astype("int32"),
         "negatives": rng.integers(0, 10_000, (batch, 1)).astype("int32")}
    y = np.tile(np.array([[1.0, 0.0]], "float32"), (batch, 1))
    xs = {k: np.concatenate([v] * steps) for k, v in x.items()}
    ys = np.concatenate([y] * steps)
    device = args.pairs != "host"
    ids, lengths, _ = data
    small = (ids % 10_000, lengths, np.bincount(ids % 10_000, minlength=10_000) + 1)
    rows = []
    for name, make in (("SparseAdagrad", lambda: SparseAdagrad(0.05)),
                       ("keras Adagrad", lambda: keras.optimizers.Adagrad(0.05))):
        for vocab in vocabs:
            model = corpus_model(vocab, 0.05, 0, optimizer=make())
            if device:  # a sampler of its own: clear_session forgets the last one
                trainer = trainer_for(model, device_pairs(small, batch)[0], args)

                def run(i, trainer=trainer):
                    device_fit(trainer, i * steps, steps, args)
            else:
                def run(i, model=model):
                    model.fit(xs, ys, batch_size=batch, epochs=1, shuffle=False, verbose=0)
            run(0)
            _sync(model)
            times = []
            for i in range(3):
                start = time.perf_counter()
                run(i + 1)
                _sync(model)
                times.append((time.perf_counter() - start) / steps * 1e3)
            rows.append({"optimizer": name, "vocab": vocab, "ms_per_step": min(times),
                         "pairs_from": "device" if device else "host"})
            log(f"scaling {rows[-1]}")
            model = trainer = run = None
            keras.backend.clear_session()
    return rows


# --------------------------------------------------------------------------- quality


def read_pairs(path):
    pairs = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        pairs.append((fields[0].lower(), fields[1].lower(), float(fields[2])))
    return pairs


def spearman(means, index, pairs):
    import numpy as np
    from scipy.stats import spearmanr

    kept = [(index[a], index[b], s) for a, b, s in pairs if a in index and b in index]
    left, right, human = map(np.array, zip(*kept))
    a, b = means[left], means[right]
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-12)
    return spearmanr(cos, human).correlation, len(kept), len(pairs)


def quality(data, words_list, args, log):
    import numpy as np

    ids, lengths, counts = data
    index = {w: i for i, w in enumerate(words_list)}
    files = {name: read_pairs(Path(args.similarity) / f"{name}.tsv")
             for name in ("wordsim353", "simlex999")}
    rows = []
    random_means = np.random.default_rng(0).normal(size=(len(counts), 50))
    rows.append({"run": "random vectors", **{
        name: spearman(random_means, index, pairs)[0] for name, pairs in files.items()}})
    for energy in args.energies:
        for seed in args.seeds:
            model = corpus_model(len(counts), args.quality_lr, seed, energy=energy)
            rng = np.random.default_rng(seed)
            pairs_seen, start = 0, time.perf_counter()
            if args.pairs != "host":
                sampler, steps = device_pairs(data, args.quality_batch, seed=seed)
                trainer = trainer_for(model, sampler, args)
            for epoch in range(args.quality_epochs):
                if args.pairs != "host":
                    device_fit(trainer, epoch * steps, steps, args)
                    pairs_seen += steps * args.quality_batch
                    continue
                words, contexts = epoch_pairs(ids, lengths, counts, 15, 1e-3, rng)
                x, y = examples(words, contexts, counts, 1, rng)
                model.fit(x, y, batch_size=args.quality_batch, epochs=1, shuffle=False,
                          verbose=0)
                pairs_seen += len(words)
            _sync(model)
            seconds = time.perf_counter() - start
            means = model.get_layer("words").means.numpy()
            row = {"run": f"{energy} seed {seed} ({args.pairs} pairs)", "seconds": seconds,
                   "pairs_per_s": pairs_seen / seconds}
            for name, pairs in files.items():
                rho, covered, total = spearman(means, index, pairs)
                row[name] = rho
                row[f"{name}_covered"] = f"{covered}/{total}"
            rows.append(row)
            log(f"quality {row}")
    return rows


def _run(args):
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import jax
    import keras
    import numpy as np

    out = Path(args.out) if args.out else None
    lines = []

    def log(text):
        print(text, flush=True)
        lines.append(text)
        if out:
            (out / "gpu_jax.log").write_text("\n".join(lines) + "\n")

    if out:
        out.mkdir(parents=True, exist_ok=True)
    log(f"keras {keras.__version__} backend {keras.backend.backend()}, jax {jax.__version__}, "
        f"devices {jax.devices()}, load average {os.getloadavg()}")
    data_dir = Path(args.data)
    ids = np.load(data_dir / "ids.npy")
    lengths = np.load(data_dir / "lengths.npy")
    if args.max_lines:  # a quick smoke run on the first lines
        lengths = lengths[:args.max_lines]
        ids = ids[:lengths.sum()]
    words_list, counts = read_vocab(data_dir / "vocab.tsv")
    counts = np.asarray(counts)
    data = (ids, lengths, counts)
    log(f"corpus {len(ids)} tokens, {len(lengths)} lines, vocabulary {len(counts)}")
    results = {}
    if args.batches:
        results["speed"] = speed(data, args.batches, args, log)
    if args.vocabs:
        results["scaling"] = scaling(data, args.vocabs, args.scaling_batch, args.scaling_steps,
                                     args, log)
    if args.quality_epochs > 0:
        results["quality"] = quality(data, words_list, args, log)
    if out:
        (out / "gpu_jax.json").write_text(json.dumps(results, indent=1))

    print(f"\n{jax.devices()[0].device_kind}, keras {keras.__version__}, jax {jax.__version__}")
    for row in results.get("speed", []):
        print(f"speed  {row['pairs_from']:<6} pairs, batch {row['batch']:>7}: "
              f"{row['pairs_per_s'] / 1e6:6.2f} M pairs/s "
              f"({row['ms_per_step']:.2f} ms/step, epoch {row['epoch_s']:.2f} s of "
              f"{row['pairs']} pairs; first epoch with compile {row['first_epoch_s']:.1f} s)")
    for row in results.get("scaling", []):
        print(f"scale  {row['optimizer']:<14} ({row['pairs_from']} pairs) vocab {row['vocab']:>10}: "
              f"{row['ms_per_step']:8.2f} ms/step (batch {args.scaling_batch})")
    for row in results.get("quality", []):
        extra = (f" ({row['seconds']:.0f} s, {row['pairs_per_s'] / 1e6:.2f} M pairs/s)"
                 if "seconds" in row else "")
        print(f"qual   {row['run']:<16} WS353 {row['wordsim353']:.3f}  "
              f"SimLex {row['simlex999']:.3f}{extra}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="tokenize the corpus (needs TensorFlow)")
    prep.add_argument("--corpus", default=str(
        Path(__file__).resolve().parents[1].parent / "shared/data/corpus/news2017.txt.gz"))
    prep.add_argument("--out", required=True)
    prep.add_argument("--min-count", type=int, default=5)
    run = sub.add_parser("run", help="train and time on KERAS_BACKEND=jax")
    run.add_argument("--data", required=True, help="the folder `prepare` wrote")
    run.add_argument("--similarity", default=str(
        Path(__file__).resolve().parents[1].parent / "shared/data/similarity"))
    run.add_argument("--out", help="folder for gpu_jax.log and gpu_jax.json")
    run.add_argument("--batches", type=int, nargs="*", default=[16384, 65536, 262144])
    run.add_argument("--repeats", type=int, default=2)
    run.add_argument("--pairs", choices=("device", "host", "both"), default="device",
                     help="where the pairs are drawn: on the device inside the compiled "
                          "step, on the host in NumPy, or both (speed: each path; scaling "
                          "and quality: device)")
    run.add_argument("--steps-per-execution", type=int, default=32,
                     help="steps a compiled call with device pairs (default: %(default)s)")
    run.add_argument("--max-lines", type=int, help="use only the first lines (smoke runs)")
    run.add_argument("--vocabs", type=int, nargs="*",
                     default=[10_000, 100_000, 1_000_000, 10_000_000])
    run.add_argument("--scaling-batch", type=int, default=65536)
    run.add_argument("--scaling-steps", type=int, default=50)
    run.add_argument("--quality-epochs", type=int, default=20)
    run.add_argument("--quality-batch", type=int, default=16384)
    run.add_argument("--quality-lr", type=float, default=0.4)
    run.add_argument("--energies", nargs="*", default=["el"])
    run.add_argument("--seeds", type=int, nargs="*", default=[0])
    args = parser.parse_args(argv)
    if args.command == "prepare":
        _prepare(args)
    else:
        _run(args)


if __name__ == "__main__":
    sys.exit(main())
