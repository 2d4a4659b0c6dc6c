"""Post-hoc combined scores of trained `train-wordnet` runs, chosen on validation only.

Every score is `-KL(c || p)` plus at most two more terms with their own
coefficients (beta, gamma), computed from the trained tables of a run
(nothing is retrained):

- `gen`:     + beta * (log det Sigma_p - log det Sigma_c)  (the fourth sweep's
             generality term; it changes sign for the reversed pair)
- `gen+z`:   ... - gamma * (z_out + z_in), KL z-scored against 500 random
             nodes on either side: z_out = (KL(c||p) - mean_r KL(c||r)) / std_r,
             z_in = (KL(c||p) - mean_r KL(r||p)) / std_r
- `gen+dist`: ... - gamma * |mu_c - mu_p|^2
- `gen+breadth` (a hybrid, not an embedding score): ... + gamma *
             (log(1 + d_p) - log(1 + d_c)), d = descendants in the closure of
             the training edges (what the model was given; no held-out edge)

Choice: for each family, the (beta, gamma) of its grid with the best mean
2-fold cross-validated accuracy over the three kinds of negatives (random /
reversed / sibling; the validation pairs are split in two halves, a
threshold is chosen on one half and applied to the other, both ways), among
those whose cross-validated random accuracy is within .002 of `-KL` alone;
"best random" is the grid point of any family with the best cross-validated
random accuracy. The test split is scored only with `--test`, only for the
chosen scores, with the threshold chosen on the whole validation part
(`split_classification`, as `metrics.json` does). The trivial baselines
(closure lookup, depth difference, on the training closure) are printed with
them. `--hyperlex FILE`: HyperLex nouns Spearman (best synset pair), each
family's coefficients chosen on a random half of the pairs (seed 0, as
`generality_score.py`) and reported on the other half, beside the trivial
WordNet lookup (is some synset of x below or equal to some synset of y in the
full closure; 1 / (1 + depth gap), else 0) on the same halves.

Example:
    python research/combined_score.py /tmp/gen-runs/H_s1 /tmp/gen-runs/G_s1
    python research/combined_score.py /tmp/gen-runs/cG --test \\
        --hyperlex ../shared/data/hyperlex/hyperlex-nouns.txt
"""

import argparse
import itertools
import json
import os

import numpy as np

KINDS = ("random", "reversed", "sibling")
SUFFIX = {"random": "", "reversed": "_reversed", "sibling": "_sibling"}
GRIDS = {
    "kl": [(0.0, 0.0)],
    "gen": [(b, 0.0) for b in (0.02, 0.05, 0.1, 0.2)],
    "gen+z": list(itertools.product((0.0, 0.05, 0.1), (0.25, 0.5, 1.0, 2.0, 5.0))),
    "gen+dist": list(itertools.product((0.0, 0.05, 0.1), (0.03, 0.1, 0.3, 1.0))),
    "gen+breadth": list(itertools.product((0.0, 0.05, 0.1), (0.1, 0.3, 1.0, 3.0))),
}
EXTRA = {"kl": None, "gen": None, "gen+z": "z", "gen+dist": "dist", "gen+breadth": "breadth"}
SIGN = {"z": -1.0, "dist": -1.0, "breadth": 1.0}
CV_SLACK = 0.002


def kl(means, variances, a, b):
    """KL(N_a || N_b) of diagonal Gaussians, row by row (`edge_scores`, negated)."""
    from keras_gauss.hierarchy.evaluate import edge_scores

    return -edge_scores(means, variances, a, b)


class Tables:
    """A run's tables with the per-node statistics the combined scores need."""

    def __init__(self, means, variances, train_edges, seed=0, reference=500):
        self.means = np.asarray(means, np.float64)
        self.variances = np.asarray(variances, np.float64)
        self.logdet = np.log(self.variances).sum(1)
        n = len(self.means)
        self.breadth = np.log1p(np.bincount(np.asarray(train_edges)[:, 1], minlength=n))
        self.reference = np.random.default_rng(seed).choice(n, min(reference, n), replace=False)
        self.stats = np.full((n, 4), np.nan)  # mean/std of KL(x||r), KL(r||x)

    def _fill(self, nodes):
        todo = np.unique(nodes[np.isnan(self.stats[nodes, 0])])
        r = self.reference
        for i in range(0, len(todo), 256):
            x = todo[i : i + 256]
            a, b = np.repeat(x, len(r)), np.tile(r, len(x))
            out = kl(self.means, self.variances, a, b).reshape(len(x), -1)
            into = kl(self.means, self.variances, b, a).reshape(len(x), -1)
            self.stats[x] = np.stack([out.mean(1), out.std(1), into.mean(1), into.std(1)], 1)

    def features(self, pairs):
        """`{name: array}` of the terms for `(n, 2)` (specific, general) pairs."""
        c, p = pairs[:, 0], pairs[:, 1]
        self._fill(np.concatenate([c, p]))
        k = kl(self.means, self.variances, c, p)
        diff = self.means[c] - self.means[p]
        z = (k - self.stats[c, 0]) / self.stats[c, 1] + (k - self.stats[p, 2]) / self.stats[p, 3]
        return {"kl": k, "gen": self.logdet[p] - self.logdet[c], "z": z,
                "dist": (diff * diff).sum(1), "breadth": self.breadth[p] - self.breadth[c]}


def combine(features, family, beta, gamma):
    """The family's score from `features` (higher = more likely an edge)."""
    score = -features["kl"] + beta * features["gen"]
    extra = EXTRA[family]
    if extra is not None:
        score = score + SIGN[extra] * gamma * features[extra]
    return score


def threshold_accuracy(fit_pos, fit_neg, pos, neg):
    """Accuracy on (pos, neg) of the threshold that maximises accuracy on (fit_pos, fit_neg).

    As `keras_gauss.metrics.threshold_classification` (midpoints between
    distinct scores, `score >= threshold` is positive), except that a tie in
    accuracy goes to the largest threshold, not the smallest.
    """
    s = np.concatenate([fit_pos, fit_neg])
    y = np.concatenate([np.ones(len(fit_pos)), np.zeros(len(fit_neg))])
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    correct = np.concatenate([[0], np.cumsum(y)]) + len(fit_neg) - np.concatenate([[0], np.cumsum(1 - y)])
    cut = np.concatenate([[True], s[:-1] != s[1:], [True]])
    i = int(np.argmax(np.where(cut, correct, -1)))
    threshold = np.inf if i == 0 else (-np.inf if i == len(s) else 0.5 * (s[i - 1] + s[i]))
    return ((pos >= threshold).sum() + (neg < threshold).sum()) / (len(pos) + len(neg))


def cross_validated(pos_scores, neg_scores, half):
    """2-fold accuracy: threshold on one half of the pairs, accuracy on the other, averaged."""
    a = threshold_accuracy(pos_scores[half], neg_scores[half], pos_scores[~half], neg_scores[~half])
    b = threshold_accuracy(pos_scores[~half], neg_scores[~half], pos_scores[half], neg_scores[half])
    return 0.5 * (a + b)


def choose(cv_results):
    """`{family: (beta, gamma)}` by the rule in the module docstring, plus "best random"."""
    floor = cv_results[("kl", 0.0, 0.0)][0] - CV_SLACK
    chosen = {}
    for family, grid in GRIDS.items():
        keep = [(b, g) for b, g in grid if cv_results[(family, b, g)][0] >= floor] or grid
        chosen[family] = max(keep, key=lambda bg: np.mean(cv_results[(family, *bg)]))
    best = max(cv_results, key=lambda key: (cv_results[key][0], np.mean(cv_results[key])))
    chosen["best random: " + best[0]] = best[1:]
    return chosen


def family_of(name):
    return name.split(": ")[-1]


def fmt(values):
    return " / ".join(f"{v:.3f}" for v in values)


def score_split(run_dir, hierarchies, test):
    from keras_gauss import load_run
    from keras_gauss.hierarchy import build_hierarchy, split_edges
    from keras_gauss.hierarchy.evaluate import depth_scorer, lookup_scorer, split_classification

    config = json.load(open(os.path.join(run_dir, "metrics.json")))["config"]
    key = (config["root"], config["pos"])
    if key not in hierarchies:
        hierarchies[key] = build_hierarchy(config["root"], pos=config["pos"])
    hierarchy = hierarchies[key]
    split = split_edges(hierarchy, seed=config["seed"], method=config["split"])
    parts = split.parts()
    run = load_run(run_dir)
    tables = Tables(run.means, run.variances, split.train)
    val = {kind: tuple(tables.features(x) for x in parts["val" + SUFFIX[kind]]) for kind in KINDS}
    halves = {kind: np.random.default_rng(0).permutation(len(parts["val" + SUFFIX[kind]][0]))
              < len(parts["val" + SUFFIX[kind]][0]) // 2 for kind in KINDS}
    cv = {}
    for family, grid in GRIDS.items():
        for beta, gamma in grid:
            cv[(family, beta, gamma)] = tuple(
                cross_validated(combine(val[k][0], family, beta, gamma),
                                combine(val[k][1], family, beta, gamma), halves[k]) for k in KINDS)
    name = os.path.basename(os.path.normpath(run_dir))
    print(f"\n{name}: --split {config['split']} --seed {config['seed']}, min var {config['min_variance']}, "
          f"margin {config['margin']}, lr {config['learning_rate']}, {config['epochs']} epochs")
    header = f"{'score':<24}{'beta':>6}{'gamma':>7}  {'val 2-fold CV r / rev / sib':<28}"
    print(header + ("  test r / rev / sib (read once)" if test else ""))
    baselines = {"closure lookup": lookup_scorer(split.train_index),
                 "depth difference": depth_scorer(split.train_index)}
    for label, scorer in baselines.items():
        result = split_classification(parts, scorer)
        line = f"{label:<24}{'':>6}{'':>7}  {'(val) ' + fmt(result[k]['val_accuracy'] for k in KINDS):<28}"
        print(line + ("  " + fmt(result[k]["test_accuracy"] for k in KINDS) if test else ""))
    for label, (beta, gamma) in choose(cv).items():
        family = family_of(label)
        line = f"{label:<24}{beta:>6g}{gamma:>7g}  {fmt(cv[(family, beta, gamma)]):<28}"
        if test:
            def scorer(pairs, family=family, beta=beta, gamma=gamma):
                return combine(tables.features(np.asarray(pairs)), family, beta, gamma)
            result = split_classification(parts, scorer)
            line += "  " + fmt(result[k]["test_accuracy"] for k in KINDS)
        print(line, flush=True)
    return hierarchy, tables, config


def score_hyperlex(path, hierarchy, tables):
    from scipy.stats import spearmanr

    from keras_gauss.hierarchy.benchmark_data import read_hyperlex
    from keras_gauss.hierarchy.evaluate import _word_node_ids

    rows = read_hyperlex(path)
    gold = np.array([row[2] for row in rows])
    cache = {}

    def nodes(word):
        if word not in cache:
            cache[word] = _word_node_ids(word, hierarchy, "auto", None, None)
        return cache[word]

    pairs = [np.stack([np.repeat(nodes(a), len(nodes(b))), np.tile(nodes(b), len(nodes(a)))], 1)
             for a, b, _ in rows]
    covered = np.array([len(p) > 0 for p in pairs])
    flat = np.concatenate([p for p in pairs if len(p)])
    owner = np.repeat(np.arange(len(rows)), [len(p) for p in pairs])
    features = tables.features(flat)
    half = np.random.default_rng(0).permutation(len(rows)) < len(rows) // 2

    def scores(family, beta, gamma):
        out = np.full(len(rows), -np.inf)
        np.maximum.at(out, owner, combine(features, family, beta, gamma))
        return out

    def rho(s, mask):
        return spearmanr(s[mask], gold[mask])[0]

    # The trivial bar, on the same halves: is some synset of x below (or equal
    # to) some synset of y in the full WordNet closure, graded by depth gap.
    index = hierarchy.index
    depth = np.asarray(index.num_ancestors, np.float64)
    gap = depth[flat[:, 0]] - depth[flat[:, 1]]
    below = index.contains(flat[:, 0], flat[:, 1]) | (flat[:, 0] == flat[:, 1])
    lookup = np.zeros(len(rows))
    np.maximum.at(lookup, owner, np.where(below, 1.0 / (1.0 + np.abs(gap)), 0.0))

    print(f"HyperLex nouns ({covered.sum()} of {len(rows)} pairs covered): coefficients chosen on one half "
          f"(seed 0), Spearman on the other half")
    print(f"{'score':<24}{'beta':>6}{'gamma':>7}  {'choosing half':>14}{'other half':>12}{'all pairs':>11}")
    print(f"{'WordNet lookup':<24}{'':>6}{'':>7}  {rho(lookup, covered & half):>14.3f}"
          f"{rho(lookup, covered & ~half):>12.3f}{rho(lookup, covered):>11.3f}")
    for family, grid in GRIDS.items():
        best = max(grid, key=lambda bg: rho(scores(family, *bg), covered & half))
        s = scores(family, *best)
        print(f"{family:<24}{best[0]:>6g}{best[1]:>7g}  {rho(s, covered & half):>14.3f}"
              f"{rho(s, covered & ~half):>12.3f}{'':>11}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="train-wordnet run directories")
    parser.add_argument("--test", action="store_true",
                        help="also score the test split, for the chosen scores only")
    parser.add_argument("--hyperlex", help="HyperLex nouns file (scored for closure-split runs)")
    args = parser.parse_args()
    for run_dir in args.runs:
        if not os.path.isfile(os.path.join(run_dir, "metrics.json")):
            parser.error(f"{run_dir}: no metrics.json (not a train-wordnet run directory)")
        if json.load(open(os.path.join(run_dir, "metrics.json"))).get("config", {}).get("edges"):
            parser.error(f"{run_dir}: a train-hierarchy --edges run; only WordNet runs are rebuilt here")
    if args.hyperlex and not os.path.isfile(args.hyperlex):
        parser.error(f"--hyperlex {args.hyperlex}: no such file")
    hierarchies = {}
    for run_dir in args.runs:
        hierarchy, tables, config = score_split(run_dir, hierarchies, args.test)
        if args.hyperlex and config["split"] == "closure":
            score_hyperlex(args.hyperlex, hierarchy, tables)
    print(f"\nload average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
