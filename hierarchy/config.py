"""The settings of a hierarchy run: `WordNetConfig`, its default schedule
(epochs and patience) and the learning rate schedules."""

import dataclasses

from keras_gauss import energies
from keras_gauss.fused.pairs import LOSSES  # the order is the C++ code (pairs.cc)
from keras_gauss.fused.pairs import SCHEDULES
from keras_gauss.job import check_engine

# `train-wordnet` and `train-hierarchy` on a GPU (`keras_gauss.job.jax_gpu`),
# for the settings not given: the keras engine on JAX, in the CPU's batches
# of 1,024. Batches of 4,096 (the main job's epoch in ~515 steps, not ~2,060)
# lost reconstruction: MAP .760 against .868 at 1,024 with the same engine
# (the CPU run, native: .872; an H200 ran the 4,096 job in 57.7 s,
# benchmarks/README.md "The GPU check").
GPU_SETTINGS = {"engine": "keras", "batch_size": 1024}


@dataclasses.dataclass
class WordNetConfig:
    """Settings of a WordNet run (all saved in `metrics.json`).

    Defaults embed the full noun closure in 50-d diagonal Gaussians with one
    shared table and the paper's KL energy, `-KL(N_specific || N_general)`,
    trained with density order embeddings' thresholded loss (positives
    below a divergence of 20, negatives beyond 40) and `SparseAdagrad`,
    from a table nested along the training tree (`init="tree"`,
    `keras_gauss.hierarchy.initialization`). Each positive edge gets ten
    negatives (one side replaced by a random node that is neither ancestor
    nor descendant of the kept side, the paper's rule). `energy="containment"`
    trains how far the specific one-sigma box sticks out of the general
    one's instead, with its own defaults. Each energy's defaults are its
    `loss_defaults` (`keras_gauss.energies`), chosen on validation
    (`research/kl_sweep.md`; `benchmarks/README.md`, "Ganea et al.'s
    WordNet split"). KL on the reduction split has its own
    (`SPLIT_DEFAULTS`, `research/reduction_kl.md`): the tree start sized by
    descendant counts, variances up to 50, learning rate 0.003, the
    generality term 0.3, 3 epochs; on the closure split (the main job) a
    tenth of its negatives siblings. A setting left `None` takes its default
    in `resolved()`; one given is kept.

    Attributes:
        edges: a TSV/CSV file of `child, parent` is-a pairs to embed instead
            of WordNet (`keras-gauss train-hierarchy`).
        pos: WordNet part of speech, `"n"` (nouns) or `"v"` (verbs).
        root: node whose subtree to embed (`None`: everything).
        include_lemmas: add a node per noun lemma below each of its synsets
            (`build_hierarchy`); word pairs are then scored from word 1's own
            node, and the held-out edges and reconstruction stay the
            synsets' (`Hierarchy.synsets_only`). `None`: yes with KL on the
            closure split of WordNet's nouns (the main job, `WORD_NODES`),
            else no.
        dim: embedding dimension.
        covariance: `"diagonal"` or `"spherical"`.
        epochs: the most passes over the training edges (`None`: the
            default of the split and dimension, `default_schedule`; 3 with
            KL on the reduction split and with word nodes). With
            validation edges, the run keeps the tables of the epoch with the
            best validation score and stops after `patience` epochs without
            improvement (`keras_gauss.hierarchy.selection.BestEpoch`).
        patience: epochs without a better validation score before training
            stops (`None`: the default of the split and dimension; 0: never
            stop early, still keep the best epoch).
        batch_size: positive edges per step (the commands' default on a
            GPU: `GPU_SETTINGS`).
        negatives: corrupted edges per positive (`None`: the energy's, 10).
        reversed_negatives: also use each reversed edge as a negative
            (`None`: the energy's: yes with KL, no with containment).
        sibling_negatives: fraction (0 to 1) of the `negatives` whose general
            node is replaced by one of its siblings in the training closure
            (hard negatives; `keras_gauss.hierarchy.make_dataset`). 0: none.
            `None`: 0.1 with KL on the closure split (`SPLIT_DEFAULTS`), else 0.
        energy: `"kl"` (the paper's `-KL(N_specific || N_general)`) or
            `"containment"` (`keras_gauss.layers.ContainmentEnergy`: how far
            the specific Gaussian's one-sigma box sticks out of the general
            one's; nested boxes are transitive, so it infers the edges the
            training edges imply). The run is scored and served with it.
            `None`: KL.
        loss: `"ranking"` (the paper's max-margin) or `"threshold"` (density
            order embeddings' thresholded divergence); `None`: threshold.
        margin: margin of the loss (`None`: 20 with KL, 0.25 with containment).
        threshold: divergence tolerance of the `"threshold"` loss (`None`:
            20 with KL, 0 with containment, 40 with KL and word nodes,
            `WORD_NODES`).
        init: how the table starts: `"tree"` (nested along the training
            edges' direct links, `keras_gauss.hierarchy.initialization
            .tree_initialization`), `"tree-size"` (the same, the variances
            also growing with the descendant count, `SIZE_WEIGHT`) or
            `"uniform"` (means uniform in +-0.05, variances 1); `None`: tree
            with KL (tree-size on the reduction split), uniform with
            containment.
        learning_rate: `SparseAdagrad` learning rate (the first step's;
            `None`: 0.3, 0.003 with KL on the reduction split).
        learning_rate_schedule: `"constant"` (default: `learning_rate` every
            step), `"linear"` or `"cosine"`: decays from `learning_rate` to 0
            over all the run's steps (`learning_rate_schedule`).
        max_norm: mean norm bound `C` (`None`: 10 with KL, 4 with containment).
        min_variance: variance bound `m` (`None`: 0.01 with KL, 0.05 with
            containment and with KL and word nodes).
        max_variance: variance bound `M` (`None`: 5, 50 with KL on the
            reduction split).
        split: `"closure"` holds out closure edges that two training edges
            imply (Vendrov et al.); `"reduction"` holds out edges of the
            transitive reduction, which no training edge implies; `"ganea"`
            the split of Ganea et al. (2018): 5% + 5% of the non-basic edges
            held out with ten negatives each, training = the transitive
            reduction + `non_basic_percent` % of the non-basic edges, nothing
            else (`keras_gauss.hierarchy.split.ganea_split`).
        non_basic_percent: `--split ganea`: percent of the non-basic edges
            trained on (the published 0, 10, 25, 50).
        drop_root: a top node removed before splitting (Ganea et al. drop
            `entity.n.01`); `None`: with `--split ganea` the root (`root`,
            WordNet's `entity.n.01`, or an edges file's only top node), else
            none; `"none"`: keep every node.
        train_edges: a file of `child, parent` pairs trained exactly as
            given (no closure added), with `val_edges` and `test_edges`
            (`child, parent, label` lines) as the held-out parts
            (`keras_gauss.hierarchy.given_split`); instead of `edges` and `split`.
        val_edges: the validation pairs of `train_edges`.
        test_edges: the test pairs of `train_edges`.
        val_size: held-out validation edges (count, or fraction of the
            eligible edges; `None`: the smaller of 4,000 and 10% of them);
            0 with `test_size` 0 trains on every edge.
        test_size: held-out test edges (count, fraction or `None`).
        reconstruction_nodes: query nodes sampled for mean rank / MAP
            (`None`: all; the full hierarchy has 82,115 synsets; word nodes are
            not ranked).
        seed: random seed of the split, negatives and initialisation.
        engine: `"native"` (default: the C++ trainer, no TensorFlow;
            `keras_gauss.hierarchy.native_training`; where the native library
            does not build, the run trains with keras after one warning) or
            `"keras"` (`model.fit` with the layers; the commands' default on
            a GPU with `KERAS_BACKEND=jax`, `GPU_SETTINGS`). The same model, steps
            and run files; the native engine draws its own negatives (not
            NumPy's numbers, sibling negatives included) and has no distribution.
        generality: `beta >= 0`, the weight of the generality term in the
            run's energy: "x is-a y" scores `-KL(N_x || N_y) + beta * (log
            det Sigma_y - log det Sigma_x)`, which favours a general side
            broader than the specific side and lowers the reversed pair. Used
            wherever the run is scored (validation threshold, every kind of
            test negatives, reconstruction, HyperLex, Baroni) and by the
            saved run (`run.json`: `keras_gauss.load_run`, `keras-gauss
            neighbors`, the serving export). Training (the loss) is
            unchanged. `None`: 0 (the plain KL energy), 0.3 with KL on
            the reduction split, 0.1 with word nodes (`WORD_NODES`).

    Example: the generality term of a KL run, recorded in the config, and
    the defaults of the reduction split (`resolved`).

    >>> config = WordNetConfig(root="mammal.n.01", energy="kl", generality=0.1)
    >>> config.validate()
    >>> config.generality
    0.1
    >>> config = WordNetConfig(split="reduction").resolved()
    >>> config.init, config.learning_rate, config.max_variance, config.generality
    ('tree-size', 0.003, 50.0, 0.3)
    >>> WordNetConfig(generality=-1.0).validate()
    Traceback (most recent call last):
    ...
    ValueError: --generality must be a finite number >= 0, got -1.0.
    """

    edges: str | None = None
    pos: str = "n"
    root: str | None = None
    include_lemmas: bool | None = None
    dim: int = 50
    covariance: str = "diagonal"
    epochs: int | None = None
    patience: int | None = None
    batch_size: int = 1024
    negatives: int | None = None
    reversed_negatives: bool | None = None
    sibling_negatives: float | None = None
    energy: str | None = None
    loss: str | None = None
    margin: float | None = None
    threshold: float | None = None
    init: str | None = None
    learning_rate: float | None = None
    learning_rate_schedule: str = "constant"
    max_norm: float | None = None
    min_variance: float | None = None
    max_variance: float | None = None
    split: str = "closure"
    val_size: float | None = None
    test_size: float | None = None
    reconstruction_nodes: int | None = 2000
    seed: int = 0
    generality: float | None = None
    non_basic_percent: float | None = None
    drop_root: str | None = None
    train_edges: str | None = None
    val_edges: str | None = None
    test_edges: str | None = None
    engine: str = "native"

    def validate(self):
        """Raises `ValueError` naming the first bad setting."""
        resolved = self.resolved()  # checks --energy first (keras_gauss.energies.get)
        self._validate_split()
        resolved._validate()

    def _validate(self):
        from keras_gauss.checks import INT32_MAX, check_config

        check_config(self, ("dim", "batch_size", "negatives", "learning_rate",
                            "margin", "max_norm", "min_variance"))
        for name in ("epochs", "patience"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < (1 if name == "epochs" else 0)):
                raise ValueError(f"--{name} must be an integer >= {1 if name == 'epochs' else 0}, "
                                 f"got {value!r}.")
        if self.learning_rate_schedule not in SCHEDULES:
            raise ValueError(f"--learning-rate-schedule must be one of {', '.join(SCHEDULES)}, "
                             f"got {self.learning_rate_schedule!r}.")
        if self.loss not in LOSSES:
            raise ValueError(f"--loss must be one of {', '.join(LOSSES)}, got {self.loss!r}.")
        from keras_gauss.hierarchy.initialization import INITS

        if self.init not in INITS:
            raise ValueError(f"--init must be one of {', '.join(INITS)}, got {self.init!r}.")
        from keras_gauss.hierarchy.split import SPLITS

        if self.split not in SPLITS:
            raise ValueError(f"--split must be one of {', '.join(SPLITS)}, got {self.split!r}.")
        if self.pos not in ("n", "v"):
            raise ValueError(f"--pos must be 'n' (nouns) or 'v' (verbs), got {self.pos!r}.")
        if self.edges is not None and self.include_lemmas:
            raise ValueError("--lemmas adds WordNet words: it does not apply to --edges.")
        for flag, value in (("--val-size", self.val_size), ("--test-size", self.test_size),
                            ("--threshold", self.threshold)):
            if value is not None and value < 0:
                raise ValueError(f"{flag} must be >= 0, got {value:g}.")
            if flag != "--threshold" and value is not None and value >= 1 and (
                    value % 1 or value > INT32_MAX):
                raise ValueError(f"{flag} must be a number of edges (1, 2, ... {INT32_MAX}) or "
                                 f"a fraction of them below 1, got {value:g}.")
        if self.seed < 0:
            raise ValueError(f"--seed must be >= 0, got {self.seed}.")
        nodes = self.reconstruction_nodes
        if nodes is not None and (isinstance(nodes, bool) or not isinstance(nodes, int)
                                  or nodes < 1):
            raise ValueError(f"--reconstruction-nodes must be an integer >= 1, got {nodes!r}.")
        from keras_gauss.hierarchy.evaluate import check_generality

        check_generality(self.generality, "--generality")
        from keras_gauss.hierarchy.evaluate import check_energy

        check_energy(self.energy, self.generality)
        if not 0 <= self.sibling_negatives <= 1:
            raise ValueError(f"--sibling-negatives must lie in [0, 1], got {self.sibling_negatives}.")
        if (self.val_size == 0) != (self.test_size == 0):
            raise ValueError("--val-size and --test-size must both be 0 or both > 0.")
        check_engine(self.engine)

    def _validate_split(self):
        given = [self.train_edges, self.val_edges, self.test_edges]
        if any(f is not None for f in given):
            if any(f is None for f in given):
                missing = [flag for flag, f in zip(("--train-edges", "--val-edges",
                                                    "--test-edges"), given) if f is None]
                raise ValueError(f"--train-edges, --val-edges and --test-edges go together: "
                                 f"give {' and '.join(missing)} too.")
            for flag, value in (("--edges", self.edges), ("--root", self.root),
                                ("--drop-root", self.drop_root),
                                ("--non-basic-percent", self.non_basic_percent),
                                ("--val-size", self.val_size), ("--test-size", self.test_size)):
                if value is not None:
                    raise ValueError(f"{flag} does not apply to --train-edges (the files are "
                                     "the split).")
            if self.split != "closure":
                raise ValueError(f"--split {self.split} does not apply to --train-edges "
                                 "(the files are the split).")
        if self.split == "ganea":
            if self.non_basic_percent is None:
                raise ValueError("--split ganea needs --non-basic-percent X: the percent of the "
                                 "non-basic edges to train on (the published 0, 10, 25, 50).")
            if isinstance(self.non_basic_percent, bool) or not isinstance(
                    self.non_basic_percent, (int, float)) or not 0 <= self.non_basic_percent <= 90:
                raise ValueError("--non-basic-percent must lie in [0, 90] (10% of the non-basic "
                                 f"edges are held out), got {self.non_basic_percent!r}.")
            for flag, value in (("--val-size", self.val_size), ("--test-size", self.test_size)):
                if value is not None:
                    raise ValueError(f"{flag} does not apply to --split ganea (it holds out 5% "
                                     "+ 5% of the non-basic edges).")
        elif self.non_basic_percent is not None:
            raise ValueError("--non-basic-percent applies to --split ganea only.")
        if self.drop_root is not None and self.include_lemmas:
            raise ValueError("--drop-root does not apply with --lemmas (word nodes have no root).")

    @property
    def method(self):
        """The split the run makes: `"given"` with `train_edges`, else `split`
        (`None` without held-out edges)."""
        if self.train_edges is not None:
            return "given"
        if self.split != "ganea" and self.val_size == 0:
            return None
        return self.split

    def resolved(self):
        """This config with every `None` default set, each from the first
        place that has it: the split's defaults for the energy
        (`SPLIT_DEFAULTS`: KL on the reduction and closure splits), those
        of word nodes (`WORD_NODES`; `include_lemmas` itself: on where
        `WORD_NODES` names the split and energy of WordNet's nouns), the energy's (its
        `loss_defaults` in `keras_gauss.energies`, chosen on validation:
        benchmarks/README.md, "Ganea et al.'s WordNet split"), `epochs` and
        `patience` by the split (`default_schedule`), else `DEFAULTS`. The
        energy itself: KL. A setting given (not `None`) is kept.

        Example: KL on the reduction split, containment there, and a
        setting given.

        >>> config = WordNetConfig(split="reduction").resolved()
        >>> (config.init, config.max_variance, config.learning_rate, config.generality,
        ...  config.epochs)
        ('tree-size', 50.0, 0.003, 0.3, 3)
        >>> config = WordNetConfig(split="reduction", energy="containment").resolved()
        >>> config.init, config.learning_rate, config.generality, config.epochs
        ('uniform', 0.3, 0.0, 20)
        >>> WordNetConfig(split="reduction", learning_rate=0.01).resolved().learning_rate
        0.01
        >>> config = WordNetConfig(split="ganea", non_basic_percent=25).resolved()
        >>> config.energy, config.loss, config.threshold, config.init, config.epochs
        ('kl', 'threshold', 20.0, 'tree', 200)
        >>> WordNetConfig(energy="containment").resolved().margin
        0.25
        """
        energy = energies.get(self.energy or energies.DEFAULTS["hierarchy"].name,
                              task="hierarchy", setting="--energy")
        words = self.include_lemmas
        if words is None:
            words = ((self.method, energy.name) in WORD_NODES and self.edges is None
                     and self.pos == "n" and self.drop_root is None)
        epochs, patience = default_schedule(self.method, self.dim)
        defaults = {**DEFAULTS, "epochs": epochs, "patience": patience, **energy.loss_defaults,
                    **(WORD_NODES.get((self.method, energy.name), {}) if words else {}),
                    **SPLIT_DEFAULTS.get((self.method, energy.name), {})}
        return dataclasses.replace(self, energy=energy.name, include_lemmas=words, **{
            k: v for k, v in defaults.items() if getattr(self, k) is None})


# The defaults of the settings `WordNetConfig` leaves `None` whose default
# neither the energy nor the schedule sets (`WordNetConfig.resolved`).
DEFAULTS = {"learning_rate": 0.3, "max_variance": 5.0, "generality": 0.0,
            "sibling_negatives": 0.0}

# Defaults of a split (`WordNetConfig.method`) with one energy, over the
# energy's and the schedule's: KL on the reduction split (held-out edges no
# training edge implies) starts from the tree sized by descendant counts,
# with broad variances, and trains three gentle epochs not to erase that
# start's direction; the generality term turns it into reversed accuracy.
# Chosen on validation (research/reduction_kl.md, setting B): test random /
# reversed .981 / .937 on three seeds (the KL defaults: .966 / .740), its
# reconstruction MAP .23 (.28).
# KL on the closure split (the main job) draws a tenth of its negatives as
# siblings: cohyponyms no longer score as hypernyms (HyperLex training + dev
# nouns .541 -> .626, reconstruction MAP .45 -> .70, validation accuracy
# .996 -> .994; research/sibling_negatives.md).
SPLIT_DEFAULTS = {
    ("reduction", energies.KL.name): {"init": "tree-size", "max_variance": 50.0,
                                      "learning_rate": 0.003, "generality": 0.3, "epochs": 3},
    ("closure", energies.KL.name): {"sibling_negatives": 0.1},
}

# The (split, energy) pairs whose WordNet noun runs add word nodes by default
# (`include_lemmas`), and their settings with word nodes: KL on the closure
# split, the main job. A word is then one Gaussian inside all its senses:
# HyperLex nouns .729 (three seeds) against .674 on synsets alone. Three epochs keep the
# main job under a minute (2.9 times the edges). A word leaf at the least
# variance pays the log-det gap to every ancestor, which squeezes synsets
# with many words below (dog.n.01 ended inside terrier.n.01): threshold 40
# and variances from 0.05 leave them room, and the generality term 0.1
# scores the direction. Chosen on validation edges, seed 0: random /
# reversed / sibling .996 / .991 / .986 against .992 / .980 / .973 with KL's
# own threshold 20 and variances from 0.01 (research/word_nodes.md). Held-out
# edges and reconstruction stay the synsets' (`Hierarchy.synsets_only`).
WORD_NODES = {("closure", energies.KL.name): {"epochs": 3, "generality": 0.1, "threshold": 40.0,
                                              "min_variance": 0.05}}


def default_schedule(method, dim):
    """`(epochs, patience)` by default for a split method and dimension.

    Without held-out edges, and on the closure split: 10 epochs (keeping
    the best on validation; KL with word nodes: 3, `WORD_NODES`). The
    reduction split: up to 20, stopping after 5 without a better validation
    accuracy (KL: 3 epochs, `SPLIT_DEFAULTS`). `"ganea"` and given splits (the
    model infers the held-out edges from the reduction; 5-d still gains at
    200 epochs): up to 200, stopping after 20 without a better validation F1.

    Example:

    >>> default_schedule("ganea", 10)
    (200, 20)
    >>> default_schedule(None, 50)
    (10, 0)
    """
    if method in ("ganea", "given"):
        return 200, 20
    if method == "reduction":
        return 20, 5
    return 10, 0


# Settings added after checkpoints were first written, as those checkpoints ran.
NEW_SETTINGS = {"patience": 0, "non_basic_percent": None, "drop_root": None,
                "train_edges": None, "val_edges": None, "test_edges": None, "energy": energies.KL.name,
                "init": "uniform"}


def learning_rate_schedule(kind, learning_rate, total_steps):
    """The learning rate of a run: a float, or a Keras schedule of the step.

    Args:
        kind: `"constant"` (`learning_rate` itself), `"linear"`
            (`learning_rate * (1 - t / total_steps)`) or `"cosine"`
            (`learning_rate * (1 + cos(pi * t / total_steps)) / 2`), `t` the
            optimizer's step (0 for the first), constant at 0 after the
            last step.
        learning_rate: the rate of the first step.
        total_steps: the steps of the whole run (epochs times steps an epoch).

    Example: a linear decay over 10 steps.

    >>> schedule = learning_rate_schedule("linear", 1.0, 10)
    >>> [round(float(schedule(t)), 3) for t in (0, 5, 9, 10)]
    [1.0, 0.5, 0.1, 0.0]
    >>> round(float(learning_rate_schedule("cosine", 1.0, 10)(5)), 3)
    0.5
    >>> learning_rate_schedule("constant", 0.3, 10)
    0.3
    """
    import keras

    if kind not in SCHEDULES:
        raise ValueError(f"--learning-rate-schedule must be one of {', '.join(SCHEDULES)}, "
                         f"got {kind!r}.")
    total_steps = max(int(total_steps), 1)
    if kind == "linear":
        return keras.optimizers.schedules.PolynomialDecay(
            learning_rate, total_steps, end_learning_rate=0.0, power=1.0)
    if kind == "cosine":
        return keras.optimizers.schedules.CosineDecay(learning_rate, total_steps, alpha=0.0)
    return learning_rate
