"""The WordNet mammal subtree embedded as 2-d Gaussians, drawn as ellipses.

    python examples/wordnet_mammals.py [--out runs/mammals-2d] [--steps 3000]

Embeds the 1,182 synsets below mammal.n.01 as 2-d spherical Gaussians with
KL energy, the settings of `keras-gauss demo`: the direct hypernym links as
positives (threshold-0 divergence loss, margin 5), negatives that are
neither ancestors nor descendants plus each reversed link, Adam. Draws a
readable selection (mammal.n.01, some of its large subtrees and familiar
species) as ellipses holding 90% of each Gaussian, coloured by depth
(darker is deeper), and prints how many drawn child ellipses lie inside
their drawn ancestors'. Writes a run directory (`load_run` reads it) and
`mammals.png`; `--figure` copies the figure elsewhere (docs/).
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


def train(out, steps, seed=0):
    """Trains the 2-d embedding; writes the run to `out`; returns (hierarchy, means, variances)."""
    import keras

    from keras_gauss.hierarchy import build_hierarchy
    from keras_gauss.hierarchy.dataset import make_dataset
    from keras_gauss.hierarchy.model import build_kl_model
    from keras_gauss.losses import ThresholdedDivergence
    from keras_gauss.runs import write_run_info

    keras.utils.set_random_seed(seed)
    hierarchy = build_hierarchy("mammal.n.01")
    negatives = 5
    dataset = make_dataset(hierarchy.basic_edges, known=hierarchy, batch_size=256,
                           negatives=negatives, reversed_negatives=True, seed=seed)
    model = build_kl_model(hierarchy.num_nodes, dim=2, negatives=negatives + 1,
                           covariance="spherical", max_norm=20.0, min_variance=1e-4,
                           max_variance=50.0,
                           mean_initializer=keras.initializers.RandomNormal(stddev=3.0, seed=seed))
    model.compile(optimizer=keras.optimizers.Adam(0.05),
                  loss=ThresholdedDivergence(threshold=0.0, margin=5.0),
                  steps_per_execution=50)
    start = time.perf_counter()
    model.fit(dataset.repeat(), epochs=steps // 500, steps_per_epoch=500, verbose=2)
    seconds = time.perf_counter() - start
    table = model.get_layer("nodes")
    means = table.means.numpy()
    variances = np.broadcast_to(table.variances.numpy(), means.shape)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.keras")
    (out / "nodes.tsv").write_text("\n".join(hierarchy.nodes) + "\n")
    (out / "metrics.json").write_text(json.dumps({"train_seconds": seconds, "steps": steps}) + "\n")
    write_run_info(out, kind="hierarchy", energy="kl", table="nodes", vocabulary="nodes.tsv",
                   root="mammal.n.01")
    return hierarchy, means, variances


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/mammals-2d")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--figure", default=None, help="also copy the figure here")
    args = parser.parse_args()

    from keras_gauss.hierarchy.synthetic import containment
    from keras_gauss.plot import plot_gaussians

    hierarchy, means, variances = train(args.out, args.steps)
    names = ["mammal.n.01", *[n for n in FAMILIAR if n in hierarchy.nodes]]
    ids = hierarchy.ids(names)
    drawn = set(ids.tolist())
    pairs = np.array([(c, p) for c, p in hierarchy.edges if c in drawn and p in drawn])
    inside = containment(hierarchy, means, variances, MASS, pairs)
    depth = hierarchy.index.num_ancestors[ids]
    colors = [(0.2, 0.3 + 0.5 * (1 - d / max(depth.max(), 1)), 0.6) for d in depth]
    labels = [name.split(".")[0] for name in names]
    ax = plot_gaussians(means[ids], variances[ids], labels, colors=colors, mass=MASS,
                        label_position="top",
                        title=f"WordNet mammals in 2-d (KL; ellipses hold {MASS:.0%})\n"
                              f"{inside.sum()} of {len(inside)} drawn is-a pairs nested")
    figure = Path(args.out) / "mammals.png"
    ax.figure.savefig(figure, dpi=100, bbox_inches="tight")
    if args.figure:
        shutil.copyfile(figure, args.figure)
    outside = [f"{hierarchy.nodes[c]} in {hierarchy.nodes[p]}"
               for (c, p), ok in zip(pairs, inside) if not ok]
    print(f"{inside.sum()}/{len(inside)} drawn is-a pairs nested at {MASS:.0%} mass"
          + (f"; not nested: {', '.join(outside)}" if outside else "") + f"; figure: {figure}")


if __name__ == "__main__":
    main()
