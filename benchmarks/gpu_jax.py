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
   `benchmarks/corpus_quality.py` (sample 1e-3, window 15, margin 0.5,
   C=4, 20 epochs) at `--quality-batch` (16384) with `train-corpus`'s GPU
   rate and AdaGrad floor for that batch (`optimizer_for_batch`; 0.4 at
   16384, where the CPU recipe trains at 0.5), for each `--seeds`, scored by
   Spearman rho of the cosine of the word means on WordSim353 and
   SimLex-999 (files from `--similarity`), beside random vectors; with
   `--target R`, WordSim353 after every epoch and the training seconds
   until it first reached R.

`--no-barrier` adds the speed rows without the optimization barrier on the
row gradients (`keras_gauss.models.row_lookups.materialized` made an
identity) and without the scan (as before issue 32): XLA then fuses the
backward pass into the optimizer's scatter, which serializes on frequent
ids on a GPU. `--no-scan` adds the rows with the barrier but the steps of
a call run as single compiled steps (Keras's loop), not one `lax.scan`.
`--reference` adds a hand-written JAX step at each batch size (the same
model, loss and row AdaGrad in plain JAX, `--steps-per-execution` steps
in one `lax.scan`, ids drawn from the unigram distribution on the device):
what the device can do without Keras; `--reference-updates unique shared
dense` times the row update's ways of finding the rows (`reference_trainer`).
`benchmarks/gpu_check.sh` runs it
all on a GPU machine that has JAX but no TensorFlow, Keras or keras-gauss.
"""

import argparse
import contextlib
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


def trainer_for(model, sampler, args, scan=None):
    from keras_gauss.pipelines.device_pairs import device_trainer

    return device_trainer(model, sampler, args.steps_per_execution, scan=scan)


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


def quality_optimizer(args):
    """None (`SparseAdagrad(--quality-lr)`), or without --quality-lr the
    optimizer `train-corpus` on a GPU trains --quality-batch with."""
    if args.quality_lr is not None:
        return None
    from keras_gauss.optimizers import SparseAdagrad
    from keras_gauss.pipelines.train import optimizer_for_batch

    settings = optimizer_for_batch(args.quality_batch)
    return SparseAdagrad(settings["learning_rate"],
                         initial_accumulator_value=settings["initial_accumulator"],
                         epsilon=settings["epsilon"])


def _sync(model):
    # model.fit may return before the device is done: wait for the tables
    # (reading one number, not copying a table to the host).
    import jax

    for variable in model.trainable_variables:
        jax.block_until_ready(variable.value)


@contextlib.contextmanager
def barrier(on):
    """With `on` False: the row gradients unguarded (`materialized` an
    identity), as before issue 32."""
    from keras_gauss.models import gaussian_model
    from keras_gauss.models import row_lookups

    saved = row_lookups.materialized, gaussian_model.materialized
    if not on:
        def identity(*arrays):
            return arrays[0] if len(arrays) == 1 else arrays
        row_lookups.materialized = gaussian_model.materialized = identity
    try:
        yield
    finally:
        row_lookups.materialized, gaussian_model.materialized = saved


def speed(data, batches, args, log):
    rows = []
    variants = [("keras-gauss fit", True, None)]  # (column, barrier, scan)
    if args.no_scan:
        variants.append(("no scan", True, False))
    if args.no_barrier:
        variants.append(("before (no barrier, no scan)", False, False))
    for variant, guarded, scan in variants:
        with barrier(guarded):
            rows += speed_rows(data, batches, args, log, guarded, scan, variant)
    return rows


def speed_rows(data, batches, args, log, guarded, scan, variant):
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
                trainer = trainer_for(model, sampler, args, scan)
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
            for i in range(args.repeats if variant == "keras-gauss fit" else 1):
                start = time.perf_counter()
                epoch(i + 1)
                _sync(model)
                times.append(time.perf_counter() - start)
            best = min(times)
            rows.append({"pairs_from": path, "variant": variant, "batch": batch, "pairs": pairs,
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
    makers = {"sparse": ("SparseAdagrad", lambda: SparseAdagrad(0.05)),
              "keras": ("keras Adagrad", lambda: keras.optimizers.Adagrad(0.05))}
    for name, make in [makers[key] for key in args.scaling_optimizers]:
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


# --------------------------------------------------------------------------- reference


REFERENCE_UPDATES = ("unique", "shared", "dense")


def reference_trainer(counts, batch, steps, lr=0.4, dim=50, margin=0.5, max_norm=4.0,
                      min_variance=0.05, max_variance=5.0, update="unique"):
    """`(train, tables)`: a hand-written JAX step of the corpus model (EL
    energy, one negative, max-margin loss, row AdaGrad with the mean norm
    and variance clips), `steps` of them in one `lax.scan`; word and
    context ids drawn from the unigram distribution, negatives from
    unigram^0.75, on the device. `train(tables, key) -> (tables, key)`.

    `update` is how the row AdaGrad finds the rows (the same arithmetic):
    `"unique"` (as `SparseAdagrad` on JAX: `jnp.unique` of each table's ids,
    then `segment_sum`), `"shared"` (one `unique` for a layer's mean and
    variance tables, which share their ids), `"dense"` (no sort: the
    gradient scatter-added into a table-sized buffer and every row updated
    where it was touched; its cost grows with the vocabulary)."""
    if update not in REFERENCE_UPDATES:
        raise ValueError(f"update must be one of {REFERENCE_UPDATES}, not {update!r}")
    import jax
    import numpy as np
    from jax import numpy as jnp
    from jax.ops import segment_sum

    vocab = len(counts)
    unigram = jnp.asarray(np.cumsum(counts) / np.sum(counts), jnp.float32)
    smoothed = np.asarray(counts, np.float64) ** 0.75
    noise = jnp.asarray(np.cumsum(smoothed) / smoothed.sum(), jnp.float32)

    def draw(key, cdf):
        return jnp.minimum(jnp.searchsorted(cdf, jax.random.uniform(key, (batch,))), vocab - 1)

    def energy(mean_i, var_i, mean_j, var_j):
        var = var_i + var_j
        return -0.5 * (jnp.log(var) + jnp.square(mean_i - mean_j) / var).sum(-1)

    def loss(rows):
        (mw, vw), (mc, vc), (mn, vn) = rows
        return jnp.mean(jax.nn.relu(margin - energy(mw, vw, mc, vc) + energy(mw, vw, mn, vn)))

    def unique_rows(ids):
        return jnp.unique(ids, size=ids.shape[0], fill_value=vocab, return_inverse=True)

    def adagrad(table, acc, ids, grad, clip, found=None):
        if update == "dense":
            summed = jnp.zeros_like(table).at[ids].add(grad)
            touched = jnp.zeros((vocab, 1), bool).at[ids].set(True)
            acc_new = acc + jnp.square(summed)
            new = clip(table - lr * summed / jnp.sqrt(acc_new + 1e-7))
            return jnp.where(touched, new, table), jnp.where(touched, acc_new, acc)
        rows, positions = unique_rows(ids) if found is None else found
        grad = segment_sum(grad, positions.reshape(-1), num_segments=ids.shape[0])
        acc_rows = acc.at[rows].get(mode="fill", fill_value=0) + jnp.square(grad)
        new = clip(table.at[rows].get(mode="fill", fill_value=0)
                   - lr * grad / jnp.sqrt(acc_rows + 1e-7))
        return table.at[rows].set(new, mode="drop"), acc.at[rows].set(acc_rows, mode="drop")

    def clip_mean(rows):
        norm = jnp.linalg.norm(rows, axis=-1, keepdims=True)
        return rows * jnp.minimum(1.0, max_norm / jnp.maximum(norm, 1e-12))

    def clip_var(rows):
        return jnp.clip(rows, min_variance, max_variance)

    def step(tables, key):
        key, kw, kc, kn = jax.random.split(key, 4)
        words, contexts, negatives = draw(kw, unigram), draw(kc, unigram), draw(kn, noise)
        (wm, wv, wma, wva), (cm, cv, cma, cva) = tables
        rows = ((wm[words], wv[words]), (cm[contexts], cv[contexts]),
                (cm[negatives], cv[negatives]))
        grads = jax.lax.optimization_barrier(jax.grad(loss)(rows))
        (gwm, gwv), (gcm, gcv), (gnm, gnv) = grads
        both = jnp.concatenate([contexts, negatives])
        shared = update == "shared"
        found_w, found_c = (unique_rows(words), unique_rows(both)) if shared else (None, None)
        wm, wma = adagrad(wm, wma, words, gwm, clip_mean, found_w)
        wv, wva = adagrad(wv, wva, words, gwv, clip_var, found_w)
        cm, cma = adagrad(cm, cma, both, jnp.concatenate([gcm, gnm]), clip_mean, found_c)
        cv, cva = adagrad(cv, cva, both, jnp.concatenate([gcv, gnv]), clip_var, found_c)
        return ((wm, wv, wma, wva), (cm, cv, cma, cva)), key

    @jax.jit
    def train(tables, key):
        def body(carry, _):
            return step(*carry), None
        return jax.lax.scan(body, (tables, key), None, length=steps)[0]

    rng = np.random.default_rng(0)

    def table():
        means = jnp.asarray(rng.uniform(-0.05, 0.05, (vocab, dim)), jnp.float32)
        acc = jnp.full((vocab, dim), 1e-6, jnp.float32)
        return (means, jnp.ones((vocab, dim), jnp.float32), acc, acc)

    return train, (table(), table())


def reference(data, batches, args, log):
    import jax

    _, _, counts = data
    rows = []
    for batch, update in ((b, u) for b in batches for u in args.reference_updates):
        steps = args.steps_per_execution
        train, tables = reference_trainer(counts, batch, steps, update=update)
        key = jax.random.key(0)
        start = time.perf_counter()
        tables, key = jax.block_until_ready(train(tables, key))
        first = time.perf_counter() - start
        calls = max(1, round(args.reference_pairs / (batch * steps)))
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            for _ in range(calls):
                tables, key = train(tables, key)
            jax.block_until_ready(tables)
            times.append(time.perf_counter() - start)
        best = min(times)
        pairs = calls * steps * batch
        variant = "hand-written step" + ("" if update == "unique" else f" ({update})")
        rows.append({"pairs_from": "reference", "variant": variant, "batch": batch, "pairs": pairs,
                     "first_epoch_s": first, "epoch_s": best, "pairs_per_s": pairs / best,
                     "ms_per_step": best / (calls * steps) * 1e3})
        log(f"reference {rows[-1]}")
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
            model = corpus_model(len(counts), args.quality_lr, seed, energy=energy,
                                 optimizer=quality_optimizer(args))
            rng = np.random.default_rng(seed)
            pairs_seen, seconds, reached, curve, clock = 0, 0.0, None, [], []
            start = time.perf_counter()
            if args.pairs != "host":
                sampler, steps = device_pairs(data, args.quality_batch, seed=seed)
                trainer = trainer_for(model, sampler, args)
            for epoch in range(args.quality_epochs):
                if args.pairs != "host":
                    device_fit(trainer, epoch * steps, steps, args)
                    pairs_seen += steps * args.quality_batch
                else:
                    words, contexts = epoch_pairs(ids, lengths, counts, 15, 1e-3, rng)
                    x, y = examples(words, contexts, counts, 1, rng)
                    model.fit(x, y, batch_size=args.quality_batch, epochs=1, shuffle=False,
                              verbose=0)
                    pairs_seen += len(words)
                if args.target is None:
                    continue
                _sync(model)  # the clock stops while WordSim353 is scored
                seconds += time.perf_counter() - start
                rho = spearman(model.get_layer("words").means.numpy(), index,
                               files["wordsim353"])[0]
                curve.append(round(float(rho), 4))
                clock.append(round(seconds, 2))
                if reached is None and rho >= args.target:
                    reached = (epoch + 1, seconds)
                start = time.perf_counter()
            _sync(model)
            seconds += time.perf_counter() - start
            means = model.get_layer("words").means.numpy()
            row = {"run": f"{energy} seed {seed} ({args.pairs} pairs)", "seconds": seconds,
                   "pairs_per_s": pairs_seen / seconds, "wordsim353_by_epoch": curve,
                   "seconds_by_epoch": clock,
                   "target_epoch": reached and reached[0],
                   "target_seconds": reached and reached[1]}
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
    if args.reference and args.batches:
        results["reference"] = reference(data, args.batches, args, log)
    if args.vocabs:
        results["scaling"] = scaling(data, args.vocabs, args.scaling_batch, args.scaling_steps,
                                     args, log)
    if args.quality_epochs > 0:
        results["quality"] = quality(data, words_list, args, log)
    if out:
        (out / "gpu_jax.json").write_text(json.dumps(results, indent=1))

    print(f"\n{jax.devices()[0].device_kind}, keras {keras.__version__}, jax {jax.__version__}")
    for row in results.get("speed", []) + results.get("reference", []):
        name = row.get("variant", "hand-written step")
        print(f"speed  {row['pairs_from']:<9} pairs, {name:<28}, batch {row['batch']:>7}: "
              f"{row['pairs_per_s'] / 1e6:6.2f} M pairs/s "
              f"({row['ms_per_step']:.2f} ms/step, {row['epoch_s']:.2f} s for "
              f"{row['pairs']} pairs; first call with compile {row['first_epoch_s']:.1f} s)")
    print_table(results)
    for row in results.get("scaling", []):
        print(f"scale  {row['optimizer']:<14} ({row['pairs_from']} pairs) vocab {row['vocab']:>10}: "
              f"{row['ms_per_step']:8.2f} ms/step (batch {args.scaling_batch})")
    for row in results.get("quality", []):
        extra = (f" ({row['seconds']:.0f} s, {row['pairs_per_s'] / 1e6:.2f} M pairs/s)"
                 if "seconds" in row else "")
        if row.get("target_seconds") is not None:
            extra += (f"; WS353 >= {args.target} after epoch {row['target_epoch']}, "
                      f"{row['target_seconds']:.1f} s of training (the first epoch, "
                      f"with the compile: {row['seconds_by_epoch'][0]:.1f} s)")
        elif row.get("wordsim353_by_epoch"):
            extra += f"; WS353 never reached {args.target}"
        print(f"qual   {row['run']:<16} WS353 {row['wordsim353']:.3f}  "
              f"SimLex {row['simlex999']:.3f}{extra}")


def print_table(results):
    """The speed rows side by side: M pairs/s (ms/step) per batch."""
    rows = results.get("speed", []) + results.get("reference", [])
    names = list(dict.fromkeys(r.get("variant", "hand-written step") for r in rows
                               if r["pairs_from"] != "host"))
    columns = [(name, lambda r, name=name: r["pairs_from"] != "host"
                and r.get("variant", "hand-written step") == name) for name in names]
    if not columns:
        return
    print("\n| batch | " + " | ".join(name for name, _ in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for batch in sorted({r["batch"] for r in rows}):
        cells = []
        for _, pick in columns:
            found = [r for r in rows if r["batch"] == batch and pick(r)]
            cells.append(f"{found[0]['pairs_per_s'] / 1e6:.1f} M ({found[0]['ms_per_step']:.2f} ms)"
                         if found else "-")
        print(f"| {batch:,} | " + " | ".join(cells) + " |")


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
    run.add_argument("--no-barrier", action="store_true",
                     help="also time each batch without the barrier and the scan "
                          "(as before issue 32)")
    run.add_argument("--no-scan", action="store_true",
                     help="also time each batch with the steps of a call as single "
                          "compiled steps (Keras's loop)")
    run.add_argument("--reference", action="store_true",
                     help="also time the hand-written JAX step at each batch")
    run.add_argument("--reference-updates", nargs="+", choices=REFERENCE_UPDATES,
                     default=["unique"],
                     help="the hand-written step's row updates to time (`reference_trainer`; "
                          "default: %(default)s)")
    run.add_argument("--reference-pairs", type=float, default=2e8,
                     help="pairs a timed run of the hand-written step (default: %(default)s)")
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
    run.add_argument("--scaling-optimizers", nargs="*", choices=("sparse", "keras"),
                     default=["sparse", "keras"])
    run.add_argument("--target", type=float,
                     help="score WordSim353 after every epoch: seconds until it reaches this")
    run.add_argument("--quality-epochs", type=int, default=20)
    run.add_argument("--quality-batch", type=int, default=16384)
    run.add_argument("--quality-lr", type=float, default=None,
                     help="the quality run's learning rate, with SparseAdagrad's default "
                          "floor (default: train-corpus's GPU rate and AdaGrad floor for "
                          "--quality-batch, optimizer_for_batch)")
    run.add_argument("--energies", nargs="*", default=["el"])
    run.add_argument("--seeds", type=int, nargs="*", default=[0])
    args = parser.parse_args(argv)
    if args.command == "prepare":
        _prepare(args)
    else:
        _run(args)


if __name__ == "__main__":
    sys.exit(main())
