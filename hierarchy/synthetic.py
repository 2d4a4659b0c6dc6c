"""The paper's synthetic experiment (Figure 3): two small trees in 2-d."""

import json
import time

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


def train_synthetic(out_dir, epochs=20, steps_per_epoch=200, seed=0, verbose=1,
                    overwrite=False):
    """Embeds the synthetic trees as 2-d diagonal Gaussians with KL.

    A shared table, KL energy, the max-margin ranking loss and negatives
    that are neither ancestors nor descendants (the paper's Section 5.3),
    trained with `SparseAdagrad`. Writes `model.keras`, `nodes.tsv`,
    `run.json`, `metrics.json` and the figure `synthetic_hierarchy.png` to
    `out_dir` (atomically, see `keras_gauss.io.atomic_directory`).

    Args:
        out_dir: output directory (created).
        epochs: Keras epochs (each one a progress bar).
        steps_per_epoch: minibatch steps per epoch (8 edges a step; fresh
            negatives every pass over the edges).
        seed: random seed.
        verbose: Keras verbosity (0 silent, 1 progress bar).
        overwrite: replace an earlier run in `out_dir`.

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

    from keras_gauss.io import atomic_directory, check_output_dir
    from keras_gauss.runs import write_run_info

    out_dir = check_output_dir(out_dir, overwrite)
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
    history = model.fit(dataset.repeat(), epochs=epochs,
                        steps_per_epoch=steps_per_epoch, verbose=verbose, shuffle=False)
    seconds = time.perf_counter() - start

    table = model.get_layer("nodes")
    means, variances = table.means.numpy(), table.variances.numpy()
    spec, gen = hierarchy.edges[:, 0], hierarchy.edges[:, 1]
    forward = gauss_ops.kl_energy(means[gen], variances[gen], means[spec], variances[spec])
    backward = gauss_ops.kl_energy(means[spec], variances[spec], means[gen], variances[gen])
    accuracy = float(np.mean(np.asarray(forward) > np.asarray(backward)))

    ax = plot_gaussians(means, variances, hierarchy.nodes, colors=_tree_colors(hierarchy),
                        title="Two hierarchies embedded with KL (2-d, diagonal)")
    metrics = {
        "final_loss": float(history.history["loss"][-1]),
        "edge_accuracy": accuracy,
        "train_seconds": seconds,
        "epochs": epochs,
        "seed": seed,
    }
    with atomic_directory(out_dir, overwrite) as tmp:
        ax.figure.savefig(tmp / "synthetic_hierarchy.png", dpi=120, bbox_inches="tight")
        model.save(tmp / "model.keras")
        (tmp / "nodes.tsv").write_text("\n".join(hierarchy.nodes) + "\n")
        (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        write_run_info(tmp, kind="synthetic", energy="kl", table="nodes",
                       vocabulary="nodes.tsv")
    return metrics
