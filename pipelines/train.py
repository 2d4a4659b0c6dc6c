"""Training Gaussian word embeddings on a text corpus (the paper's Section 6 setup)."""

import dataclasses
import math
import numbers
import os
import time
import warnings

from keras_gauss import energies
from keras_gauss.callbacks.progress import Phase
from keras_gauss.checkpoint import restore_model
from keras_gauss.distribution import DistributionError
from keras_gauss.job import Data
from keras_gauss.job import Digest
from keras_gauss.job import Engine
from keras_gauss.job import ENGINES  # noqa: F401 - re-exported
from keras_gauss.job import Job
from keras_gauss.job import check_engine
from keras_gauss.job import choose_engine
from keras_gauss.job import model_tables
from keras_gauss.optimizers.adagrad_floor import EPSILON
from keras_gauss.optimizers.adagrad_floor import INITIAL_ACCUMULATOR
from keras_gauss.pipelines import native_corpus
from keras_gauss.pipelines.corpus_run import check_vocabulary
from keras_gauss.pipelines.corpus_run import no_pairs
from keras_gauss.pipelines.corpus_run import corpus_metrics
from keras_gauss.pipelines.corpus_run import corpus_run_info
from keras_gauss.pipelines.corpus_run import start_lines

# Bounds of the integer settings that would overflow later (`validate`).
MAX_SEED = 2**23 - 1
MAX_EPOCHS = 2**16 - 1
MAX_WINDOW = 2**20
# Large-batch corpus training (`learning_rate_for_batch`,
# `adagrad_floor_for_batch`): at `LR_BASE_BATCH` pairs a step (the CPU
# recipe's) the rate `LR_BASE` and AdaGrad's floor `ADAGRAD_FLOOR`
# (`CorpusConfig`'s initial accumulator and epsilon); at a batch k times
# that, the rate times k ** `LR_BATCH_EXPONENT` up to `LR_MAX`, and the
# floor divided by k ** 2. Chosen on validation pairs only (MEN and a fixed
# half of SimLex-999) by research/lr_batch_sweep.py, 20 epochs of news2017
# with the recipe's sample 1e-3 and window 15 (research/lr_batch_sweep.md:
# with the floor so scaled, rate 0.8 scored best at 65,536 and at 262,144,
# 0.4 at 16,384).
LR_BASE = 0.4
LR_BASE_BATCH = 16384
LR_BATCH_EXPONENT = 0.5
LR_MAX = 0.8
ADAGRAD_FLOOR = {"initial_accumulator": INITIAL_ACCUMULATOR, "epsilon": EPSILON}


def _check_batch(batch_size):
    if (isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral)
            or batch_size < 1):
        raise ValueError(f"--batch-size must be a positive integer, got {batch_size!r}.")


def learning_rate_for_batch(batch_size):
    """The `SparseAdagrad` learning rate for minibatches of `batch_size` pairs.

    `min(LR_MAX, LR_BASE * (batch_size / LR_BASE_BATCH) ** LR_BATCH_EXPONENT)`,
    rounded to 3 significant digits: 0.4 at the CPU recipe's 16,384 pairs
    a step (whose own rate on 2 Hogwild threads, 0.5, scores within a seed's
    spread of it: research/corpus_recipe.md), times the square root of the
    batch's ratio to it, at most 0.8
    (reached at 65,536). It goes with AdaGrad's floor of the batch,
    `adagrad_floor_for_batch`, which keeps a rare row's steps as at the
    recipe's batch; the rate then need not grow with the batch as the
    number of steps falls (with the recipe's floor, `0.4 x batch / 16384`
    scored best and 262,144 fell short). Chosen for many passes over a
    small corpus (20 epochs of news2017) at batches of 16,384 to 262,144
    (`research/lr_batch_sweep.md`); `train-corpus` on a GPU uses it for
    `--learning-rate` when that is not given.

    Args:
        batch_size: pairs a step, a positive int.

    Returns:
        The learning rate, a float.

    Example:

    >>> [learning_rate_for_batch(b) for b in (16384, 32768, 65536, 262144)]
    [0.4, 0.566, 0.8, 0.8]
    """
    _check_batch(batch_size)
    rate = min(LR_MAX, LR_BASE * (batch_size / LR_BASE_BATCH) ** LR_BATCH_EXPONENT)
    return float(f"{rate:.3g}")


def adagrad_floor_for_batch(batch_size):
    """AdaGrad's initial accumulator and epsilon for minibatches of
    `batch_size` pairs: `ADAGRAD_FLOOR` (`CorpusConfig`'s 1e-6 and 1e-7)
    times `(LR_BASE_BATCH / batch_size) ** 2`, each rounded to 6
    significant digits.

    A step's gradient is that of the batch-mean loss, so a row a batch k
    times the recipe's holds once gets 1/k of its gradient there, whose
    square sinks under a fixed floor: AdaGrad's step for it, `lr * g /
    sqrt(accumulator + epsilon)`, then stays `lr * g / sqrt(floor)` and
    never shrinks. The floor divided by k ** 2 keeps each squared gradient
    against it as at the recipe's batch (AdaGrad on the loss summed over
    units of 16,384 pairs). With `learning_rate_for_batch`; `train-corpus`
    on a GPU uses both for the settings not given.

    Args:
        batch_size: pairs a step, a positive int.

    Returns:
        `{"initial_accumulator": float, "epsilon": float}`.

    Example:

    >>> adagrad_floor_for_batch(65536)
    {'initial_accumulator': 6.25e-08, 'epsilon': 6.25e-09}
    """
    _check_batch(batch_size)
    scale = (LR_BASE_BATCH / batch_size) ** 2
    return {name: float(f"{value * scale:.6g}") for name, value in ADAGRAD_FLOOR.items()}


def optimizer_for_batch(batch_size):
    """`train-corpus`'s optimizer settings for minibatches of `batch_size`
    pairs on a GPU: `learning_rate_for_batch`'s rate with
    `adagrad_floor_for_batch`'s floor (the two go together), as
    `CorpusConfig` fields.

    Args:
        batch_size: pairs a step, a positive int.

    Returns:
        `{"learning_rate", "initial_accumulator", "epsilon"}`.

    Example:

    >>> optimizer_for_batch(262144)
    {'learning_rate': 0.8, 'initial_accumulator': 3.90625e-09, 'epsilon': 3.90625e-10}
    """
    return {"learning_rate": learning_rate_for_batch(batch_size),
            **adagrad_floor_for_batch(batch_size)}


# The settings a checkpoint written before them lacks, as it trained (the
# values then, fixed: not `ADAGRAD_FLOOR`, which may change).
RESUME_DEFAULTS = {"initial_accumulator": 1e-6, "epsilon": 1e-7}

# `train-corpus` on a GPU (`keras_gauss.job.jax_gpu`), for the settings not
# given: the keras engine on JAX with pairs drawn on the device, batch
# 65,536, and the learning rate and AdaGrad floor of `optimizer_for_batch`
# for the batch (given or not; `pipelines.cli.device_settings`).
GPU_SETTINGS = {"engine": "keras", "pairs": "device", "batch_size": 65536,
                **optimizer_for_batch(65536)}

# Where the keras engine draws its pairs (`CorpusConfig.pairs`).
PAIRS = ("host", "device")


@dataclasses.dataclass
class CorpusConfig:
    """Settings of a corpus run (all saved in `metrics.json`).

    Defaults are the paper's one-pass settings (50-d diagonal, separate
    word and context tables, one negative, AdaGrad, minibatches of "20
    sentences' worth"), with a window, margin and bounds it leaves open;
    `docs/corpus.md` ("Why `CorpusConfig`'s defaults") says how they
    were chosen. For ~20 passes over a few million tokens use
    `batch_size=16384, learning_rate=0.5, sample=1e-3, window=15`.

    Example: `train_corpus(CorpusConfig(epochs=20), "corpus.txt", "runs/mine")`

    Attributes:
        dim: embedding dimension `d` (50).
        covariance: `"diagonal"` (default) or `"spherical"`.
        energy: `"el"` (expected likelihood, symmetric) or `"kl"`
            (`E(w, c) = -KL(N_c || N_w)`).
        epochs: passes over the corpus (1).
        window: largest distance between a word and its context (10).
        dynamic_window: draw each centre's window from `1..window`
            (word2vec's reduced window).
        negatives: negative contexts per positive pair (1).
        sample: subsampling threshold of frequent words (1e-4; 0: off).
        min_count: drop words seen fewer times (5).
        max_size: keep at most this many words (`None`: all).
        batch_size: (word, context) pairs per AdaGrad step, per thread for
            the `"native"` engine (2048).
        learning_rate: `SparseAdagrad` learning rate (0.2).
        margin: margin of the max-margin ranking loss (0.5).
        max_norm: mean norm bound `C` (4).
        min_variance: variance bound `m` (0.05).
        max_variance: variance bound `M` (5).
        init_variance: starting variance of every Gaussian (1).
        variance_learning_rate: the variances' AdaGrad learning rate
            (`None`: `learning_rate`, one rate for means and variances).
            Only the `"native"` engine has it (the keras engine refuses
            another value).
        initial_accumulator: where every AdaGrad accumulator starts
            (`SparseAdagrad`'s `initial_accumulator_value`, 1e-6; >= 0),
            both engines.
        epsilon: AdaGrad's epsilon, added to the accumulator inside the
            square root (1e-7; >= 0, with `initial_accumulator` > 0).
        seed: random seed of the data stream and the initialisation (0).
        engine: how the steps run (the model and its run files are the same;
            `keras_gauss.job.choose_engine` chooses):
            - `"native"` (default): the C++ trainer without TensorFlow
              (`keras_gauss.pipelines.native_corpus`): the corpus is read
              into token ids in memory (at most 2^28 tokens), and the
              trainer draws the windows, subsampling and negatives itself
              and runs the minibatch ranking steps on `threads` threads
              (Hogwild across threads, as word2vec). Text files are read
              without TensorFlow; WordNet glosses, `tfds:` and datasets of
              lines through `tf.data`. Without a C++ compiler it warns and
              trains with `"keras"`. No Keras callbacks, no distribution.
            - `"keras"`: the `tf.data` skip-gram stream
              (`keras_gauss.pipelines.make_skipgram_dataset`) into `model.fit`
              of the functional Keras model with `MaxMarginRanking` and
              `SparseAdagrad` (the layers' compiled kernels): any backend,
              callbacks, `distribution`.
        threads: threads of the `"native"` engine (0: the number of cores
            this process may use).
        pairs: where the `"keras"` engine draws its pairs (`None`, the
            default: `"host"`; the `"native"` engine refuses another value,
            as it draws its pairs itself):
            - `"host"`: the `tf.data` stream on the CPU
              (`make_skipgram_dataset`): a pass over the shuffled lines.
            - `"device"`: the corpus as token ids in a
              `keras_gauss.layers.SkipGramSampler` inside the compiled
              step (`keras_gauss.pipelines.device_pairs`), several steps a
              call: only step numbers are fed. Pairs are drawn at random
              positions (with replacement) by the same rules; an epoch is
              the stream's expected number of pairs. One device (no
              `distribution`); callbacks see the model `fit` trains
              (step numbers -> sampler -> the corpus model).
    """

    dim: int = 50
    covariance: str = "diagonal"
    energy: str = energies.DEFAULTS["corpus"].name
    epochs: int = 1
    window: int = 10
    dynamic_window: bool = True
    negatives: int = 1
    sample: float = 1e-4
    min_count: int = 5
    max_size: int | None = None
    batch_size: int = 2048
    learning_rate: float = 0.2
    margin: float = 0.5
    max_norm: float = 4.0
    min_variance: float = 0.05
    max_variance: float = 5.0
    init_variance: float = 1.0
    variance_learning_rate: float | None = None
    initial_accumulator: float = ADAGRAD_FLOOR["initial_accumulator"]
    epsilon: float = ADAGRAD_FLOOR["epsilon"]
    seed: int = 0
    engine: str = "native"
    threads: int = 0
    pairs: str | None = None

    def validate(self):
        """Raises `ValueError` naming the first bad setting."""
        from keras_gauss.checks import check_config

        # Their own bounds first, tighter than check_config's 2**31 - 1 for every integer:
        # the native engine's chunk seeds are `seed << 40 | epoch << 24 | chunk`.
        for name, value, top in (("seed", self.seed, MAX_SEED), ("epochs", self.epochs, MAX_EPOCHS),
                                 ("window", self.window, MAX_WINDOW)):
            if isinstance(value, numbers.Real) and not 0 <= value <= top:
                raise ValueError(f"--{name} must be in [{int(name != 'seed')}, {top:,}], "
                                 f"got {value}.")
        check_config(self, ("dim", "epochs", "window", "negatives", "min_count",
                            "batch_size", "learning_rate", "margin", "max_norm",
                            "min_variance", "init_variance"))
        if not self.min_variance <= self.init_variance <= self.max_variance:
            raise ValueError(f"--init-variance {self.init_variance} must lie in [--min-variance, "
                             f"--max-variance] = [{self.min_variance}, {self.max_variance}].")
        if self.variance_learning_rate is not None and not (
                math.isfinite(self.variance_learning_rate) and self.variance_learning_rate > 0):
            raise ValueError("--variance-learning-rate must be a finite number > 0, got "
                             f"{self.variance_learning_rate}.")
        if not self.initial_accumulator >= 0:
            raise ValueError(f"--initial-accumulator must be >= 0, got {self.initial_accumulator}.")
        if not self.epsilon >= 0 or self.epsilon + self.initial_accumulator <= 0:
            raise ValueError(f"--epsilon must be >= 0 (> 0 with --initial-accumulator 0), got "
                             f"{self.epsilon}.")
        if self.pairs is not None and self.pairs not in PAIRS:
            raise ValueError(f"--pairs must be {' or '.join(PAIRS)}, got {self.pairs!r}.")
        if self.threads < 0:
            raise ValueError(f"--threads must be >= 0, got {self.threads}.")
        check_engine(self.engine, {
            "keras": (self.variance_learning_rate is not None and (
                "has one learning rate for means and variances: --variance-learning-rate "
                "needs the native engine")) or (self.threads != CorpusConfig.threads and (
                    f"trains with model.fit, not threads of its own: --threads {self.threads} "
                    "is the native engine's")),
            "native": self.pairs is not None and (
                f"draws its pairs itself: --pairs {self.pairs} is the keras engine's")})
        if self.max_size is not None and self.max_size < 1:
            raise ValueError(f"--max-size must be >= 1, got {self.max_size}.")
        if not 0 <= self.sample < 1:
            raise ValueError(f"--sample must be in [0, 1), got {self.sample}.")
        energies.get(self.energy, task="corpus", setting="--energy")  # without Keras


def _throughput_callback(counter, batch_size, per_batch=True):
    import keras

    class Throughput(keras.callbacks.Callback):
        """Adds `pairs/s` to the logs, so the progress bar shows it.

        Per batch the rate is estimated from full batches (reading the exact
        counter would synchronise the data pipeline every step); at the end of
        an epoch the exact count is used.
        """

        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()
            self.first = int(counter.numpy())

        if per_batch:
            def on_train_batch_end(self, batch, logs=None):
                if logs is not None:
                    seconds = max(time.perf_counter() - self.start, 1e-9)
                    logs["pairs/s"] = round((batch + 1) * batch_size / seconds)

        def on_epoch_end(self, epoch, logs=None):
            seconds = time.perf_counter() - self.start
            pairs = int(counter.numpy()) - self.first
            if logs is not None:
                logs["pairs/s"] = round(pairs / max(seconds, 1e-9))
                logs["pairs"] = pairs
                logs["epoch_seconds"] = seconds

    return Throughput()


def make_dataset(config, corpus, vocab, counter=None, keep=None):
    """The skip-gram stream of `config` (see `keras_gauss.pipelines.make_skipgram_dataset`).

    Args:
        config: a `CorpusConfig`.
        corpus: corpus specification (`keras_gauss.pipelines.load_corpus`).
        vocab: the `pipelines.Vocabulary`.
        counter: optional int64 `tf.Variable`; every batch adds its number of
            pairs to it (as the batch is produced).
        keep: optional `dataset -> dataset` applied before counting (a
            process's rows of each batch, `keras_gauss.distribution`).

    Returns:
        A `tf.data.Dataset` of `(x, y)` batches for `model.fit`.
    """
    import tensorflow as tf

    from keras_gauss.pipelines.skipgram import make_skipgram_dataset

    dataset = make_skipgram_dataset(
        corpus, vocab, window=config.window, dynamic_window=config.dynamic_window,
        negatives=config.negatives, sample=config.sample,
        batch_size=config.batch_size,
        seed=config.seed,
    )
    if keep is not None:
        dataset = keep(dataset)
    if counter is None:
        return dataset

    def count(x, y):
        update = counter.assign_add(tf.cast(tf.shape(x["word"])[0], tf.int64))
        with tf.control_dependencies([update]):
            return {k: tf.identity(v) for k, v in x.items()}, y

    return dataset.map(count).prefetch(tf.data.AUTOTUNE)


def shard_plan(config, corpus, vocab, job):
    """The vocabulary and steps of an epoch of a job whose processes each
    read their own lines of the corpus, and what each read.

    Process `i` of `N` reads lines `i::N` (`job.shard`): interleaved lines
    split any corpus `load_corpus` reads (a `.gz` file cannot be entered at
    a byte offset; a directory may hold fewer files than processes) into
    shards of nearly equal size and content. Each process counts the words
    of its lines; the counts are summed over the processes
    (`job.allgather`), so every process builds the same vocabulary (the
    one of the whole corpus). Each then measures its epoch (expected pairs,
    `keras_gauss.pipelines.epoch_size`) and all take the fewest full local
    batches of `batch_size / N` pairs any has (`job.agree_steps`); the
    rest of each shard's pairs (`pairs_dropped_per_epoch`, expected) is
    not trained that epoch.

    Args:
        config: a `CorpusConfig`.
        corpus: corpus specification (`keras_gauss.pipelines.load_corpus`).
        vocab: a prebuilt `Vocabulary`, or `None` (counted here).
        job: the started `keras_gauss.distribution.Distribution`.

    Returns:
        `(vocab, steps, shards)`: `shards` lists every process's read
        (`{"process", "lines", "line_digest", "tokens", "pairs_per_epoch",
        "local_steps"}`; `line_digest` is `CorpusCount.digest`).

    Raises:
        keras_gauss.distribution.DistributionError: a process without
            lines, or without one full batch an epoch (the same in every
            process).

    Example:

    >>> vocab, steps, shards = shard_plan(config, "news.txt.gz", None, job)  # doctest: +SKIP
    >>> [s["lines"] for s in shards]  # doctest: +SKIP
    [5000, 5000]
    """
    from keras_gauss.distribution import DistributionError
    from keras_gauss.pipelines.skipgram import epoch_size
    from keras_gauss.pipelines.sources import describe_corpus
    from keras_gauss.pipelines.sources import load_corpus
    from keras_gauss.pipelines.vocabulary import count_corpus
    from keras_gauss.pipelines.vocabulary import vocabulary_from_counts

    lines = job.shard(load_corpus(corpus))
    count = count_corpus(lines)
    every = job.allgather({"counts": dict(count.counts) if vocab is None else {},
                           "lines": count.lines, "digest": count.digest})
    total = sum(e["lines"] for e in every)
    if min(e["lines"] for e in every) == 0:
        raise DistributionError(
            f"--num-processes {job.num_processes}: the corpus has {total} line(s), fewer than "
            f"the processes (process i reads lines i::{job.num_processes}); give at most "
            f"{max(total, 1)} processes or a larger corpus.")
    if vocab is None:
        merged = {}
        for e in every:
            for word, n in e["counts"].items():
                merged[word] = merged.get(word, 0) + n
        vocab = vocabulary_from_counts(merged, config.min_count, config.max_size,
                                       describe_corpus(corpus))
    local = config.batch_size // job.num_processes
    size = epoch_size(lines, vocab, window=config.window, dynamic_window=config.dynamic_window,
                      sample=config.sample)
    steps, local_steps = job.agree_steps(size.pairs // local, local, "corpus's lines")
    sizes = job.allgather([size.tokens, size.pairs])
    shards = [{"process": i, "lines": e["lines"], "line_digest": e["digest"],
               "tokens": tokens, "pairs_per_epoch": pairs, "local_steps": n}
              for i, (e, (tokens, pairs), n) in enumerate(zip(every, sizes, local_steps))]
    return vocab, steps, shards


def shard_batches(config, corpus, vocab, job, epoch, steps, counter=None):
    """This process's batches of epoch `epoch` of a job of several processes.

    The skip-gram stream (`make_dataset`) of the process's lines `i::N`
    (`job.shard`), with its own seed (`job.process_seed` of the epoch's
    seed) and `batch_size / N` pairs a batch, cut to the agreed `steps`
    (`job.local_batches`). The job's global batch `k` is every process's
    batch `k`, in process order.

    Args:
        config, corpus, vocab: as for `make_dataset`.
        job: the `keras_gauss.distribution.Distribution` (of this process).
        epoch: the epoch, from 0.
        steps: the agreed steps of an epoch (`shard_plan`).
        counter: as for `make_dataset` (counts this process's pairs).

    Example:

    >>> batches = shard_batches(config, "news.txt.gz", vocab, job, 0, steps)  # doctest: +SKIP
    """
    from keras_gauss.checkpoint import epoch_seed
    from keras_gauss.pipelines.sources import load_corpus

    local = config.batch_size // job.num_processes
    mine = dataclasses.replace(config, batch_size=local,
                               seed=job.process_seed(epoch_seed(config.seed, epoch)))
    return make_dataset(mine, job.shard(load_corpus(corpus)), vocab, counter,
                        keep=lambda d: job.local_batches(d, local, steps))


def start_means(config, rows):
    """The starting means of the keras engine's word and context tables:
    uniform in +-0.05 from NumPy's generator seeded by `config.seed`, drawn
    as `keras_gauss.fused.NativeTables.initial` draws the native engine's,
    within `config.max_norm`. The same numbers on every backend (Keras's
    seeded initializer draws other numbers on TensorFlow, JAX and torch).

    Args:
        config: a `CorpusConfig` (its `dim`, `seed` and `max_norm`).
        rows: the vocabulary size.

    Returns:
        `[words, contexts]`, float32 `(rows, dim)` each.

    Example:

    >>> words, contexts = start_means(CorpusConfig(dim=3, seed=0), 2)
    >>> words.shape, bool(abs(words).max() <= 0.05), bool((words != contexts).all())
    ((2, 3), True, True)
    """
    import numpy as np

    from keras_gauss.fused.pairs import uniform_means

    rng = np.random.default_rng(config.seed)  # one generator: words, then contexts
    return [uniform_means(rows, config.dim, rng, config.max_norm or 0.0).astype(np.float32)
            for _ in range(2)]


def corpus_model(config, vocab_size):
    """The compiled corpus model of `config` (`build_corpus_model`, `SparseAdagrad`),
    as `train_corpus` trains it: its means start at `start_means` (seeded by
    `config.seed`, the same on every backend).

    Example:

    >>> model = corpus_model(CorpusConfig(dim=10), len(vocab))  # doctest: +SKIP
    """
    import keras

    from keras_gauss.losses import MaxMarginRanking
    from keras_gauss.optimizers import SparseAdagrad
    from keras_gauss.pipelines.model import build_corpus_model

    model = build_corpus_model(
        vocab_size, config.dim, negatives=config.negatives, energy=config.energy,
        covariance=config.covariance, max_norm=config.max_norm,
        min_variance=config.min_variance, max_variance=config.max_variance,
        mean_initializer=keras.initializers.RandomUniform(-0.05, 0.05, seed=config.seed),
        variance_initializer=keras.initializers.Constant(config.init_variance),
    )
    for name, means in zip(("words", "contexts"), start_means(config, vocab_size)):
        model.get_layer(name).means.assign(means)  # the same start on every backend
    model.compile(optimizer=SparseAdagrad(
                      config.learning_rate, initial_accumulator_value=config.initial_accumulator,
                      epsilon=config.epsilon),
                  loss=MaxMarginRanking(config.margin))
    return model


def train_corpus(config, corpus, out_dir, overwrite=False, verbose=1, callbacks=None,
                 vocab=None, checkpoint_every=10.0, resume=False, distribution=None):
    """Trains Gaussian word embeddings on a corpus and writes the run to `out_dir`.

    Builds the vocabulary (`min_count`, `max_size`) and
    `keras_gauss.pipelines.model.build_corpus_model`, trains it with the config's engine
    (`"native"`: the C++ trainer on the corpus's token ids,
    `keras_gauss.pipelines.native_corpus`; `"keras"`: the skip-gram pairs of
    `keras_gauss.pipelines.make_skipgram_dataset` into `fit` with
    `MaxMarginRanking` and `SparseAdagrad`), and writes, atomically (the
    directory appears only when everything is written):

    - `model.keras`: the model (tables `"words"` and `"contexts"`);
    - `vocab.tsv`: `word<TAB>count`, one line per table row;
    - `run.json`: `kind="corpus"`, the energy, `table="words"`;
    - `metrics.json`: `train_seconds`, `pairs` (trained), `pairs_per_second`,
      `tokens` (in-vocabulary corpus tokens read, all epochs, before
      subsampling), `tokens_per_second`, `final_loss`, `vocab_size`,
      `batch_size`, the per-epoch loss and the config;
    - `.keras-gauss`: the marker of a run of ours (`keras_gauss.io`), last.

    It is a `keras_gauss.job.Job` with `keras_gauss.pipelines.native_corpus.NativeEngine`
    or `KerasEngine` (`keras_gauss.job.choose_engine`): the settings are
    checked before anything is read, `out_dir` is locked for the whole run
    and replaced only when it holds a run of ours, the tables are checked
    (finite, inside their bounds) before they are written.

    Progress (`keras_gauss.callbacks.ProgressLogger`) shows the loss and
    pairs/s: a bar on a terminal, one line per epoch otherwise.

    Every `checkpoint_every` minutes (between two chunks or steps) the
    tables, optimizer state and position in the data are saved to
    `out_dir/.checkpoint/` (`keras_gauss.checkpoint`); `resume=True`
    continues a killed run from there, with the same config and corpus (the
    checkpoint holds a digest of the corpus read), to the run files an
    uninterrupted run writes (bit for bit with one thread or the
    `"keras"` engine; the metrics count the whole run).

    Args:
        config: a `CorpusConfig`.
        corpus: corpus specification (`None`: WordNet glosses; a text file
            or directory; `"tfds:NAME..."`; a `tf.data.Dataset` of lines).
        out_dir: the run directory.
        overwrite: replace an existing run in `out_dir`.
        verbose: 0 silent; 1 a progress bar on a terminal, else one line
            per epoch, and a line for each long step (counting the
            vocabulary, saving); 2 one line per epoch.
        callbacks: extra Keras callbacks for `fit` (`"keras"` engine only:
            the native engine does not call `fit`).
        vocab: a prebuilt `pipelines.Vocabulary` (skips the counting pass;
            `min_count` and `max_size` are then not applied).
        checkpoint_every: minutes between checkpoints (0: none).
        resume: continue the interrupted run in `out_dir`.
        distribution: a `keras_gauss.distribution.DistributionConfig`
            (`engine="keras"`, `KERAS_BACKEND=jax`): train on several
            devices or processes. With several processes, process `i` of
            `N` reads only lines `i::N` of the corpus and feeds
            `batch_size / N` pairs of every step; the word counts are
            summed over the processes (one vocabulary) and all take the
            same steps an epoch (`shard_plan`; `metrics["distribution"]`
            records what each read). On one process the last, partial
            batch of an epoch is dropped. Only process 0 writes `out_dir`
            (the run and the checkpoints); with `resume`, every process
            reads `out_dir` (put it on storage they share). `None`: one
            device.

    Returns:
        The metrics dict.

    Raises:
        keras_gauss.distribution.DistributionError: a distribution that
            cannot run (one line naming the setting).
        ValueError: a bad config, an empty corpus or an empty vocabulary
            after `min_count`, unreadable (binary, non-UTF-8) files.
        FileNotFoundError: a missing corpus path or unprepared TFDS data.
        keras_gauss.io.OutputExistsError: `out_dir` holds files and
            `overwrite` is False, holds what is not a run of ours, or is
            being written by another process (`OutputBusyError`).
        keras_gauss.io.OutputNotWritableError: `out_dir` cannot be written
            (permissions, space; also while training: the previous
            checkpoint or run is kept).
        keras_gauss.checkpoint.CheckpointError: `resume` without a
            checkpoint to continue (or with other settings or another
            corpus), or `out_dir` holds an interrupted run and neither
            `resume` nor `overwrite`.

    Example:

    >>> with open("corpus.txt", "w") as f:
    ...     _ = f.write("the cat sat on the mat\\nthe dog sat on the log\\n" * 50)
    >>> metrics = train_corpus(CorpusConfig(dim=4, min_count=1, epochs=2), "corpus.txt",
    ...                        "runs/tiny", verbose=0)
    >>> metrics["vocab_size"], len(metrics["loss_per_epoch"])
    (7, 2)
    >>> sorted(os.listdir("runs/tiny"))  # and the marker of a run of ours, written last
    ['.keras-gauss', 'history.csv', 'history.png', 'metrics.json', 'model.keras', 'run.json', 'vocab.tsv']
    """
    def check():  # every setting, before anything is read or imported
        config.validate()
        if distribution is not None and distribution.active and config.engine == "native":
            raise DistributionError(f"--distribution {distribution.distribution} trains with "
                                    f"model.fit: it needs --engine keras, not {config.engine}.")
        if distribution is not None and distribution.active and config.pairs == "device":
            raise DistributionError(f"--distribution {distribution.distribution}: --pairs "
                                    "device trains on one device; use --pairs host.")
        check_engine(config.engine, {"native": callbacks and (
            "runs no Keras callbacks (it does not call model.fit)")})

    # The checkpoint's settings: --pairs not given is host (as checkpoints
    # written when that was its default value say).
    settings = {**dataclasses.asdict(config), "pairs": config.pairs or PAIRS[0]}
    job = Job("corpus", out_dir, settings, check=check, data_name="corpus",
              overwrite=overwrite, resume=resume, checkpoint_every=checkpoint_every,
              verbose=verbose, distribution=distribution, batch_size=config.batch_size,
              defaults=RESUME_DEFAULTS)

    def engines(state):
        return choose_engine(config.engine, [
            ("native", lambda: native_corpus.NativeEngine(config, corpus, vocab),
             native_corpus.unavailable),
            ("keras", lambda: KerasEngine(dataclasses.replace(config, engine="keras"), corpus,
                                          vocab, callbacks), None)])

    return job.run(engines)


DEMO_CORPUS = "the cat sat on the mat\nthe dog sat on the log\n" * 50
"""The examples' corpus: 7 words, 100 lines."""


def demo_run(out_dir):
    """Trains a tiny corpus run into `out_dir`: `DEMO_CORPUS` (written to
    `out_dir + ".txt"`), 4-d, one epoch, in well under a second, silently.
    The run the examples of `keras_gauss.runs` and `keras_gauss.export` load.

    Args:
        out_dir: the run directory (must not hold a run).

    Returns:
        `out_dir`.

    Example:

    >>> demo_run("runs/demo")
    'runs/demo'
    >>> "model.keras" in os.listdir("runs/demo")
    True
    """
    corpus = f"{out_dir}.txt"
    os.makedirs(os.path.dirname(corpus) or ".", exist_ok=True)
    with open(corpus, "w") as f:
        f.write(DEMO_CORPUS)
    train_corpus(CorpusConfig(dim=4, min_count=1), corpus, out_dir, verbose=0)
    return out_dir


def line_digest(corpus):
    """The content digest of a corpus that is not text files (WordNet glosses,
    `tfds:`, a dataset of lines): its lines in order, each ended by a line end
    (text files: `native_corpus.corpus_digest`, their bytes)."""
    from keras_gauss.pipelines.sources import load_corpus

    digest = Digest("corpus")
    for batch in load_corpus(corpus).batch(4096).as_numpy_iterator():
        digest.update(b"\n".join(batch) + b"\n")
    return digest.hexdigest()


# The most tokens a step with pairs drawn on the device may look at
# (candidates x scan, `keras_gauss.layers.skipgram_sampler.plan_draws`), and
# the most positions it may draw.
MAX_DEVICE_SCAN = 2**27
MAX_DEVICE_DRAWS = 2**27


def _check_device_step(config, data):
    """One line where a step of `--pairs device` would look at more than
    `MAX_DEVICE_SCAN` tokens (a window of thousands, heavy subsampling) or
    draw more than `MAX_DEVICE_DRAWS` positions (a corpus with few pairs
    for its tokens, as heavy subsampling of a small corpus leaves)."""
    from keras_gauss.layers.skipgram_sampler import plan_draws

    draws, candidates, scan = plan_draws(config.batch_size, config.window, config.dynamic_window,
                                         len(data.ids), data.kept_tokens, data.pairs,
                                         data.longest_line)
    if draws > MAX_DEVICE_DRAWS:
        cause = (f"with --sample {config.sample} the corpus keeps about {data.pairs:.3g} "
                 f"(word, context) pairs an epoch of its {len(data.ids):,} tokens"
                 if config.sample > 0 else
                 f"the corpus has {data.pairs:.0f} (word, context) pairs among its "
                 f"{len(data.ids):,} tokens")
        fixes = "--sample 0 (subsampling off), " if config.sample > 0 else ""
        raise ValueError(
            f"--pairs device: {cause}, so a step would draw {draws:,} positions for a batch "
            f"of --batch-size {config.batch_size} (at most {MAX_DEVICE_DRAWS:,}); give "
            f"{fixes}a smaller --batch-size, or --pairs host.")
    if candidates * scan > MAX_DEVICE_SCAN:
        raise ValueError(
            f"--pairs device with --window {config.window} and --batch-size "
            f"{config.batch_size}: a step would look at {candidates * scan:,} tokens for the "
            f"contexts (at most {MAX_DEVICE_SCAN:,}); give a smaller --window or "
            "--batch-size, or --pairs host.")


class KerasEngine(Engine):
    """The keras engine of `train_corpus` for `keras_gauss.job.Job`: the
    skip-gram pairs of `make_dataset` into `model.fit` of `corpus_model`
    (the layers, `MaxMarginRanking`, `SparseAdagrad`), on any backend, with
    callbacks and a distribution.

    Example: see `train_corpus`.
    """

    name = "keras"

    def __init__(self, config, corpus, vocab=None, callbacks=None):
        self.config = config
        self.corpus = corpus
        self.vocab = vocab
        self.callbacks = callbacks

    def read(self, job):
        """Counts the vocabulary (each process its lines `i::N` in a job of
        several) and digests the corpus."""
        import keras

        from keras_gauss.pipelines.vocabulary import build_vocabulary

        config = self.config
        if config.variance_learning_rate is not None:  # (the native trainer is unavailable)
            raise ValueError("--variance-learning-rate needs the native trainer, which is "
                             f"unavailable here ({native_corpus.unavailable()}).")
        keras.utils.set_random_seed(config.seed)
        self.steps = self.shards = None
        distribution = job.distribution
        if distribution.num_processes > 1:  # each process reads its own lines: i::N
            counting = Phase("counting the vocabulary and the epoch of this process's lines",
                             job.verbose)
            self.vocab, self.steps, self.shards = shard_plan(config, self.corpus, self.vocab,
                                                             distribution)
            counting.done()
        elif self.vocab is None:
            counting = Phase("counting the vocabulary", job.verbose)
            self.vocab = build_vocabulary(self.corpus, min_count=config.min_count,
                                          max_size=config.max_size)
            counting.done()
        check_vocabulary(self.vocab.words, config)
        self.pairs_data = None
        if config.pairs == "device":  # the corpus as token ids, for the device
            from keras_gauss.pipelines.device_pairs import corpus_ids
            from keras_gauss.pipelines.device_pairs import device_corpus

            reading = Phase("reading the corpus into token ids", job.verbose)
            ids, lines = corpus_ids(self.corpus, self.vocab)
            self.pairs_data = device_corpus(ids, lines, self.vocab.counts, config.window,
                                            config.dynamic_window, config.sample)
            reading.done()
            if not self.pairs_data.steps(config.batch_size):
                raise ValueError(no_pairs())  # (no line of two tokens: see line_pairs)
            _check_device_step(config, self.pairs_data)
        digest = native_corpus.corpus_digest(self.corpus) or line_digest(self.corpus)
        return Data(len(self.vocab), config.dim, tables=2, digest=digest)

    def build(self, job, arrays):
        """The compiled model (in the distribution's scope), the checkpoint's
        tables and optimizer state restored."""
        import tensorflow as tf

        config, vocab = self.config, self.vocab
        # Made outside the distribution's scope: a plain variable the data
        # pipeline adds to.
        self.counter = tf.Variable(job.state.get("epoch_pairs_start", 0), dtype=tf.int64,
                                   trainable=False)
        with job.distribution.scope():  # build, compile and fit in the distribution's scope
            self.model = model = corpus_model(config, len(vocab))
            if job.verbose:
                print("\n".join(start_lines(config, vocab.counts, "keras")))
            model.optimizer.build(model.trainable_variables)
            if arrays is not None:
                restore_model(model, model.optimizer, arrays)
            self.trainer = model
            if self.pairs_data is not None:  # step numbers -> sampler -> model
                from keras_gauss.pipelines.device_pairs import device_trainer
                from keras_gauss.pipelines.device_pairs import make_sampler

                self.trainer = device_trainer(
                    model, make_sampler(config, self.pairs_data, vocab.counts))

    def tables(self):
        return model_tables(self.model)

    def train(self, job):
        with job.distribution.scope():
            self.pairs, self.losses = _train(self, job)
        self.train_seconds = job.elapsed()

    def metrics(self, job):
        config, distribution = self.config, job.distribution
        if not self.pairs:
            if distribution.active:
                raise DistributionError(
                    f"--batch-size {config.batch_size}: the corpus gives no full batch of "
                    "pairs to share over the devices and processes; give a smaller "
                    "--batch-size.")
            raise ValueError(no_pairs(self.config.sample))
        tokens = self.vocab.total * config.epochs
        metrics = corpus_metrics(config, self.train_seconds, self.pairs, tokens, self.losses,
                                 len(self.vocab))
        if distribution.active:
            metrics["distribution"] = job.distribution_info()
        if self.shards is not None:  # what each process read, and the steps they agreed on
            local = config.batch_size // distribution.num_processes
            metrics["distribution"].update({
                "read": "lines i::N", "steps_per_epoch": self.steps,
                "pairs_dropped_per_epoch": sum(s["pairs_per_epoch"] - self.steps * local
                                               for s in self.shards),
                "shards": self.shards})
        return metrics

    def write(self, job, directory):
        """`model.keras` and `vocab.tsv`; returns `run.json`'s entries."""
        self.model.save(directory / "model.keras")
        self.vocab.save(directory / "vocab.tsv")
        return corpus_run_info(self.config)


def _train(engine, job):
    """`KerasEngine.train`: `(pairs, losses)` of the whole run."""
    import keras

    from keras_gauss.callbacks import FiniteLoss
    from keras_gauss.callbacks import ProgressLogger
    from keras_gauss.checkpoint import epoch_seed
    from keras_gauss.checkpoint import fit_by_epoch
    from keras_gauss.checkpoint import fit_checkpoint

    config, corpus, vocab, model = engine.config, engine.corpus, engine.vocab, engine.model
    state, verbose, counter = job.state, job.verbose, engine.counter
    distribution, steps = job.distribution, engine.steps
    progress = ProgressLogger.from_verbose(verbose, unit="pairs", batch_size=config.batch_size)
    losses = list(state.get("losses", []))
    marks = {}

    trainer = engine.trainer
    if engine.pairs_data is not None:  # steps numbered through the run
        from keras_gauss.pipelines.device_pairs import step_dataset

        per_epoch = engine.pairs_data.steps(config.batch_size)

    def epoch_dataset(epoch):  # each epoch's stream depends on its number only
        if engine.pairs_data is not None:
            return step_dataset(epoch * per_epoch, (epoch + 1) * per_epoch, config.negatives,
                                counter, config.batch_size)
        if steps is not None:  # several processes: each reads its own lines
            return shard_batches(config, corpus, vocab, distribution, epoch, steps, counter)
        return make_dataset(dataclasses.replace(config, seed=epoch_seed(config.seed, epoch)),
                            corpus, vocab, counter,
                            keep=lambda d: distribution.local_batches(d, config.batch_size))

    def position():
        return {"epoch_pairs_start": marks["pairs"], "losses": list(losses),
                "train_seconds": job.elapsed()}

    def mark(epoch):
        marks["pairs"] = int(counter.numpy())

    record = keras.callbacks.LambdaCallback(  # (an epoch without a batch has no loss)
        on_epoch_end=lambda epoch, logs: losses.append(float(logs.get("loss", "nan"))))
    start = (state.get("epoch", 0), state.get("step", 0))
    saving = fit_checkpoint(job.checkpointer, model, trainer, start, job.arrays, position)
    throughput = _throughput_callback(counter, config.batch_size, per_batch=False)
    with warnings.catch_warnings():
        # Keras's notes on a dataset of unknown length (the end of the
        # epoch is found by running out of data) and on `shuffle`.
        warnings.filterwarnings("ignore", message="Your input ran out of data")
        warnings.filterwarnings("ignore", message="`shuffle=True` was passed")
        try:
            fit_by_epoch(trainer, epoch_dataset, config.epochs,
                         [saving, throughput, FiniteLoss(), *(engine.callbacks or []),
                          progress, record],
                         start=start, on_epoch_begin=mark)
        except StopIteration:  # an epoch without one batch: nothing to build on
            if not distribution.active:
                raise
            raise DistributionError(
                f"--batch-size {config.batch_size}: the corpus gives no full batch of "
                "pairs to share over the devices and processes; give a smaller "
                "--batch-size.") from None
    pairs = int(counter.numpy()) * distribution.num_processes  # each counted its own rows
    if steps is not None:
        # Exact by construction: every step trains one global batch (the
        # counter counts the batches the input pipeline makes).
        pairs = steps * config.batch_size * len(losses)
    return pairs, losses
