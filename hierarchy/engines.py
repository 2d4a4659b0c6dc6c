"""The hierarchy engines of `keras_gauss.job.Job`: `KerasHierarchyEngine`
(`fit` with the layers) and `NativeHierarchyEngine` (the C++ pair trainer),
on a common base, `HierarchyEngine`; and the compiled model they train."""

import dataclasses

import numpy as np

from keras_gauss.callbacks.progress import Phase
from keras_gauss.distribution import DistributionError
from keras_gauss.fused.pairs import uniform_means
from keras_gauss.hierarchy import native_training
from keras_gauss.hierarchy.model_file import hierarchy_model_config
from keras_gauss.hierarchy.model_file import write_hierarchy_model
from keras_gauss.hierarchy.selection import BestEpoch
from keras_gauss.hierarchy.selection import monitor_of
from keras_gauss.hierarchy.selection import validation_scorer
from keras_gauss.job import Data
from keras_gauss.job import Engine
from keras_gauss.job import Table
from keras_gauss.job import model_tables
from keras_gauss.hierarchy.config import learning_rate_schedule
from keras_gauss.hierarchy.data import hierarchy_digest
from keras_gauss.hierarchy.data import load_data
from keras_gauss.hierarchy.data import shard_edges
from keras_gauss.hierarchy.data import shard_steps
from keras_gauss.hierarchy.data import training_edges
from keras_gauss.hierarchy.data import write_split


# A run with few validation edges (a small taxonomy) takes at least this many steps an epoch.
SMALL_DATA_STEPS = 8


def hierarchy_model(config, num_nodes, k, total_steps=1):
    """The compiled model of `config` (`build_kl_model`, its loss and
    `SparseAdagrad`) with `k` negatives an edge, as `train_wordnet` trains it;
    `total_steps`: the run's steps, over which a `learning_rate_schedule`
    other than `"constant"` decays.

    Example:

    >>> model = hierarchy_model(WordNetConfig(dim=10), 100, k=6)  # doctest: +SKIP
    """
    import keras

    config = config.resolved()

    from keras_gauss.hierarchy.model import build_kl_model
    from keras_gauss.losses import MaxMarginRanking
    from keras_gauss.losses import ThresholdedDivergence
    from keras_gauss.optimizers import SparseAdagrad

    model = build_kl_model(
        num_nodes, config.dim, negatives=k, covariance=config.covariance, energy=config.energy,
        max_norm=config.max_norm, min_variance=config.min_variance,
        max_variance=config.max_variance,
        mean_initializer=keras.initializers.RandomUniform(-0.05, 0.05, seed=config.seed),
    )
    if config.loss == "ranking":
        loss = MaxMarginRanking(config.margin)
    else:
        loss = ThresholdedDivergence(config.threshold, config.margin)
    rate = learning_rate_schedule(config.learning_rate_schedule, config.learning_rate,
                                  total_steps)
    model.compile(optimizer=SparseAdagrad(rate), loss=loss)
    return model


class HierarchyEngine(Engine):
    """What the hierarchy engines share, for `keras_gauss.job.Job`: the
    hierarchy and its split read (`read`), the best-epoch selection, the
    evaluation (`metrics`), the history and the run's files (`write`).
    An engine adds `build`, `train`, `tables`, `node_tables` and
    `write_model`: `KerasHierarchyEngine` and `NativeHierarchyEngine`.

    Example: see `keras_gauss.hierarchy.train.train_wordnet`.
    """

    def __init__(self, config, hyperlex=None, entailment=None):
        self.config = config
        self.hyperlex = hyperlex
        self.entailment = entailment

    def read(self, job):
        """The hierarchy, its split and each process's training edges."""
        config, distribution = self.config, job.distribution
        what = config.edges or config.train_edges or "WordNet ({})".format(
            config.root or {"n": "all nouns", "v": "all verbs"}[config.pos])
        preparing = Phase(f"preparing {what}", job.verbose)
        self.hierarchy, source, self.split, split_line = load_data(config)
        from keras_gauss.hierarchy.benchmark_data import read_entailment, read_hyperlex
        from keras_gauss.hierarchy.evaluate import check_scorable

        for flag, path, read in (("--hyperlex", self.hyperlex, read_hyperlex),
                                 ("--entailment", self.entailment, read_entailment)):
            if path is not None:  # a file that covers nothing: said now, not after training
                check_scorable(flag, path, read(path), self.hierarchy)
        self.train_edges, self.known = training_edges(self.hierarchy, self.split)
        from keras_gauss.hierarchy.split import with_training_pairs  # NLTK: not at --help

        # few validation edges: thresholds and the best epoch are chosen with the training edges
        self.choice, few = with_training_pairs(self.split, self.hierarchy, config.seed,
                                               given=config.train_edges is not None)
        edges = len(self.train_edges)
        if few and not distribution.active and edges < config.batch_size * SMALL_DATA_STEPS:
            # else a small taxonomy trains one or two steps an epoch, and AdaGrad's first
            # step (about the learning rate on every coordinate) is most of its training
            batch = -(-edges // SMALL_DATA_STEPS)
            self.config = config = dataclasses.replace(config, batch_size=batch)
            few += (f"; batches of {batch} edges, so that an epoch takes "
                    f"{-(-edges // batch)} steps")  # (fewer than 8 edges: one each)
        if few:
            split_line += "\n" + few
        if distribution.active and distribution.num_processes == 1 and edges < config.batch_size:
            raise DistributionError(f"--batch-size {config.batch_size}: only {edges} "
                                    "training edges, not one full batch to share over the "
                                    "devices and processes; give a smaller --batch-size.")
        self.steps = None
        if distribution.num_processes > 1:  # each process trains its own edges: i::N
            self.steps = shard_steps(edges, config.batch_size, distribution)
        if self.steps is not None:
            self.steps_per_epoch = self.steps
        elif distribution.active:  # full batches only
            self.steps_per_epoch = edges // config.batch_size
        else:
            self.steps_per_epoch = -(-edges // config.batch_size)
        preparing.done()
        if job.verbose:
            print(source)
            print(split_line)
        return Data(self.hierarchy.num_nodes, config.dim, tables=1,
                    digest=hierarchy_digest(self.hierarchy, self.split), rows_flag="--root")

    def _selection(self, job, arrays):
        """The best-epoch selection of a run with held-out edges on one process
        (its checkpointed state restored), else None."""
        if self.split is None or job.distribution.num_processes != 1:
            return None
        monitor = monitor_of(self.split.method)
        selection = BestEpoch(self.config.patience or None, monitor=monitor,
                              # the trained energy: the generality term only rescores
                              score=validation_scorer(self.choice, monitor, 0.0,
                                                      self.config.energy),
                              latest_on_tie=self.choice is not self.split)
        if arrays is not None:
            selection.restore(job.state.get("selection"), arrays)
        return selection

    def _describe(self, job):
        config, selection = self.config, self.selection
        if not job.verbose:
            return
        epochs = f"{config.epochs} epochs"
        if selection is not None:
            epochs = (f"at most {config.epochs} epochs, keeping the best {selection.monitor}"
                      + (f", stopping after {selection.patience} without a better one"
                         if selection.patience else ""))
        print(f"{self.hierarchy.num_nodes:,} nodes, {len(self.train_edges):,} training "
              f"edges, {config.dim}-d {config.covariance}, {epochs}, engine {self.name}")

    def metrics(self, job):
        """Training figures, and on process 0 the evaluation: held-out edges
        against every kind of negatives, reconstruction, HyperLex, Baroni 2012."""
        from keras_gauss.hierarchy import evaluate

        config, hierarchy, split = self.config, self.hierarchy, self.split
        distribution, train_edges = job.distribution, self.train_edges
        means, variances = self.node_tables()
        metrics = {"train_seconds": self.train_seconds,
                   "seconds_per_epoch": self.train_seconds / max(len(self.losses), 1),
                   "final_loss": self.losses[-1],
                   "num_nodes": hierarchy.num_nodes,
                   "num_train_edges": int(len(train_edges))}
        if self.selection is not None:
            metrics["selection"] = self.selection.summary()
        if distribution.active:
            metrics["distribution"] = job.distribution_info()
        if self.steps is not None:  # what each process trained on, and the steps they took
            n, local = distribution.num_processes, config.batch_size // distribution.num_processes
            shards = [{"process": i, "edges": len(range(i, len(train_edges), n)),
                       "local_steps": len(range(i, len(train_edges), n)) // local}
                      for i in range(n)]
            metrics["distribution"].update({
                "read": "training edges i::N", "steps_per_epoch": self.steps,
                "edges_dropped_per_epoch": len(train_edges) - self.steps * local * n,
                "shards": shards})
        if not job.is_chief:
            return metrics  # process 0 evaluates and writes the run
        evaluating = Phase("evaluating", job.verbose)
        if split is not None:
            choice = self.choice  # the validation edges, and the training edges when few
            result = evaluate.classification(choice.val, choice.val_neg, split.test,
                                             split.test_neg, means, variances,
                                             generality=config.generality, energy=config.energy)
            metrics.update({key: result[key] for key in
                            ("test_accuracy", "val_accuracy", "threshold", "test_f1", "val_f1",
                             "f1_threshold", "test_auc")})
            metrics["evaluation"] = evaluate.evaluate_split(choice, means, variances,
                                                   config.generality, config.energy)
            if choice is not split:
                metrics["chosen_on"] = {"validation_edges": len(split.val),
                                        "training_edges": len(choice.val) - len(split.val)}
            for kind in ("reversed", "sibling"):
                if kind in metrics["evaluation"]["model"]:
                    metrics[f"test_{kind}_accuracy"] = \
                        metrics["evaluation"]["model"][kind]["test_accuracy"]
        synsets = hierarchy.synsets_only  # word nodes (--lemmas) are not ranked
        recon = evaluate.reconstruction(synsets, means[:synsets.num_nodes],
                                        variances[:synsets.num_nodes],
                                        max_nodes=config.reconstruction_nodes, seed=config.seed,
                                        generality=config.generality, energy=config.energy)
        metrics.update({"mean_rank": recon["mean_rank"], "map": recon["map"],
                        "reconstruction_queries": recon["num_queries"]})
        if self.hyperlex is not None:
            scoring = evaluate.hyperlex_scoring(config.energy, config.include_lemmas)
            result = evaluate.hyperlex_spearman(self.hyperlex, hierarchy, means, variances,
                                                energy=config.energy, **scoring)
            metrics.update({"hyperlex_spearman": result["spearman"],
                            "hyperlex_coverage": result["coverage"],
                            "hyperlex_scoring": scoring})
            if result["undefined"]:
                metrics["hyperlex_undefined"] = result["undefined"]
        if self.entailment is not None:
            result = evaluate.baroni2012(self.entailment, hierarchy, means, variances,
                                         generality=config.generality, energy=config.energy)
            metrics.update({"baroni2012_ap": result["ap"],
                            "baroni2012_best_f1": result["best_f1"],
                            "baroni2012_coverage": result["coverage"]})
        evaluating.done()
        metrics["config"] = dataclasses.asdict(config)
        return metrics

    def history(self):
        """The loss per epoch and, with a selection, its validation score."""
        columns = {"loss": self.losses}
        if self.selection is not None:
            columns[self.selection.monitor] = self.selection.history
        return columns

    def write(self, job, directory):
        """`model.keras`, `nodes.tsv` and `split/`; returns `run.json`'s entries."""
        config, hierarchy = self.config, self.hierarchy
        self.write_model(directory / "model.keras")
        (directory / "nodes.tsv").write_text("\n".join(hierarchy.nodes) + "\n", encoding="utf-8")
        if self.split is not None:
            write_split(directory / "split", self.split, hierarchy.nodes)
        source = ({"edges": str(config.edges)} if config.edges else
                  {"train_edges": str(config.train_edges)} if config.train_edges else
                  {"pos": config.pos})
        return {"kind": "wordnet" if "pos" in source else "hierarchy", "energy": config.energy,
                "table": "nodes", "vocabulary": "nodes.tsv", "root": config.root,
                "generality": config.generality, **source}

    def node_tables(self):
        """The trained `(means, variances)`, `(n, d)` each (NumPy)."""
        raise NotImplementedError

    def write_model(self, path):
        """Writes `model.keras`."""
        raise NotImplementedError


class KerasHierarchyEngine(HierarchyEngine):
    """The hierarchy trainer for `keras_gauss.job.Job` (the keras engine): the
    model of `hierarchy_model` trained with `fit`, evaluated on the split,
    written with `nodes.tsv` and `split/`.

    Example: see `keras_gauss.hierarchy.train.train_wordnet`.
    """

    name = "keras"
    draws = None  # the run's EpochDraws while `train` runs, without tf.data

    def build(self, job, arrays):
        """The compiled model, the checkpoint's tables and optimizer state
        restored; with held-out edges on one process, the best-epoch selection
        (`BestEpoch`, its checkpointed state restored)."""
        import keras

        from keras_gauss.checkpoint import restore_model

        config = self.config
        keras.utils.set_random_seed(config.seed)
        self.selection = self._selection(job, arrays)
        k = config.negatives + int(config.reversed_negatives)
        with job.distribution.scope():  # build, compile and fit in the distribution's scope
            self.model = model = hierarchy_model(config, self.hierarchy.num_nodes, k,
                                                 config.epochs * self.steps_per_epoch)
            optimizer = model.optimizer
            start = native_training.initial_table(config, self.known)
            table = model.get_layer("nodes")
            if start is not None:  # the tree-shaped start (config.init)
                table.means.assign(start[0])
                table.variances.assign(start[1])
            else:  # NumPy's uniform draw, as the native engine's: the same on every backend
                table.means.assign(uniform_means(table.input_dim, config.dim, config.seed,
                                                 config.max_norm or 0.0).astype("float32"))
            self._describe(job)
            optimizer.build(model.trainable_variables)
            if arrays is not None:
                restore_model(model, optimizer, arrays)

    def tables(self):
        return model_tables(self.model)

    def node_tables(self):
        """The trained `(means, variances)`, `(n, d)` each (NumPy)."""
        table = self.model.get_layer("nodes")
        means = table.means.numpy()
        return means, np.broadcast_to(table.variances.numpy(), means.shape)

    def write_model(self, path):
        """Writes `model.keras`."""
        self.model.save(path)

    def epoch_dataset(self, job, epoch):
        """Epoch `epoch`'s batches: drawn from the stream `[seed, epoch]`
        (`epoch_batches`: `tf.data` on TensorFlow and over several devices,
        else a `keras.utils.PyDataset`, no TensorFlow needed, its passes
        drawn ahead by the run's `EpochDraws`)."""
        import keras

        from keras_gauss.hierarchy.dataset import EpochDraws
        from keras_gauss.hierarchy.dataset import epoch_batches

        config, distribution = self.config, job.distribution
        if self.steps is not None:
            return shard_edges(config, self.train_edges, self.known, distribution, epoch,
                               self.steps)
        drawing = dict(known=self.known, negatives=config.negatives,
                       reversed_negatives=config.reversed_negatives,
                       sibling_negatives=config.sibling_negatives, seed=config.seed)
        if self.draws is None and not distribution.active \
                and keras.backend.backend() != "tensorflow":
            self.draws = EpochDraws(self.train_edges, passes=config.epochs, **drawing)
        data = epoch_batches(self.train_edges, epoch, tf_data=distribution.active or None,
                             draws=self.draws, batch_size=config.batch_size,
                             drop_remainder=distribution.active, **drawing)
        return distribution.local_batches(data, config.batch_size)

    def train(self, job):
        """The epochs through `fit`, a checkpoint between two steps when due;
        with a selection, stopping on its patience and ending with the best
        epoch's tables."""
        import keras

        from keras_gauss.callbacks import FiniteLoss
        from keras_gauss.callbacks import ProgressLogger
        from keras_gauss.checkpoint import fit_by_epoch
        from keras_gauss.checkpoint import fit_checkpoint

        config, state = self.config, job.state
        self.losses = losses = list(state.get("losses", []))
        first = (state.get("epoch", 0), state.get("step", 0))
        checkpointer, callbacks = job.checkpointer, []
        if self.selection is not None:  # its state travels with the checkpoints
            checkpointer = checkpointer and self.selection.wrap(checkpointer)
            callbacks = [self.selection.callback(self.model)]
        saving = fit_checkpoint(checkpointer, self.model, self.model, first, job.arrays,
                                lambda: {"losses": list(losses), "train_seconds": job.elapsed()})
        record = keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs: losses.append(float(logs["loss"])))
        progress = ProgressLogger.from_verbose(job.verbose, unit="edges",
                                               batch_size=config.batch_size,
                                               epoch_size=len(self.train_edges))
        self.draws = None
        try:
            with job.distribution.scope():
                fit_by_epoch(self.model, lambda epoch: self.epoch_dataset(job, epoch),
                             config.epochs, [saving, progress, FiniteLoss(), record, *callbacks],
                             start=first)
        finally:
            if self.draws is not None:
                self.draws.close()
        self.train_seconds = job.elapsed()
        if self.selection is not None:
            self.selection.restore_best(self.model)


class NativeHierarchyEngine(HierarchyEngine):
    """The native hierarchy trainer for `keras_gauss.job.Job`: the model of
    `hierarchy_model` trained by the C++ pair trainer without TensorFlow
    (`keras_gauss.hierarchy.native_training`), evaluated and written as the
    keras engine's run (`model.keras` written without Keras).

    Example: see `train_wordnet`.
    """

    name = native_training.ENGINE

    def build(self, job, arrays):
        """The table started as the keras engine's, or the checkpoint's."""
        config = self.config
        self.selection = self._selection(job, arrays)
        self.table = native_training.pair_table(config, self.hierarchy.num_nodes,
                                                config.epochs * self.steps_per_epoch, self.known)
        if arrays is not None:
            native_training.restore(self.table, arrays, job.out_dir)
        self._describe(job)

    def tables(self):
        config, table = self.config, self.table
        return [Table("nodes", table.means, table.variances, config.max_norm,
                      config.min_variance, config.max_variance)]

    def train(self, job):
        """The epochs in C++, a checkpoint between two chunks of steps when due."""
        related = native_training.related_nodes(self.known, self.config.sibling_negatives)
        self.losses, self.iterations = native_training.train_epochs(
            self.table, related, self.train_edges, self.config, job, self.selection)
        self.train_seconds = job.elapsed()

    def node_tables(self):
        means = self.table.means
        return means, np.broadcast_to(self.table.variances, means.shape)

    def write_model(self, path):
        """`model.keras` of `hierarchy_model` holding the trained table, its
        accumulators and the optimizer's step count, written without Keras
        (`keras_gauss.hierarchy.model_file`)."""
        config = self.config
        k = config.negatives + int(config.reversed_negatives)
        model_config = hierarchy_model_config(config, self.hierarchy.num_nodes, k,
                                              config.epochs * self.steps_per_epoch)
        write_hierarchy_model(path, model_config, self.table.arrays(), self.iterations)
