"""Training and evaluating Gaussian embeddings of a hierarchy: WordNet nouns or verbs, or a user's own is-a pairs."""

import dataclasses

from keras_gauss.distribution import DistributionError
from keras_gauss.fused.native import native_unavailable
from keras_gauss.hierarchy.benchmark_data import read_entailment
from keras_gauss.hierarchy.benchmark_data import read_hyperlex
from keras_gauss.job import Job
from keras_gauss.job import choose_engine
from keras_gauss.hierarchy.config import NEW_SETTINGS
from keras_gauss.hierarchy.engines import KerasHierarchyEngine
from keras_gauss.hierarchy.engines import NativeHierarchyEngine
# train_wordnet's settings, imported from here too
from keras_gauss.hierarchy.config import WordNetConfig  # noqa: F401


def train_wordnet(config, out_dir, hyperlex=None, entailment=None,
                  overwrite=False, verbose=1, checkpoint_every=10.0, resume=False,
                  distribution=None):
    """Trains a hierarchy embedding (WordNet, or `config.edges`) and writes the run to `out_dir`.

    Writes `model.keras`, `nodes.tsv` (the node vocabulary, one name a line
    in table order), `run.json` (see `keras_gauss.runs`), `split/` (the
    training edges and every evaluation part as node names, see
    `write_split`) and `metrics.json` (test/val accuracy with the threshold
    chosen on validation; `evaluation`: every kind of negatives scored by the
    model, the closure lookup and depth difference baselines; reconstruction mean rank and
    MAP, HyperLex and Baroni 2012 scores when their files are given,
    `train_seconds`, and the config), and last the marker of a run of ours
    (`.keras-gauss`). It is a `keras_gauss.job.Job` with `NativeHierarchyEngine`
    (`config.engine="native"`) or `KerasHierarchyEngine` (keras):
    the settings (and the HyperLex and entailment files) are checked before
    anything else is read, `out_dir` is locked for the whole run, replaced
    only when it holds a run of ours, and only when the table is finite and
    inside its bounds; the directory appears only when everything is
    written.

    Every `checkpoint_every` minutes (between two steps) the table, the
    optimizer state and the position (epoch, step) are saved to
    `out_dir/.checkpoint/` (`keras_gauss.checkpoint`); `resume=True`
    continues a killed run from there, with the same config and hierarchy
    (the checkpoint holds a digest of its nodes and edges), to the tables
    of an uninterrupted run, bit for bit. Epoch `e` draws its order and
    negatives from the stream `[seed, e]`.

    Args:
        config: a `WordNetConfig`.
        out_dir: the run directory.
        hyperlex: optional HyperLex nouns file.
        entailment: optional Baroni 2012 style entailment file.
        overwrite: replace an existing run in `out_dir`.
        verbose: 0 silent; 1 a progress bar on a terminal, else one line
            per epoch (`keras_gauss.callbacks.ProgressLogger`), and a line
            for each long step (preparing WordNet, evaluating, saving); 2 one
            line per epoch.
        checkpoint_every: minutes between checkpoints (0: none).
        resume: continue the interrupted run in `out_dir`.
        distribution: a `keras_gauss.distribution.DistributionConfig`
            (`KERAS_BACKEND=jax`): train on several devices or processes.
            With several processes, process `i` of `N` trains only the
            training edges `i::N` (every process reads the whole hierarchy:
            the node table and the closure the negatives avoid),
            `batch_size / N` a step, and all take the same steps an epoch
            (`shard_steps`; `metrics["distribution"]` records each shard).
            On one process the last, partial batch of an epoch is dropped. Only
            process 0 writes `out_dir` (the run and the checkpoints); with
            `resume`, every process reads `out_dir` (storage they share).
            `None`: one device.

    Returns:
        The metrics dict.

    Raises:
        keras_gauss.distribution.DistributionError: a distribution that
            cannot run (one line naming the setting).

    Example:

    >>> train_wordnet(WordNetConfig(root="mammal.n.01", dim=10, epochs=30,  # doctest: +SKIP
    ...                             val_size=0, test_size=0), "runs/mammals")
    """
    def check():  # every setting, before anything is read or imported
        config.validate()
        if distribution is not None and distribution.active and config.engine == "native":
            raise DistributionError(f"--distribution {distribution.distribution} trains with "
                                    f"model.fit: it needs --engine keras, not {config.engine}.")
        # The benchmark files too: a malformed one fails before training.
        if hyperlex is not None:
            read_hyperlex(hyperlex)
            from keras_gauss.hierarchy.evaluate import hyperlex_scoring
            from keras_gauss.hierarchy.wordnet import read_sense_counts

            if hyperlex_scoring(config.energy, config.include_lemmas).get("sense_prior"):
                read_sense_counts()  # WordNet's counts, read before training
        if entailment is not None:
            read_entailment(entailment)

    config = config.resolved()  # the defaults of the energy and split
    job = Job("hierarchy", out_dir, checkpoint_settings(config), check=check,
              data_name=("hierarchy" if config.edges is None and config.train_edges is None
                         else f"hierarchy of {config.edges or config.train_edges}"),
              overwrite=overwrite, resume=resume, checkpoint_every=checkpoint_every,
              verbose=verbose, distribution=distribution, batch_size=config.batch_size,
              defaults=RESUME_DEFAULTS)
    return job.run(lambda state: choose_engine(config.engine, [
        ("native", lambda: NativeHierarchyEngine(config, hyperlex, entailment),
         native_unavailable),
        ("keras", lambda: KerasHierarchyEngine(dataclasses.replace(config, engine="keras"), hyperlex,
                                          entailment), None)]))


train_hierarchy = train_wordnet

# The settings a checkpoint lacks, as it trained: those written before
# --learning-rate-schedule trained with a constant rate; NEW_SETTINGS: as
# checkpoints before those settings ran.
RESUME_DEFAULTS = {"learning_rate_schedule": "constant", "engine": "keras", **NEW_SETTINGS}


def checkpoint_settings(config):
    """What the checkpoint of a resolved `WordNetConfig` must match to be
    resumed (`keras_gauss.checkpoint.load_for_resume`, with
    `RESUME_DEFAULTS`): every setting of training, with the values it
    resolved to. The generality term only scores the trained tables, so a
    run may be resumed with another `--generality` (and from a checkpoint
    written before it).

    Example:

    >>> from keras_gauss.hierarchy.config import WordNetConfig
    >>> settings = checkpoint_settings(WordNetConfig(split="reduction").resolved())
    >>> settings["learning_rate"], "generality" in settings
    (0.003, False)
    """
    return {k: v for k, v in dataclasses.asdict(config).items() if k != "generality"}
