"""Validation figures of `train-wordnet` runs with word nodes (`--lemmas`),
for choosing their settings (`WORD_NODES`; `word_nodes.md`).

    python research/word_nodes.py RUN [RUN ...] [--generality 0 0.1 0.2]

For each run: validation accuracy against random, reversed and sibling
negatives with each generality weight (the tables rescored, nothing
retrained; no test edge is read), and the share of WordNet's direct
synset links (the transitive reduction) that the run scores backwards,
`score(parent, child) > score(child, parent)`: overall and where the child
has at least 20 descendants.
"""

import argparse
import json

from keras_gauss.hierarchy import evaluate
from keras_gauss.hierarchy.config import WordNetConfig
from keras_gauss.hierarchy.data import load_data
from keras_gauss.runs import load_run


def validation_by_generality(split, means, variances, energy, weights):
    """`{weight: (random, reversed, sibling)}` validation accuracy."""
    out = {}
    for weight in weights:
        model = evaluate.evaluate_split(split, means, variances, weight, energy)["model"]
        out[weight] = tuple(model[kind]["val_accuracy"] for kind in ("random", "reversed", "sibling"))
    return out


def backward_links(hierarchy, means, variances, many=20):
    """`(share of direct synset links scored backwards, the same where the
    child has >= many descendants)` by plain KL (`evaluate.edge_scores`)."""
    synsets = hierarchy.synsets_only
    child, parent = synsets.basic_edges[:, 0], synsets.basic_edges[:, 1]
    backward = (evaluate.edge_scores(means, variances, parent, child)
                > evaluate.edge_scores(means, variances, child, parent))
    big = synsets.index.num_descendants[child] >= many
    return float(backward.mean()), float(backward[big].mean())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--generality", type=float, nargs="+", default=[0.0, 0.1, 0.2])
    args = parser.parse_args()
    for path in args.runs:
        config = WordNetConfig(**json.load(open(f"{path}/metrics.json"))["config"])
        hierarchy, _, split, _ = load_data(config)
        means, variances = load_run(path).tables()
        print(f"{path}: threshold {config.threshold:g}, min variance {config.min_variance:g}, "
              f"{config.epochs} epochs")
        for weight, accs in validation_by_generality(split, means, variances, config.energy,
                                                     args.generality).items():
            print(f"  generality {weight:g}: validation random / reversed / sibling "
                  f"{' / '.join(f'{a:.4f}' for a in accs)} (sum {sum(accs):.4f})")
        print("  direct synset links scored backwards: %.4f (children with >= 20 "
              "descendants: %.4f)" % backward_links(hierarchy, means, variances))


if __name__ == "__main__":
    main()
