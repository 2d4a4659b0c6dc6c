"""The WordNet mammal subtree embedded as 2-d Gaussians, drawn as ellipses.

    python examples/wordnet_mammals.py [--out runs/mammals-2d] [--epochs 60]

Trains `keras-gauss train-wordnet --root mammal.n.01 --dim 2` on every edge of
the subtree's closure (1,182 synsets, 6,542 edges) and draws the ellipses of
a readable selection: mammal.n.01, its children with the most descendants,
and a few familiar species, coloured by depth (darker is deeper). A broad
node (placental, carnivore) should cover the narrower nodes below it.
"""

import argparse
from pathlib import Path

import numpy as np

from keras_gauss.hierarchy import build_hierarchy
from keras_gauss.hierarchy.train import WordNetConfig, train_wordnet
from keras_gauss.plot import plot_gaussians
from keras_gauss.runs import load_run

FAMILIAR = ["placental.n.01", "carnivore.n.01", "canine.n.02", "dog.n.01",
            "wolf.n.01", "feline.n.01", "cat.n.01", "big_cat.n.01", "lion.n.01",
            "ungulate.n.01", "horse.n.01", "primate.n.02", "monkey.n.01",
            "rodent.n.01", "rat.n.01", "whale.n.02", "bat.n.01"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/mammals-2d")
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args()

    config = WordNetConfig(root="mammal.n.01", dim=2, epochs=args.epochs, batch_size=64,
                           negatives=5, reversed_negatives=True, learning_rate=0.3,
                           max_norm=4.0, min_variance=0.01, max_variance=10.0,
                           val_size=0, test_size=0)
    metrics = train_wordnet(config, args.out, overwrite=args.overwrite)
    run = load_run(args.out)
    means, variances = run.tables()
    hierarchy = build_hierarchy("mammal.n.01")
    names = [n for n in FAMILIAR if n in run.index]
    ids = run.ids(["mammal.n.01", *names])
    depth = hierarchy.index.num_ancestors[ids]
    colors = [(0.2, 0.3 + 0.5 * (1 - d / max(depth.max(), 1)), 0.6) for d in depth]
    labels = [run.words[i].split(".")[0] for i in ids]
    ax = plot_gaussians(means[ids], variances[ids], labels, colors=colors,
                        title=f"WordNet mammals in 2-d (MAP {metrics['map']:.2f} over all nodes)")
    figure = Path(args.out) / "mammals.png"
    ax.figure.savefig(figure, dpi=120, bbox_inches="tight")
    print(f"reconstruction MAP {metrics['map']:.3f}, mean rank {metrics['mean_rank']:.2f}; "
          f"figure: {figure}")
    return np.asarray(ids)


if __name__ == "__main__":
    main()
