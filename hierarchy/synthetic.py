"""The paper's synthetic experiment (Figure 3): two small trees in 2-d."""

import json
import time
from pathlib import Path

import numpy as np

from keras_gauss.hierarchy.closure import hierarchy_from_parents

# Two small trees, each node mapped to its parent. Leaves share a parent in
# groups, as in the paper's figure, so the picture shows nesting and siblings.
SYNTHETIC_PARENTS = {
    "mammal": ["animal"], "bird": ["animal"], "fish": ["animal"],
    "dog": ["mammal"], "cat": ["mammal"], "horse": ["mammal"],
    "eagle": ["bird"], "robin": ["bird"], "penguin": ["bird"],
    "salmon": ["fish"], "shark": ["fish"],
    "vehicle": ["artifact"], "tool": ["artifact"],
    "car": ["vehicle"], "bike": ["vehicle"], "boat": ["vehicle"],
    "hammer": ["tool"], "saw": ["tool"],
}


def synthetic_hierarchy():
    """The two trees (`animal` and `artifact`) as a `Hierarchy`.

    Returns:
        A `keras_gauss.hierarchy.closure.Hierarchy` with 20 nodes and the transitive
        closure of the parent links.

    Example:

    >>> h = synthetic_hierarchy()
    >>> h.num_nodes, len(h.edges)
    (20, 31)
    """
    return hierarchy_from_parents(SYNTHETIC_PARENTS)


def _tree_colors(hierarchy):
    """One colour family per tree, darker for deeper nodes."""
    import matplotlib

    roots = {"animal": matplotlib.colormaps["Oranges"],
             "artifact": matplotlib.colormaps["Blues"]}
    colors = []
    for node in hierarchy.nodes:
        ancestors = [hierarchy.nodes[a] for a in hierarchy.index.ancestors(hierarchy.ids([node])[0])]
        root = node if node in roots else next(a for a in ancestors if a in roots)
        colors.append(roots[root](0.45 + 0.25 * len(ancestors)))
    return colors


def train_synthetic(out_dir, epochs=20, steps_per_epoch=200, seed=0, verbose=1):
    """Embeds the synthetic trees as 2-d diagonal Gaussians with KL.

    A shared table, KL energy, the max-margin ranking loss and negatives
    that are neither ancestors nor descendants (the paper's Section 5.3),
    trained with `SparseAdagrad`. Writes `model.keras`, `nodes.tsv`,
    `metrics.json`, `run.json` (a run `keras_gauss.runs.load_run` reads) and the figure `synthetic_hierarchy.png` to `out_dir`.

    Args:
        out_dir: output directory (created).
        epochs: Keras epochs (each one a progress bar).
        steps_per_epoch: minibatch steps per epoch (8 edges a step; fresh
            negatives every pass over the edges).
        seed: random seed.
        verbose: 0 silent; 1 a progress bar on a terminal, else one line
            per epoch (`keras_gauss.callbacks.ProgressLogger`); 2 lines.

    Returns:
        The metrics dict: `final_loss`, `edge_accuracy` (the fraction of
        closure edges `(specific, general)` whose energy beats their
        reversal), `train_seconds`.
    """
    import keras

    from keras_gauss.hierarchy.dataset import make_dataset
    from keras_gauss.hierarchy.model import build_kl_model
    from keras_gauss import ops as gauss_ops
    from keras_gauss.losses import ThresholdedDivergence
    from keras_gauss.optimizers import SparseAdagrad
    from keras_gauss.plot import plot_gaussians

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(seed)
    hierarchy = synthetic_hierarchy()
    negatives = 4
    dataset = make_dataset(hierarchy, batch_size=8,
                           negatives=negatives, seed=seed)
    model = build_kl_model(
        hierarchy.num_nodes, dim=2, negatives=negatives, max_norm=6.0,
        min_variance=0.02, max_variance=20.0,
        mean_initializer=keras.initializers.RandomNormal(stddev=1.0, seed=seed),
    )
    model.compile(optimizer=SparseAdagrad(0.5), loss=ThresholdedDivergence(threshold=0.0, margin=5.0))
    start = time.perf_counter()
    from keras_gauss.callbacks import ProgressLogger

    progress = ProgressLogger.from_verbose(verbose, unit="edges", batch_size=8)
    history = model.fit(dataset.repeat(), epochs=epochs, steps_per_epoch=steps_per_epoch,
                        verbose=0, shuffle=False, callbacks=[progress])
    seconds = time.perf_counter() - start

    table = model.get_layer("nodes")
    means, variances = table.means.numpy(), table.variances.numpy()
    spec, gen = hierarchy.edges[:, 0], hierarchy.edges[:, 1]
    forward = gauss_ops.kl_energy(means[gen], variances[gen], means[spec], variances[spec])
    backward = gauss_ops.kl_energy(means[spec], variances[spec], means[gen], variances[gen])
    accuracy = float(np.mean(np.asarray(forward) > np.asarray(backward)))

    ax = plot_gaussians(means, variances, hierarchy.nodes, colors=_tree_colors(hierarchy),
                        title="Two hierarchies embedded with KL (2-d, diagonal)")
    ax.figure.savefig(out_dir / "synthetic_hierarchy.png", dpi=120, bbox_inches="tight")
    model.save(out_dir / "model.keras")
    (out_dir / "nodes.tsv").write_text("\n".join(hierarchy.nodes) + "\n")
    metrics = {
        "final_loss": float(history.history["loss"][-1]),
        "edge_accuracy": accuracy,
        "train_seconds": seconds,
        "epochs": epochs,
        "seed": seed,
    }
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    # run.json makes the demo a run that `export` and `neighbors` accept.
    from keras_gauss.runs import write_run_info

    write_run_info(out_dir, kind="wordnet", energy="kl", table="nodes",
                   vocabulary="nodes.tsv", source="synthetic")
    return metrics
