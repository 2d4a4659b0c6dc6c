"""The paper's Figure 3: two small trees embedded as 2-d Gaussians with KL.

    python examples/synthetic_hierarchy.py [--out runs/synthetic] [--figure docs/synthetic_hierarchy.png]

Trains a shared table of 2-d spherical Gaussians on two small trees
(animal, artifact) with KL energy (see `train_synthetic` for the settings)
and writes `synthetic_hierarchy.png`: each node is the ellipse holding 90%
of its Gaussian, broad ones first, so nesting in the picture is nesting of
the distributions' bulk. Parents contain their children; the two trees
separate; siblings lie side by side. Same as `keras-gauss demo`; prints the
share of children drawn inside their parents.
"""

import argparse
import shutil

from keras_gauss.hierarchy.synthetic import train_synthetic

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/synthetic")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--figure", default=None, help="also copy the figure here")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    metrics = train_synthetic(args.out, epochs=args.epochs, seed=args.seed)
    if args.figure:
        shutil.copyfile(f"{args.out}/synthetic_hierarchy.png", args.figure)
    print(f"edge accuracy {metrics['edge_accuracy']:.3f}; children inside their parents: "
          f"{metrics['containment']:.0%} (closure pairs {metrics['closure_containment']:.0%}); "
          f"figure: {args.out}/synthetic_hierarchy.png")
