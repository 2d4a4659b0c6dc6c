"""The paper's synthetic experiment (Figure 3): two small trees in 2-d."""

import json
import time

import numpy as np

from keras_gauss import energies
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


def synthetic_tables():
    """`synthetic_hierarchy()` with the tables of the word-level examples:
    every node a 2-d unit Gaussian at the origin but `animal`, of variance 4
    (so `dog` lies inside `animal`, not the reverse).

    Returns:
        `(hierarchy, means, variances)`, the tables float64 `(20, 2)`.

    Example:

    >>> h, means, variances = synthetic_tables()
    >>> variances[h.nodes.index("animal")], variances[h.nodes.index("dog")]
    (array([4., 4.]), array([1., 1.]))
    """
    hierarchy = synthetic_hierarchy()
    means, variances = np.zeros((hierarchy.num_nodes, 2)), np.ones((hierarchy.num_nodes, 2))
    variances[hierarchy.nodes.index("animal")] = 4.0
    return hierarchy, means, variances


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


def containment(hierarchy, means, variances, mass, edges=None):
    """Which child Gaussians' ellipses lie inside their parents' in the figure.

    Args:
        hierarchy: the `Hierarchy`.
        means: `(n, 2)` means.
        variances: `(n, 2)` or `(n, 1)` variances.
        mass: the probability mass of the drawn ellipses.
        edges: `(specific, general)` pairs to check (default: the direct
            parent links, `hierarchy.basic_edges`).

    Returns:
        A bool array, one entry a pair.
    """
    from keras_gauss.plot import ellipse_inside, mass_radius

    edges = hierarchy.basic_edges if edges is None else edges
    variances = np.broadcast_to(variances, np.shape(means))
    radius = mass_radius(mass)
    return np.array([ellipse_inside(means[c], variances[c], means[p], variances[p], radius)
                     for c, p in edges], dtype=bool)


PLOT_MASS = 0.9
"""Probability mass inside each drawn ellipse of the demo figure."""


def train_synthetic(out_dir, epochs=10, steps_per_epoch=50, seed=0, verbose=1,
                    overwrite=False):
    """Embeds the synthetic trees as 2-d spherical Gaussians with KL.

    A shared table, KL energy and density order embeddings' thresholded
    divergence (threshold 0, margin 5): every direct parent link
    `(child, parent)` pays `KL(N_child || N_parent)` and every negative pays
    until its divergence exceeds the margin. Negatives are nodes that are
    neither ancestors nor descendants (the paper's Section 5.3) and each
    reversed link. Positives are the direct links: the closure's longer
    links would pull leaves towards their grandparents' centre and size,
    out of their parents. Trained with Adam, all 18 links a step. Writes
    `model.keras`, `nodes.tsv`, `run.json` (kind `"hierarchy"`, so
    `load_run`, `neighbors` and `export` take the directory),
    `metrics.json`, the training curves `history.csv` and `history.png`
    (`keras_gauss.history`, what `keras-gauss plot` reads) and the figure `synthetic_hierarchy.png` (ellipses
    holding `PLOT_MASS` of each Gaussian) to `out_dir`, atomically
    (`keras_gauss.io.atomic_directory`).

    Args:
        out_dir: output directory (created).
        epochs: Keras epochs.
        steps_per_epoch: minibatch steps per epoch (fresh negatives every
            step).
        seed: random seed.
        verbose: 0 silent; 1 a progress bar on a terminal, else one line
            per epoch (`keras_gauss.callbacks.ProgressLogger`); 2 lines.
        overwrite: replace an earlier run in `out_dir`.

    Returns:
        The metrics dict: `final_loss`, `edge_accuracy` (the fraction of
        closure edges `(specific, general)` whose energy beats their
        reversal), `containment` (the fraction of direct links whose
        child's ellipse lies inside its parent's in the figure),
        `closure_containment` (the same over all closure edges),
        `threshold` (the energy threshold separating closure edges from
        unrelated pairs best, chosen on these training pairs: the demo
        holds none out), `train_seconds`.
    """
    import keras

    from keras_gauss import ops as gauss_ops
    from keras_gauss.hierarchy.dataset import make_dataset
    from keras_gauss.hierarchy.evaluate import threshold_classification
    from keras_gauss.hierarchy.model import build_kl_model
    from keras_gauss.losses import ThresholdedDivergence
    from keras_gauss.history import write_history
    from keras_gauss.plot import plot_gaussians
    from keras_gauss.run_format import write_run_info

    from keras_gauss.io import atomic_directory, check_output_dir

    out_dir = check_output_dir(out_dir, overwrite)
    keras.utils.set_random_seed(seed)
    hierarchy = synthetic_hierarchy()
    negatives = 5
    dataset = make_dataset(hierarchy.basic_edges, known=hierarchy,
                           batch_size=len(hierarchy.basic_edges), negatives=negatives,
                           reversed_negatives=True, seed=seed)
    model = build_kl_model(
        hierarchy.num_nodes, dim=2, negatives=negatives + 1, covariance="spherical",
        max_norm=6.0, min_variance=0.02, max_variance=20.0,
        mean_initializer=keras.initializers.RandomNormal(stddev=1.0, seed=seed),
    )
    model.compile(optimizer=keras.optimizers.Adam(0.05),
                  loss=ThresholdedDivergence(threshold=0.0, margin=5.0),
                  steps_per_execution=min(25, steps_per_epoch))
    start = time.perf_counter()
    from keras_gauss.callbacks import ProgressLogger

    progress = ProgressLogger.from_verbose(verbose, unit="edges", batch_size=len(hierarchy.basic_edges))
    history = model.fit(dataset.repeat(), epochs=epochs, steps_per_epoch=steps_per_epoch,
                        verbose=0, shuffle=False, callbacks=[progress])
    seconds = time.perf_counter() - start

    table = model.get_layer("nodes")
    means = table.means.numpy()
    variances = np.broadcast_to(table.variances.numpy(), means.shape)
    spec, gen = hierarchy.edges[:, 0], hierarchy.edges[:, 1]
    forward = np.asarray(gauss_ops.kl_energy(means[gen], variances[gen], means[spec], variances[spec]))
    backward = np.asarray(gauss_ops.kl_energy(means[spec], variances[spec], means[gen], variances[gen]))
    accuracy = float(np.mean(forward > backward))
    related = np.eye(hierarchy.num_nodes, dtype=bool)
    related[spec, gen] = related[gen, spec] = True
    a, b = np.nonzero(~related)
    unrelated = np.asarray(gauss_ops.kl_energy(means[b], variances[b], means[a], variances[a]))
    threshold = threshold_classification(forward, unrelated, forward, unrelated)

    ax = plot_gaussians(means, variances, hierarchy.nodes, colors=_tree_colors(hierarchy),
                        mass=PLOT_MASS, label_position="top",
                        title="Two hierarchies embedded with KL (2-d, spherical)\n"
                              f"ellipses hold {PLOT_MASS:.0%} of each Gaussian")
    metrics = {
        "final_loss": float(history.history["loss"][-1]),
        "edge_accuracy": accuracy,
        "containment": float(containment(hierarchy, means, variances, PLOT_MASS).mean()),
        "closure_containment": float(containment(hierarchy, means, variances, PLOT_MASS,
                                                 hierarchy.edges).mean()),
        "plot_mass": PLOT_MASS,
        "threshold": threshold["threshold"],
        "threshold_accuracy": threshold["val_accuracy"],
        "threshold_source": "training pairs (the demo holds no edges out)",
        "train_seconds": seconds,
        "epochs": epochs,
        "seed": seed,
    }
    import matplotlib.pyplot as plt

    with atomic_directory(out_dir, overwrite) as tmp:
        ax.figure.savefig(tmp / "synthetic_hierarchy.png", dpi=100, bbox_inches="tight")
        model.save(tmp / "model.keras")
        (tmp / "nodes.tsv").write_text("\n".join(hierarchy.nodes) + "\n", encoding="utf-8")
        (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        write_history(tmp, {"loss": history.history["loss"]})
        write_run_info(tmp, kind="hierarchy", energy=energies.KL.name, table="nodes",
                       vocabulary="nodes.tsv")
    plt.close(ax.figure)
    return metrics
