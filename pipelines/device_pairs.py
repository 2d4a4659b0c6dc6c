"""Skip-gram pairs drawn on the device: the corpus as token ids in a
`keras_gauss.layers.SkipGramSampler` in front of the corpus model.

`model.fit` is fed the step numbers only; the subsampling, reduced windows
and negatives run inside the compiled train step. Pairs are drawn at random
positions (with replacement) with the streaming pipeline's rules
(`keras_gauss.pipelines.make_skipgram_dataset`), and an epoch is
`round(pairs / batch_size)` steps, `pairs` being the expected pairs of an
epoch of that pipeline (`epoch_size`'s count).
"""

import dataclasses

import numpy as np

# Steps a compiled call runs (`model.compile(steps_per_execution=...)`).
STEPS_PER_EXECUTION = 32


@dataclasses.dataclass
class DeviceCorpus:
    """The corpus as the sampler holds it, and the size of an epoch.

    Attributes:
        ids: int32 in-vocabulary token ids, line after line.
        lines: int32 line of every token.
        kept_tokens: expected tokens kept by subsampling.
        pairs: expected pairs of an epoch of the streaming pipeline.
    """

    ids: np.ndarray
    lines: np.ndarray
    kept_tokens: float
    pairs: float

    @property
    def longest_line(self):
        """Tokens of the longest line."""
        return int(np.bincount(self.lines).max()) if len(self.lines) else 0

    def steps(self, batch_size):
        """Steps of an epoch: `round(pairs / batch_size)`, at least 1 (0 without pairs)."""
        return max(1, round(self.pairs / batch_size)) if self.pairs > 0 else 0


def corpus_ids(corpus, vocab, chunk_lines=1024):
    """`(ids, lines)`: the in-vocabulary token ids of `corpus` (any
    `load_corpus` specification), line after line, and the line of each."""
    import tensorflow as tf

    from keras_gauss.pipelines.skipgram import token_ids
    from keras_gauss.pipelines.sources import load_corpus
    from keras_gauss.pipelines.tokens import tokenize

    ids, lengths = [], []
    read = load_corpus(corpus).batch(chunk_lines).map(
        lambda lines: token_ids(lines, vocab, tokenize), num_parallel_calls=tf.data.AUTOTUNE)
    for rows in read.prefetch(tf.data.AUTOTUNE):
        ids.append(rows.flat_values.numpy().astype("int32"))
        lengths.append(rows.row_lengths().numpy())
    lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    ids = np.concatenate(ids) if ids else np.zeros(0, np.int32)
    return ids, np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)


def device_corpus(ids, lines, counts, window, dynamic_window, sample):
    """The `DeviceCorpus` of token ids: the expected kept tokens and pairs
    of an epoch (`keras_gauss.layers.skipgram_sampler.expected_pairs`, as
    `epoch_size` counts them)."""
    from keras_gauss.layers.skipgram_sampler import expected_pairs
    from keras_gauss.pipelines.sampling import keep_probabilities

    kept, pairs = expected_pairs(lines, keep_probabilities(counts, sample)[ids], window,
                                 dynamic_window)
    return DeviceCorpus(ids, lines, kept, pairs)


def make_sampler(config, data, counts, table_size=1_000_000):
    """The `SkipGramSampler` of a `CorpusConfig` over a `DeviceCorpus`
    (seeded by `config.seed`; the stage sizes of `plan_draws`).

    Example:

    >>> sampler = make_sampler(CorpusConfig(), data, vocab.counts)  # doctest: +SKIP
    """
    from keras_gauss.layers import SkipGramSampler
    from keras_gauss.layers.skipgram_sampler import plan_draws
    from keras_gauss.pipelines.sampling import keep_probabilities
    from keras_gauss.pipelines.skipgram import negative_table

    draws, candidates, scan = plan_draws(
        config.batch_size, config.window, config.dynamic_window, len(data.ids),
        data.kept_tokens, data.pairs, data.longest_line)
    return SkipGramSampler.from_arrays(
        data.ids, data.lines, keep_probabilities(counts, config.sample),
        negative_table(counts, table_size), window=config.window,
        batch_size=config.batch_size, negatives=config.negatives,
        dynamic_window=config.dynamic_window, seed=config.seed, draws=draws,
        candidates=candidates, scan=scan, name="pairs")


def device_trainer(model, sampler, steps_per_execution=STEPS_PER_EXECUTION, scan=None):
    """The model `fit` trains: step number -> `sampler` -> `model`, compiled
    with `model`'s optimizer and loss (one optimizer state: the tables and
    their accumulators are `model`'s).

    It takes `{"step": (1,) int32}` and labels `(1, 1 + negatives)`
    (`[1, 0, ..., 0]`, shared by the batch's lists). A call runs
    `steps_per_execution` steps: on a JAX GPU or TPU (or with `scan=True`;
    `scan=False`: never) in one compiled `lax.scan` over the sampler and
    the step (`keras_gauss.models.gaussian_model.scanned_steps`), with the
    results of as many single steps.
    """
    import keras

    from keras_gauss.models import GaussianModel

    step = keras.Input((), batch_size=1, dtype="int32", name="step")
    trainer = GaussianModel({"step": step}, model(sampler(step)), name="device_pairs")
    trainer.scan_steps = scan
    trainer.compile(optimizer=model.optimizer, loss=model.loss,
                    steps_per_execution=steps_per_execution)
    return trainer


def step_dataset(first, last, negatives, counter=None, batch_size=None):
    """The `tf.data.Dataset` of steps `first..last-1`: `({"step": (1,)}, labels)`;
    with `counter`, each element adds `batch_size` to it (pairs drawn). The
    autotuner is off (`keras_gauss.tf_data`)."""
    import tensorflow as tf

    from keras_gauss.tf_data import without_autotune

    label = tf.constant([[1.0] + [0.0] * negatives])

    def element(step):
        x = {"step": tf.reshape(tf.cast(step, tf.int32), [1])}
        if counter is None:
            return x, label
        with tf.control_dependencies([counter.assign_add(batch_size)]):
            return {"step": tf.identity(x["step"])}, tf.identity(label)

    return without_autotune(tf.data.Dataset.range(first, last).map(element))
