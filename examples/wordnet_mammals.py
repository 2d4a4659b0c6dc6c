"""The WordNet mammal subtree embedded as 2-d Gaussians, drawn as ellipses.

    python examples/wordnet_mammals.py [--out runs/mammals-2d] [--figure docs/wordnet_mammals.png]

Embeds the 1,182 synsets below mammal.n.01 as 2-d spherical Gaussians with
KL energy and the objective of `keras-gauss demo`: the direct hypernym
links as positives (threshold-0 divergence loss, here margin 2), negatives
that are neither ancestors nor descendants plus each reversed link, Adam
with a cosine-decayed rate, 6,000 steps of 256 links (under a minute).

The KL objective nests children in their parents but says nothing about
where siblings go: started from one point, siblings stay concentric and the
picture shows rings, not a tree. So the embedding starts from the tree
(`tree_start`): variances nested, each child's a share of its parent's
that grows with its subtree (at most 0.3, at least 0.01), and means spread
on a ring inside the parent; training then moves both. Draws two panels
(mammal's largest subtrees; inside carnivore) as ellipses holding 90% of
each Gaussian, darker for deeper synsets, and prints how many direct links
are nested over the whole subtree (at the start and after training) and how
many drawn is-a pairs are. Writes a run directory (`load_run` reads it) and
`mammals.png`; `--figure` copies the figure (docs/).
"""

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np

FAMILIAR = ["placental.n.01", "carnivore.n.01", "canine.n.02", "dog.n.01",
            "wolf.n.01", "feline.n.01", "cat.n.01", "big_cat.n.01", "lion.n.01",
            "ungulate.n.01", "horse.n.01", "primate.n.02", "monkey.n.01",
            "rodent.n.01", "rat.n.01", "whale.n.02", "bat.n.01"]
MASS = 0.9


def tree_start(hierarchy, max_variance=1e5, min_variance=1e-3, share=0.5,
               ratio=(0.01, 0.3), spread=0.6):
    """Starting means and variances laid out from the tree.

    Each node keeps one parent (its deepest); the root gets `max_variance`,
    each child `share * size(child) / size(children)` of its parent's
    variance, clipped to `ratio`, with `size` the number of synsets in a
    subtree. Children sit on a ring around their parent's mean, at `spread`
    of the room left inside the parent's ellipse (at `MASS`), in angles
    proportional to `sqrt(size)`, big and small ones alternating.

    Returns:
        `(means, variances)`, `(n, 2)` and `(n,)` float64.
    """
    from keras_gauss.plot import mass_radius

    n = hierarchy.num_nodes
    depth = hierarchy.index.num_ancestors
    parent = np.full(n, -1)
    for child, par in hierarchy.basic_edges:
        if parent[child] < 0 or depth[par] > depth[parent[child]]:
            parent[child] = par
    children = [[] for _ in range(n)]
    for child in range(n):
        if parent[child] >= 0:
            children[parent[child]].append(child)
    size = np.array([len(hierarchy.index.descendants(i)) + 1 for i in range(n)], float)
    radius = mass_radius(MASS)
    means, variances = np.zeros((n, 2)), np.zeros(n)
    roots = [int(i) for i in np.flatnonzero(parent < 0)]
    variances[roots] = max_variance
    todo = list(roots)
    for node in todo:
        kids = sorted(children[node], key=lambda k: -size[k])
        if not kids:
            continue
        kids = [kids[i // 2] if i % 2 == 0 else kids[-(i // 2) - 1] for i in range(len(kids))]
        variances[kids] = variances[node] * np.clip(share * size[kids] / size[kids].sum(), *ratio)
        weight = np.sqrt(size[kids])
        angle = 2 * np.pi * (np.cumsum(weight) - weight / 2) / weight.sum()
        room = radius * (np.sqrt(variances[node]) - np.sqrt(variances[kids]))
        distance = spread * room if len(kids) > 1 else 0.0 * room
        means[kids] = means[node] + (distance * np.stack([np.cos(angle), np.sin(angle)])).T
        todo += kids
    return means, np.clip(variances, min_variance, max_variance)


def train(out, steps=6000, seed=0, learning_rate=0.1, min_variance=1e-3, max_variance=1e5,
          margin=2.0, batch_size=256, from_tree=True):
    """Trains the 2-d embedding; writes the run to `out`; returns
    `(hierarchy, means, variances, start)` with `start` the starting
    `(means, variances)`."""
    import keras

    from keras_gauss.hierarchy import build_hierarchy
    from keras_gauss.hierarchy.dataset import make_dataset
    from keras_gauss.hierarchy.model import build_kl_model
    from keras_gauss.losses import ThresholdedDivergence
    from keras_gauss.run_format import write_run_info

    keras.utils.set_random_seed(seed)
    hierarchy = build_hierarchy("mammal.n.01")
    negatives = 5
    dataset = make_dataset(hierarchy.basic_edges, known=hierarchy, batch_size=batch_size,
                           negatives=negatives, reversed_negatives=True, seed=seed)
    model = build_kl_model(hierarchy.num_nodes, dim=2, negatives=negatives + 1,
                           covariance="spherical", max_norm=None,
                           min_variance=min_variance, max_variance=max_variance)
    table = model.get_layer("nodes")
    if from_tree:
        start_means, start_vars = tree_start(hierarchy, max_variance, min_variance)
    else:  # one point, variances nested by depth (0.3 a level)
        start_means = np.zeros((hierarchy.num_nodes, 2))
        start_vars = np.clip(max_variance * 0.3 ** hierarchy.index.num_ancestors,
                             min_variance, max_variance)
    table.means.assign(start_means.astype("float32"))
    table.variances.assign(start_vars[:, None].astype("float32"))
    schedule = keras.optimizers.schedules.CosineDecay(learning_rate, steps, alpha=0.01)
    model.compile(optimizer=keras.optimizers.Adam(schedule),
                  loss=ThresholdedDivergence(threshold=0.0, margin=margin),
                  steps_per_execution=50)
    start = time.perf_counter()
    model.fit(dataset.repeat(), epochs=1, steps_per_epoch=steps, shuffle=False, verbose=0)
    seconds = time.perf_counter() - start
    means = table.means.numpy()
    variances = np.broadcast_to(table.variances.numpy(), means.shape)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.keras")
    (out / "nodes.tsv").write_text("\n".join(hierarchy.nodes) + "\n")
    (out / "metrics.json").write_text(json.dumps({"train_seconds": seconds, "steps": steps}) + "\n")
    write_run_info(out, kind="hierarchy", energy="kl", table="nodes", vocabulary="nodes.tsv",
                   root="mammal.n.01")
    return hierarchy, means, variances, (start_means, start_vars)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/mammals-2d")
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--figure", default=None, help="also copy the figure here")
    parser.add_argument("--from-origin", action="store_true",
                        help="start all means at one point (variances nested by depth)")
    args = parser.parse_args()
    if args.steps < 50 or args.steps % 50:
        parser.error(f"--steps must be a positive multiple of 50 (the steps of one compiled "
                     f"call), got {args.steps}")

    from keras_gauss.hierarchy.synthetic import containment

    hierarchy, means, variances, (start_means, start_vars) = train(
        args.out, args.steps, from_tree=not args.from_origin)
    before = containment(hierarchy, start_means, start_vars[:, None], MASS).mean()
    inside = containment(hierarchy, means, variances, MASS).mean()
    moved = np.linalg.norm(means - start_means, axis=1) / np.sqrt(start_vars)
    print(f"direct links nested at {MASS:.0%} mass over the whole subtree: {inside:.1%} "
          f"(at the start: {before:.1%}; means moved a median {np.median(moved):.2f} of their "
          f"starting standard deviations)")
    draw(hierarchy, means, variances, args.out, args.figure)


PANELS = {
    "mammal.n.01 and its largest subtrees": [
        "mammal.n.01", "placental.n.01", "carnivore.n.01", "ungulate.n.01",
        "primate.n.02", "rodent.n.01", "aquatic_mammal.n.01", "bat.n.01"],
    "inside carnivore.n.01": [
        "carnivore.n.01", "feline.n.01", "cat.n.01", "big_cat.n.01", "lion.n.01",
        "canine.n.02", "dog.n.01", "wolf.n.01"],
}


def draw(hierarchy, means, variances, out, copy_to=None):
    """Draws two panels (the top levels, inside carnivore); prints and returns
    the share of drawn is-a pairs whose child ellipse lies inside the parent's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from keras_gauss.hierarchy.synthetic import containment
    from keras_gauss.plot import plot_gaussians

    figure, axes = plt.subplots(1, 2, figsize=(12, 6.2))
    all_pairs, all_inside = [], []
    for ax, (title, names) in zip(axes, PANELS.items()):
        names = [n for n in names if n in hierarchy.nodes]
        ids = hierarchy.ids(names)
        drawn = set(ids.tolist())
        pairs = np.array([(c, p) for c, p in hierarchy.edges if c in drawn and p in drawn])
        inside = containment(hierarchy, means, variances, MASS, pairs)
        all_pairs += [tuple(pair) for pair in pairs]
        all_inside += inside.tolist()
        depth = hierarchy.index.num_ancestors[ids]
        colors = plt.cm.viridis(0.85 - 0.75 * (depth - depth.min()) / max(np.ptp(depth), 1))
        plot_gaussians(means[ids], variances[ids], [n.split(".")[0] for n in names], ax=ax,
                       colors=colors, mass=MASS, label_position="top",
                       title=f"{title}: {inside.sum()} of {len(inside)} is-a pairs nested")
    figure.suptitle(f"WordNet mammals (1,182 synsets) embedded in 2-d with KL; "
                    f"ellipses hold {MASS:.0%} of each Gaussian")
    path = Path(out) / "mammals.png"
    figure.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(figure)
    if copy_to:
        shutil.copyfile(path, copy_to)
    all_inside = np.array(all_inside)
    outside = [f"{hierarchy.nodes[c]} in {hierarchy.nodes[p]}"
               for (c, p), ok in zip(all_pairs, all_inside) if not ok]
    print(f"{all_inside.sum()}/{len(all_inside)} drawn is-a pairs nested at {MASS:.0%} mass"
          + (f"; not nested: {', '.join(outside)}" if outside else "") + f"; figure: {path}")
    return all_inside.mean()


if __name__ == "__main__":
    main()
