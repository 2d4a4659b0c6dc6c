"""Training and evaluating Gaussian embeddings of the WordNet noun hierarchy."""

import dataclasses
import json
import time

import numpy as np


@dataclasses.dataclass
class WordNetConfig:
    """Settings of a WordNet run (all saved in `metrics.json`).

    Defaults embed the full noun closure in 50-d diagonal Gaussians with one
    shared table, the paper's KL energy and max-margin loss and
    `SparseAdagrad`. Each positive edge gets five negatives (one side
    replaced by a random node that is neither ancestor nor descendant of the
    kept side, the paper's rule) plus its reversal, which teaches direction:
    with one plain negative the test accuracy is as high but HyperLex and
    Baroni 2012 suffer (.49 / .75 against .60 / .92). About 17 s an epoch
    here; `benchmarks/wordnet.py` has the figures.

    Attributes:
        root: synset whose subtree to embed (`None`: all nouns).
        include_lemmas: add word nodes linked to their synsets.
        dim: embedding dimension.
        covariance: `"diagonal"` or `"spherical"`.
        epochs: passes over the training edges.
        batch_size: positive edges per step.
        negatives: corrupted edges per positive.
        reversed_negatives: also use each reversed edge as a negative.
        loss: `"ranking"` (the paper's max-margin) or `"threshold"` (density
            order embeddings' thresholded divergence).
        margin: margin of the loss.
        threshold: divergence tolerance of the `"threshold"` loss.
        learning_rate: `SparseAdagrad` learning rate.
        max_norm: mean norm bound `C`.
        min_variance: variance bound `m`.
        max_variance: variance bound `M`.
        val_size: held-out validation edges (count, or fraction of the
            non-basic edges); 0 with `test_size` 0 trains on every edge.
        test_size: held-out test edges (count or fraction).
        reconstruction_nodes: query nodes sampled for mean rank / MAP
            (`None`: all; the full hierarchy has 82,115).
        seed: random seed of the split, negatives and initialisation.
    """

    root: str | None = None
    include_lemmas: bool = False
    dim: int = 50
    covariance: str = "diagonal"
    epochs: int = 10
    batch_size: int = 1024
    negatives: int = 5
    reversed_negatives: bool = True
    loss: str = "ranking"
    margin: float = 1.0
    threshold: float = 0.0
    learning_rate: float = 0.3
    max_norm: float = 4.0
    min_variance: float = 0.05
    max_variance: float = 5.0
    val_size: float = 4000
    test_size: float = 4000
    reconstruction_nodes: int | None = 2000
    seed: int = 0

    def validate(self):
        """Raises `ValueError` naming the first bad setting."""
        from keras_gauss.runs import check_config

        check_config(self, ("dim", "epochs", "batch_size", "negatives", "learning_rate",
                            "margin", "max_norm", "min_variance"))
        if self.loss not in ("ranking", "threshold"):
            raise ValueError(f"--loss must be 'ranking' or 'threshold', got {self.loss!r}.")
        if self.val_size < 0 or self.test_size < 0 or self.threshold < 0:
            raise ValueError("--val-size, --test-size and --threshold must be >= 0.")
        if (self.val_size == 0) != (self.test_size == 0):
            raise ValueError("--val-size and --test-size must both be 0 or both > 0.")


def _size(value):
    return int(value) if value >= 1 else float(value)


def train_wordnet(config, out_dir, hyperlex=None, entailment=None,
                  overwrite=False, verbose=1):
    """Trains a WordNet hierarchy embedding and writes the run to `out_dir`.

    Writes `model.keras`, `nodes.tsv` (the node vocabulary, one name a line
    in table order), `run.json` (see `keras_gauss.runs`) and `metrics.json` (test/val accuracy with the threshold
    chosen on validation, reconstruction mean rank and MAP, HyperLex and
    Baroni 2012 scores when their files are given, `train_seconds`, and the
    config). The directory appears only when everything is written.

    Args:
        config: a `WordNetConfig`.
        out_dir: the run directory.
        hyperlex: optional HyperLex nouns file.
        entailment: optional Baroni 2012 style entailment file.
        overwrite: replace an existing run in `out_dir`.
        verbose: Keras verbosity (1: a progress bar per epoch).

    Returns:
        The metrics dict.

    Example:

    >>> train_wordnet(WordNetConfig(root="mammal.n.01", dim=10, epochs=30,
    ...                             val_size=0, test_size=0), "runs/mammals")
    """
    import keras

    from keras_gauss.hierarchy import build_hierarchy
    from keras_gauss.hierarchy import evaluate
    from keras_gauss.hierarchy import make_dataset
    from keras_gauss.hierarchy import split_edges
    from keras_gauss.hierarchy.benchmark_data import read_entailment
    from keras_gauss.hierarchy.benchmark_data import read_hyperlex
    from keras_gauss.hierarchy.model import FusedKLTrainer
    from keras_gauss.hierarchy.model import build_kl_model
    from keras_gauss.io import atomic_directory
    from keras_gauss.io import check_output_dir
    from keras_gauss.losses import MaxMarginRanking
    from keras_gauss.losses import ThresholdedDivergence
    from keras_gauss.optimizers import SparseAdagrad
    from keras_gauss.runs import jsonable
    from keras_gauss.runs import write_run_info

    config.validate()
    check_output_dir(out_dir, overwrite)
    # Read the benchmark files first: a malformed one fails before training.
    if hyperlex is not None:
        read_hyperlex(hyperlex)
    if entailment is not None:
        read_entailment(entailment)

    keras.utils.set_random_seed(config.seed)
    hierarchy = build_hierarchy(config.root, include_lemmas=config.include_lemmas)
    if config.val_size:
        split = split_edges(hierarchy, val_size=_size(config.val_size),
                            test_size=_size(config.test_size), seed=config.seed)
        train_edges = split.train
    else:
        split, train_edges = None, hierarchy.edges
    k = config.negatives + int(config.reversed_negatives)
    dataset = make_dataset(train_edges, known=hierarchy, batch_size=config.batch_size,
                           negatives=config.negatives,
                           reversed_negatives=config.reversed_negatives, seed=config.seed)
    model = build_kl_model(
        hierarchy.num_nodes, config.dim, negatives=k, covariance=config.covariance,
        max_norm=config.max_norm, min_variance=config.min_variance,
        max_variance=config.max_variance,
        mean_initializer=keras.initializers.RandomUniform(-0.05, 0.05, seed=config.seed),
    )
    if config.loss == "ranking":
        loss = MaxMarginRanking(config.margin)
    else:
        loss = ThresholdedDivergence(config.threshold, config.margin)
    optimizer = SparseAdagrad(config.learning_rate)
    model.compile(optimizer=optimizer, loss=loss)
    # The ranking loss trains with the fused step (same update, one op a
    # step); the trainer shares `model`'s table and optimizer.
    trainer = model
    if config.loss == "ranking":
        trainer = FusedKLTrainer(model, margin=config.margin)
        trainer.compile(optimizer=optimizer)
    if verbose:
        print(f"{hierarchy.num_nodes:,} nodes, {len(train_edges):,} training edges, "
              f"{config.dim}-d {config.covariance}, {config.epochs} epochs")
    start = time.perf_counter()
    history = trainer.fit(dataset, epochs=config.epochs, verbose=verbose, shuffle=False)
    train_seconds = time.perf_counter() - start

    table = model.get_layer("nodes")
    means = table.means.numpy()
    variances = np.broadcast_to(table.variances.numpy(), means.shape)
    metrics = {"train_seconds": train_seconds,
               "seconds_per_epoch": train_seconds / config.epochs,
               "final_loss": float(history.history["loss"][-1]),
               "num_nodes": hierarchy.num_nodes,
               "num_train_edges": int(len(train_edges))}
    if split is not None:
        result = evaluate.classification(split.val, split.val_neg, split.test,
                                         split.test_neg, means, variances)
        metrics.update({key: result[key] for key in
                        ("test_accuracy", "val_accuracy", "threshold")})
    recon = evaluate.reconstruction(hierarchy, means, variances,
                                    max_nodes=config.reconstruction_nodes, seed=config.seed)
    metrics.update({"mean_rank": recon["mean_rank"], "map": recon["map"],
                    "reconstruction_queries": recon["num_queries"]})
    if hyperlex is not None:
        result = evaluate.hyperlex_spearman(hyperlex, hierarchy, means, variances)
        metrics.update({"hyperlex_spearman": result["spearman"],
                        "hyperlex_coverage": result["coverage"]})
    if entailment is not None:
        result = evaluate.baroni2012(entailment, hierarchy, means, variances)
        metrics.update({"baroni2012_ap": result["ap"],
                        "baroni2012_best_f1": result["best_f1"],
                        "baroni2012_coverage": result["coverage"]})
    metrics["config"] = dataclasses.asdict(config)
    metrics = jsonable(metrics)

    with atomic_directory(out_dir, overwrite) as tmp:
        model.save(tmp / "model.keras")
        (tmp / "nodes.tsv").write_text("\n".join(hierarchy.nodes) + "\n")
        (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        write_run_info(tmp, kind="wordnet", energy="kl", table="nodes",
                       vocabulary="nodes.tsv", root=config.root)
    return metrics
