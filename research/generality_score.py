"""Post-hoc scores of a trained `train-wordnet` run with a generality term.

score(x is-a y) = -KL(N_x || N_y) + beta * (log det Sigma_y - log det Sigma_x):
the KL energy plus a bonus when y is broader than x (the term changes sign
for the reversed pair, so it adds direction). Nothing is retrained.

- `--split`: accuracy of each kind of negatives (random / reversed / sibling)
  on the run's validation split for each beta (the split is rebuilt from the
  run's seed and method); `--test` also prints the test split (read it once,
  for the beta you report).
- `--hyperlex FILE`: HyperLex nouns Spearman (best synset pair); beta is
  chosen on a random half of the pairs (seed 0) and reported on the other half.

Example:
    python research/generality_score.py RUN_DIR --betas 0,0.05,0.1 --split
    python research/generality_score.py RUN_DIR --hyperlex ../shared/data/hyperlex/hyperlex-nouns.txt
"""

import argparse
import json

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--betas", default="0,0.02,0.05,0.1,0.2,0.5")
    parser.add_argument("--split", action="store_true")
    parser.add_argument("--test", action="store_true")
    parser.add_argument("--hyperlex")
    args = parser.parse_args()

    from scipy.stats import spearmanr

    from keras_gauss import load_run
    from keras_gauss.hierarchy import build_hierarchy, split_edges
    from keras_gauss.hierarchy.benchmark_data import read_hyperlex
    from keras_gauss.hierarchy.evaluate import edge_scores, split_classification, word_pair_scores

    config = json.load(open(f"{args.run}/metrics.json"))["config"]
    run = load_run(args.run)
    means = np.asarray(run.means, np.float64)
    variances = np.asarray(run.variances, np.float64)
    betas = [float(b) for b in args.betas.split(",")]
    hierarchy = build_hierarchy(config["root"], pos=config["pos"])
    kinds = ("random", "reversed", "sibling")
    if args.split:
        parts = split_edges(hierarchy, seed=config["seed"], method=config["split"]).parts()
        for beta in betas:
            def score(pairs, beta=beta):
                return edge_scores(means, variances, pairs, generality=beta)
            result = split_classification(parts, score)
            line = f"beta {beta}: val " + " / ".join(f"{result[k]['val_accuracy']:.3f}" for k in kinds)
            if args.test:
                line += "  test " + " / ".join(f"{result[k]['test_accuracy']:.3f}" for k in kinds)
            print(line)
    if args.hyperlex:
        rows = read_hyperlex(args.hyperlex)
        gold = np.array([row[2] for row in rows])
        words = [(a, b) for a, b, _ in rows]
        covered = word_pair_scores(words, hierarchy, means, variances).covered

        def scores(beta):  # best synset pair, NaN where a word is not covered
            return word_pair_scores(words, hierarchy, means, variances, generality=beta).scores

        half = np.random.default_rng(0).permutation(len(rows)) < len(rows) // 2
        chosen = {}
        for beta in betas:
            rho = spearmanr(scores(beta)[covered & half], gold[covered & half])[0]
            chosen[beta] = rho
            print(f"HyperLex beta {beta}: choosing half {rho:.3f}")
        best = max(chosen, key=chosen.get)
        other = covered & ~half
        print(f"HyperLex: beta {best} chosen on one half; other half {spearmanr(scores(best)[other], gold[other])[0]:.3f} "
              f"(beta 0: {spearmanr(scores(0.0)[other], gold[other])[0]:.3f}; all pairs, beta 0: "
              f"{spearmanr(scores(0.0)[covered], gold[covered])[0]:.3f})")


if __name__ == "__main__":
    main()
