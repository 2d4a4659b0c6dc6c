"""Training and evaluating Gaussian embeddings of a hierarchy: WordNet nouns or verbs, or a user's own is-a pairs."""

import dataclasses

import numpy as np

from keras_gauss import energies
from keras_gauss.callbacks.progress import Phase
from keras_gauss.distribution import DistributionError
from keras_gauss.fused.native import native_unavailable
from keras_gauss.hierarchy import native_training
from keras_gauss.hierarchy.benchmark_data import read_entailment
from keras_gauss.hierarchy.model_file import hierarchy_model_config
from keras_gauss.hierarchy.model_file import write_hierarchy_model
from keras_gauss.hierarchy.benchmark_data import read_hyperlex
from keras_gauss.hierarchy.selection import BestEpoch
from keras_gauss.hierarchy.selection import monitor_of
from keras_gauss.hierarchy.selection import validation_scorer
from keras_gauss.job import Data
from keras_gauss.job import Digest
from keras_gauss.job import Engine
from keras_gauss.job import Job
from keras_gauss.job import Table
from keras_gauss.job import check_engine
from keras_gauss.job import choose_engine
from keras_gauss.job import model_tables


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
    WordNet split").

    Attributes:
        edges: a TSV/CSV file of `child, parent` is-a pairs to embed instead
            of WordNet (`keras-gauss train-hierarchy`).
        pos: WordNet part of speech, `"n"` (nouns) or `"v"` (verbs).
        root: node whose subtree to embed (`None`: everything).
        include_lemmas: add word nodes linked to their synsets.
        dim: embedding dimension.
        covariance: `"diagonal"` or `"spherical"`.
        epochs: the most passes over the training edges (`None`: the
            default of the split and dimension, `default_schedule`). With
            validation edges, the run keeps the tables of the epoch with the
            best validation score and stops after `patience` epochs without
            improvement (`keras_gauss.hierarchy.selection.BestEpoch`).
        patience: epochs without a better validation score before training
            stops (`None`: the default of the split and dimension; 0: never
            stop early, still keep the best epoch).
        batch_size: positive edges per step.
        negatives: corrupted edges per positive (`None`: the energy's, 10).
        reversed_negatives: also use each reversed edge as a negative
            (`None`: the energy's, no).
        sibling_negatives: fraction (0 to 1) of the `negatives` whose general
            node is replaced by one of its siblings in the training closure
            (hard negatives; `keras_gauss.hierarchy.make_dataset`). 0: none.
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
            20 with KL, 0 with containment).
        init: how the table starts: `"tree"` (nested along the training
            edges' direct links, `keras_gauss.hierarchy.initialization
            .tree_initialization`) or `"uniform"` (means uniform in +-0.05,
            variances 1); `None`: tree with KL, uniform with containment.
        learning_rate: `SparseAdagrad` learning rate (the first step's).
        learning_rate_schedule: `"constant"` (default: `learning_rate` every
            step), `"linear"` or `"cosine"`: decays from `learning_rate` to 0
            over all the run's steps (`learning_rate_schedule`).
        max_norm: mean norm bound `C` (`None`: 10 with KL, 4 with containment).
        min_variance: variance bound `m` (`None`: 0.01 with KL, 0.05 with
            containment).
        max_variance: variance bound `M`.
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
            (`None`: all; the full hierarchy has 82,115).
        seed: random seed of the split, negatives and initialisation.
        engine: `"native"` (default: the C++ trainer, no TensorFlow;
            `keras_gauss.hierarchy.native_training`; where the native library
            does not build, the run trains with keras after one warning) or
            `"keras"` (`model.fit` with the layers). The same model, steps
            and run files; the native engine draws its own negatives (not
            NumPy's numbers) and has no `sibling_negatives` or distribution.
        generality: `beta >= 0`, the weight of the generality term in the
            run's energy: "x is-a y" scores `-KL(N_x || N_y) + beta * (log
            det Sigma_y - log det Sigma_x)`, which favours a general side
            broader than the specific side and lowers the reversed pair. Used
            wherever the run is scored (validation threshold, every kind of
            test negatives, reconstruction, HyperLex, Baroni) and by the
            saved run (`run.json`: `keras_gauss.load_run`, `keras-gauss
            neighbors`, the serving export). Training (the loss) is
            unchanged. 0 (default): the plain KL energy.

    Example: the generality term of a KL run, recorded in the config.

    >>> config = WordNetConfig(root="mammal.n.01", energy="kl", generality=0.1)
    >>> config.validate()
    >>> config.generality
    0.1
    >>> WordNetConfig(generality=-1.0).validate()
    Traceback (most recent call last):
    ...
    ValueError: --generality must be a finite number >= 0, got -1.0.
    """

    edges: str | None = None
    pos: str = "n"
    root: str | None = None
    include_lemmas: bool = False
    dim: int = 50
    covariance: str = "diagonal"
    epochs: int | None = None
    patience: int | None = None
    batch_size: int = 1024
    negatives: int | None = None
    reversed_negatives: bool | None = None
    sibling_negatives: float = 0.0
    energy: str | None = None
    loss: str | None = None
    margin: float | None = None
    threshold: float | None = None
    init: str | None = None
    learning_rate: float = 0.3
    learning_rate_schedule: str = "constant"
    max_norm: float | None = None
    min_variance: float | None = None
    max_variance: float = 5.0
    split: str = "closure"
    val_size: float | None = None
    test_size: float | None = None
    reconstruction_nodes: int | None = 2000
    seed: int = 0
    generality: float = 0.0
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
        from keras_gauss.checks import check_config

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
        if self.loss not in ("ranking", "threshold"):
            raise ValueError(f"--loss must be 'ranking' or 'threshold', got {self.loss!r}.")
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
        sizes = [0.0 if v is None else v for v in (self.val_size, self.test_size)]
        if min(sizes) < 0 or self.threshold < 0:
            raise ValueError("--val-size, --test-size and --threshold must be >= 0.")
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
        check_engine(self.engine, {"native": self.sibling_negatives > 0 and (
            "draws no sibling negatives (--sibling-negatives)")})

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
        """This config with every `None` default set: the energy (KL),
        the loss settings by the energy (its `loss_defaults` in
        `keras_gauss.energies`, chosen on validation: benchmarks/README.md,
        "Ganea et al.'s WordNet split"), `epochs` and
        `patience` by the split (`default_schedule`).

        Example:

        >>> config = WordNetConfig(split="ganea", non_basic_percent=25).resolved()
        >>> config.energy, config.loss, config.threshold, config.init, config.epochs
        ('kl', 'threshold', 20.0, 'tree', 200)
        >>> WordNetConfig(energy="containment").resolved().margin
        0.25
        """
        energy = energies.get(self.energy or energies.DEFAULTS["hierarchy"].name,
                              task="hierarchy", setting="--energy")
        values = {"energy": energy.name, **{k: v for k, v in energy.loss_defaults.items()
                                            if getattr(self, k) is None}}
        epochs, patience = default_schedule(self.method, self.dim)
        if self.epochs is None:
            values["epochs"] = epochs
        if self.patience is None:
            values["patience"] = patience
        return dataclasses.replace(self, **values)


def default_schedule(method, dim):
    """`(epochs, patience)` by default for a split method and dimension.

    Without held-out edges, and on the closure split: 10 epochs (keeping
    the best on validation). The reduction split: up to 20, stopping after 5
    without a better validation accuracy. `"ganea"` and given splits (the
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


SCHEDULES = ("constant", "linear", "cosine")
# A run with few validation edges (a small taxonomy) takes at least this many steps an epoch.
SMALL_DATA_STEPS = 8
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


def _size(value):
    if value is None:
        return None
    return int(value) if value >= 1 else float(value)


def load_hierarchy(config):
    """The hierarchy a config names: its `--train-edges` or `--edges` file, else
    WordNet; without the root it drops (`drop_root`).

    Returns:
        `(hierarchy, source)`: `source` is a line saying where it came from.

    Raises:
        ValueError: a bad edges file or root (`EdgeFileError` names the file
            and line or node), or WordNet's own errors.
    """
    from keras_gauss.hierarchy import build_hierarchy
    from keras_gauss.hierarchy.edgefile import hierarchy_from_edge_file

    if config.train_edges is not None:
        given = _given(config)
        return given.hierarchy, given.summary
    if config.edges is not None:
        hierarchy, edge_file = hierarchy_from_edge_file(config.edges, root=config.root)
        source = edge_file.summary()
    else:
        hierarchy = build_hierarchy(config.root, include_lemmas=config.include_lemmas,
                                    pos=config.pos)
        kind = {"n": "nouns", "v": "verbs"}[config.pos]
        source = f"WordNet 3.0 {kind}" + (f" under {config.root}" if config.root else "")
    root = root_to_drop(config, hierarchy)
    if root is not None:
        from keras_gauss.hierarchy.split import drop_root

        hierarchy = drop_root(hierarchy, root)
        source += f"; root {root} dropped: {hierarchy.num_nodes:,} nodes, {len(hierarchy.edges):,} closure edges"
    return hierarchy, source


def root_to_drop(config, hierarchy):
    """The node `config.drop_root` removes (`None`: none): by default, with
    `--split ganea`, the hierarchy's root (`--root`, WordNet nouns'
    `entity.n.01`, or the only node without parents)."""
    if config.drop_root is not None:
        return None if config.drop_root == "none" else config.drop_root
    if config.split != "ganea" or config.train_edges is not None:
        return None
    tops = np.flatnonzero(hierarchy.index.num_ancestors == 0)
    if config.root is not None:
        return config.root
    if len(tops) == 1:
        return hierarchy.nodes[int(tops[0])]
    return None


def _given(config):
    from keras_gauss.hierarchy.given_split import read_given_split

    return read_given_split(config.train_edges, config.val_edges, config.test_edges)


def load_data(config):
    """`(hierarchy, source, split, split_line)`: `load_hierarchy` and `make_split`
    (a given split's files read once)."""
    if config.train_edges is not None:
        given = _given(config)
        return given.hierarchy, given.summary, *make_split(given.hierarchy, config, given)
    hierarchy, source = load_hierarchy(config)
    return hierarchy, source, *make_split(hierarchy, config)


def make_split(hierarchy, config, given=None):
    """The split of a config (`None` without held-out edges), and a line
    describing it (`given`: the `GivenSplit` of `--train-edges`, if read)."""
    from keras_gauss.hierarchy.split import DEFAULT_HELD_OUT, ganea_split, split_edges

    if config.train_edges is not None:
        given = given or _given(config)
        return given.split, ("held out: the labelled pairs of --val-edges and --test-edges; "
                             "negatives of training avoid the closure of the training pairs")
    if config.split == "ganea":
        split = ganea_split(hierarchy, config.non_basic_percent, seed=config.seed)
        extra = len(split.train) - split.num_basic
        line = (f"--split ganea --non-basic-percent {config.non_basic_percent:g}: training = the "
                f"{split.num_basic:,} basic edges (transitive reduction) + {extra:,} of the "
                f"{split.eligible:,} non-basic edges; held out: {len(split.val):,} validation + "
                f"{len(split.test):,} test non-basic edges (5% + 5%), with {len(split.val_neg):,} + "
                f"{len(split.test_neg):,} negatives (5 a side: child or parent corrupted, none in "
                "the closure). Not added to training: the other non-basic edges, i.e. no closure "
                "of the training edges (their closure is every edge: a lookup in it scores 1.0); "
                "negatives of training avoid it")
        return split, line
    if config.val_size == 0:
        return None, f"no held-out edges: training on all {len(hierarchy.edges):,}"
    split = split_edges(hierarchy, val_size=_size(config.val_size),
                        test_size=_size(config.test_size), seed=config.seed,
                        method=config.split)
    what = {"closure": "closure edges implied by training edges (Vendrov et al.)",
            "reduction": "edges of the transitive reduction (implied by no training edge)"}
    line = (f"--split {config.split}: {len(split.val):,} validation + {len(split.test):,} test "
            f"{what[config.split]}")
    if config.val_size is None or config.test_size is None:
        line += (f"; default size: the smaller of {DEFAULT_HELD_OUT:,} and 10% of "
                 f"{split.eligible:,} eligible edges")
    return split, line


def training_edges(hierarchy, split):
    """`(edges, known)`: the training positives and what the negative sampler may know.

    With a split the sampler sees the closure of the training edges only, never
    a held-out edge, so its negatives are the ones it would draw if the
    held-out edges did not exist.
    """
    if split is None:
        return hierarchy.edges, hierarchy.index
    return split.train, split.train_index


def evaluate_split(split, means, variances, generality=0.0, energy=energies.KL.name):
    """Every kind of held-out negatives, scored by the model and the baselines.

    The model's score is `-KL(N_specific || N_general)` plus, with
    `generality > 0`, the generality term, or the containment energy
    (`energy`; `evaluate.edge_scores`).

    Returns `{"split", "eligible", "sizes", "model", "closure_lookup",
    "depth_difference"}`, each scorer's entry as
    `keras_gauss.hierarchy.evaluate.split_classification` gives it.
    """
    from keras_gauss.hierarchy import evaluate

    parts = split.parts()
    known = split.train_index
    result = {"split": split.method, "eligible": split.eligible, "energy": energy,
              "sizes": {name: [int(len(pos)), int(len(neg))] for name, (pos, neg) in parts.items()},
              "model": evaluate.split_classification(
                  parts, evaluate.kl_scorer(means, variances, generality, energy)),
              "closure_lookup": evaluate.split_classification(parts, evaluate.lookup_scorer(known)),
              "depth_difference": evaluate.split_classification(parts, evaluate.depth_scorer(known))}
    return result


def write_split(directory, split, nodes):
    """Writes the split as node names: `train.tsv` (`specific<TAB>general`) and one
    `PART.tsv` per evaluation part (`specific<TAB>general<TAB>label`, 1 = is-a)."""
    directory.mkdir()
    names = np.asarray(nodes, dtype=object)

    def lines(pairs, label=None):
        rows = names[np.asarray(pairs, dtype=np.int64).reshape(-1, 2)]
        end = "" if label is None else f"\t{label}"
        return "".join(f"{a}\t{b}{end}\n" for a, b in rows)

    (directory / "train.tsv").write_text(lines(split.train), encoding="utf-8")
    for name, (pos, neg) in split.parts().items():
        (directory / f"{name}.tsv").write_text(lines(pos, 1) + lines(neg, 0), encoding="utf-8")


def shard_steps(num_edges, batch_size, job):
    """The steps of an epoch of a job whose process `i` of `N` trains edges
    `i::N` of the `num_edges` training edges, `batch_size / N` a step.

    Every process knows every shard's size (all split the same seeded
    hierarchy), so they agree without a message: the fewest full local
    batches of any shard, `(num_edges // N) // (batch_size // N)`.

    Raises:
        keras_gauss.distribution.DistributionError: a shard without one full
            batch (more processes than edges to share).

    Example:

    >>> from keras_gauss.distribution import Distribution
    >>> shard_steps(100, 16, Distribution("data", num_processes=2, process_id=1))
    6
    """
    n, local = job.num_processes, batch_size // job.num_processes
    steps = (num_edges // n) // local
    if steps < 1:
        raise DistributionError(
            f"--num-processes {n}: process {n - 1} trains {num_edges // n} of the {num_edges} "
            f"training edges (edges i::{n}), not one full batch of {local} (--batch-size "
            f"{batch_size} / --num-processes); give fewer processes or a smaller --batch-size.")
    return steps


def shard_edges(config, edges, known, job, epoch, steps):
    """This process's batches of epoch `epoch`: its edges `i::N`, `steps` batches.

    `make_dataset` of `edges[i::N]` with `batch_size / N` edges a batch
    and the process's own seed (`job.process_seed`); the job's global
    batch `k` is every process's batch `k`, in process order.

    Example:

    >>> batches = shard_edges(config, split.train, split.train_index, job, 0, steps)  # doctest: +SKIP
    """
    from keras_gauss.hierarchy import make_dataset

    config = config.resolved()
    local = config.batch_size // job.num_processes
    data = make_dataset(edges[job.process_id::job.num_processes], known=known,
                        batch_size=local, negatives=config.negatives,
                        reversed_negatives=config.reversed_negatives,
                        seed=job.process_seed(config.seed), first_pass=epoch,
                        drop_remainder=True)
    return job.local_batches(data, local, steps)


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
    (`config.engine="native"`) or `HierarchyEngine` (keras):
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
        if entailment is not None:
            read_entailment(entailment)

    config = config.resolved()  # the default energy, loss, epochs and patience
    # What the checkpoint must match: every setting of training. The
    # generality term only scores the trained tables, so a run may be resumed
    # with another --generality (and from a checkpoint written before it).
    settings = {k: v for k, v in dataclasses.asdict(config).items() if k != "generality"}
    job = Job("hierarchy", out_dir, settings, check=check,
              data_name=("hierarchy" if config.edges is None and config.train_edges is None
                         else f"hierarchy of {config.edges or config.train_edges}"),
              overwrite=overwrite, resume=resume, checkpoint_every=checkpoint_every,
              verbose=verbose, distribution=distribution, batch_size=config.batch_size,
              # Checkpoints written before --learning-rate-schedule trained with a
              # constant rate; NEW_SETTINGS: as checkpoints before those settings ran.
              defaults={"learning_rate_schedule": "constant", "engine": "keras",
                        **NEW_SETTINGS})
    return job.run(lambda state: choose_engine(config.engine, [
        ("native", lambda: NativeHierarchyEngine(config, hyperlex, entailment),
         native_unavailable),
        ("keras", lambda: HierarchyEngine(dataclasses.replace(config, engine="keras"), hyperlex,
                                          entailment), None)]))


def hierarchy_digest(hierarchy, split=None):
    """The content digest of a hierarchy (`keras_gauss.job.Digest`): its node
    names in table order and its closure edges, whatever file or WordNet
    they came from; with a split read from files (`split.method ==
    "given"`), every part of it too, each pair in file order: the training
    pairs as given (they are trained as given, in their order), the
    validation and test positives and negatives (the run chooses on them).
    A split the run makes follows from the hierarchy and the settings.

    Example:

    >>> from keras_gauss.hierarchy.closure import hierarchy_from_parents
    >>> a = hierarchy_from_parents({"dog": ["mammal"], "cat": ["mammal"], "mammal": []})
    >>> b = hierarchy_from_parents({"dog": ["mammal"], "mammal": ["cat"], "cat": []})
    >>> hierarchy_digest(a) == hierarchy_digest(b)
    False
    """
    digest = Digest("hierarchy")
    digest.update_strings(hierarchy.nodes)
    digest.update(np.asarray(hierarchy.edges, np.int64))
    if split is not None and split.method == "given":
        for part in ("train", "val", "val_neg", "test", "test_neg"):
            pairs = np.asarray(getattr(split, part), np.int64).reshape(-1, 2)
            digest.update_strings([part])
            digest.update(np.array([len(pairs)], np.int64))  # where one part ends
            digest.update(pairs)
    return digest.hexdigest()


class HierarchyEngine(Engine):
    """The hierarchy trainer for `keras_gauss.job.Job` (the keras engine): the
    model of `hierarchy_model` trained with `fit`, evaluated on the split,
    written with `nodes.tsv` and `split/`.

    Example: see `train_wordnet`.
    """

    name = "keras"

    def __init__(self, config, hyperlex=None, entailment=None):
        self.config = config
        self.hyperlex = hyperlex
        self.entailment = entailment

    def read(self, job):
        """The hierarchy, its split and each process's training edges."""
        config, distribution = self.config, job.distribution
        what = config.edges or "WordNet ({})".format(
            config.root or {"n": "all nouns", "v": "all verbs"}[config.pos])
        preparing = Phase(f"preparing {what}", job.verbose)
        self.hierarchy, source, self.split, split_line = load_data(config)
        self.train_edges, self.known = training_edges(self.hierarchy, self.split)
        from keras_gauss.hierarchy.split import with_training_pairs  # NLTK: not at --help

        # few validation edges: thresholds and the best epoch are chosen with the training edges
        self.choice, few = with_training_pairs(self.split, self.hierarchy, config.seed)
        edges = len(self.train_edges)
        if few and not distribution.active and edges < config.batch_size * SMALL_DATA_STEPS:
            # else a small taxonomy trains one or two steps an epoch, and AdaGrad's first
            # step (about the learning rate on every coordinate) is most of its training
            batch = -(-edges // SMALL_DATA_STEPS)
            self.config = config = dataclasses.replace(config, batch_size=batch)
            few += f"; batches of {batch} edges, so that an epoch takes {SMALL_DATA_STEPS} steps"
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
            if start is not None:  # the tree-shaped start (config.init)
                table = model.get_layer("nodes")
                table.means.assign(start[0])
                table.variances.assign(start[1])
            self._describe(job)
            optimizer.build(model.trainable_variables)
            if arrays is not None:
                restore_model(model, optimizer, arrays)

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
        """Epoch `epoch`'s batches: drawn from the stream `[seed, epoch]`."""
        from keras_gauss.hierarchy import make_dataset

        config, distribution = self.config, job.distribution
        if self.steps is not None:
            return shard_edges(config, self.train_edges, self.known, distribution, epoch,
                               self.steps)
        data = make_dataset(self.train_edges, known=self.known, batch_size=config.batch_size,
                            negatives=config.negatives,
                            reversed_negatives=config.reversed_negatives,
                            sibling_negatives=config.sibling_negatives, seed=config.seed,
                            first_pass=epoch, drop_remainder=distribution.active)
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
        with job.distribution.scope():
            fit_by_epoch(self.model, lambda epoch: self.epoch_dataset(job, epoch),
                         config.epochs, [saving, progress, FiniteLoss(), record, *callbacks],
                         start=first)
        self.train_seconds = job.elapsed()
        if self.selection is not None:
            self.selection.restore_best(self.model)

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
            metrics["evaluation"] = evaluate_split(choice, means, variances,
                                                   config.generality, config.energy)
            if choice is not split:
                metrics["chosen_on"] = {"validation_edges": len(split.val),
                                        "training_edges": len(choice.val) - len(split.val)}
            for kind in ("reversed", "sibling"):
                if kind in metrics["evaluation"]["model"]:
                    metrics[f"test_{kind}_accuracy"] = \
                        metrics["evaluation"]["model"][kind]["test_accuracy"]
        recon = evaluate.reconstruction(hierarchy, means, variances,
                                        max_nodes=config.reconstruction_nodes, seed=config.seed,
                                        generality=config.generality, energy=config.energy)
        metrics.update({"mean_rank": recon["mean_rank"], "map": recon["map"],
                        "reconstruction_queries": recon["num_queries"]})
        if self.hyperlex is not None:
            result = evaluate.hyperlex_spearman(self.hyperlex, hierarchy, means, variances,
                                                generality=config.generality,
                                                energy=config.energy)
            metrics.update({"hyperlex_spearman": result["spearman"],
                            "hyperlex_coverage": result["coverage"]})
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
        (directory / "nodes.tsv").write_text("\n".join(hierarchy.nodes) + "\n")
        if self.split is not None:
            write_split(directory / "split", self.split, hierarchy.nodes)
        source = ({"edges": str(config.edges)} if config.edges else
                  {"train_edges": str(config.train_edges)} if config.train_edges else
                  {"pos": config.pos})
        return {"kind": "wordnet" if "pos" in source else "hierarchy", "energy": config.energy,
                "table": "nodes", "vocabulary": "nodes.tsv", "root": config.root,
                "generality": config.generality, **source}



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
        related = native_training.related_nodes(self.known)
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

train_hierarchy = train_wordnet
