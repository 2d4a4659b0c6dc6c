"""HyperLex nouns scored from a trained WordNet run's tables, several score families.

Each pair "word1 is a type of word2" is scored over the synsets of both words
(best synset pair) by one of:

- `kl`: -KL(N_x || N_y) (what `hyperlex_spearman` reports);
- `generality` beta: -KL(N_x || N_y) + beta (log det S_y - log det S_x);
- `asymmetry` gamma: -KL(N_x || N_y) + gamma KL(N_y || N_x);
- `generality, mean`: the generality score averaged over the synset pairs;
- `generality + sense prior` (beta, lambda): the generality score plus
  lambda (log p(x | word1) + log p(y | word2)), WordNet's tagged-sense
  counts plus one (`word_pair_scores(sense_prior=)`); the chosen pair is
  `HYPERLEX_SCORING`'s for KL (`keras_gauss.hierarchy.evaluate`).

A run with word nodes (`train-wordnet --lemmas`) scores word1 by its own node
against word2's synsets (`word_pair_scores`' rule), in every family.

The family's weight is chosen on HyperLex's upstream random split, training
plus dev parts (nouns), which nothing here trains on; the test part (nouns)
is read once for the chosen weight, and the whole noun file is shown for the
published figures (Poincaré .512, density order embeddings .590), which are
on all nouns.

    python research/hyperlex_scores.py RUN [--data ../shared/data]
"""

import argparse
import os
import re
import sys

import numpy as np
from scipy.stats import spearmanr


SYNSET = re.compile(r".+\.[a-z]\.\d+$")


def read(path, nouns_only=True):
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if not parts or parts[0] == "WORD1" or (nouns_only and parts[2] != "N"):
                continue
            rows.append((parts[0], parts[1], float(parts[4])))
    return rows


def synset_count(words):
    """Rows before the first word node (a `--lemmas` run's word nodes follow its synsets)."""
    return next((i for i, w in enumerate(words) if not SYNSET.match(w)), len(words))


def pair_terms(rows, words, means, variances):
    """Per covered pair: arrays over its synset pairs of (KL_xy, KL_yx, logdet_y - logdet_x);
    word1 by its word node where the run has one."""
    from keras_gauss.hierarchy.evaluate import _normalise, edge_scores
    from keras_gauss.hierarchy.wordnet import read_noun_lemmas

    lemmas = read_noun_lemmas()
    index = {w: i for i, w in enumerate(words)}
    log_det = np.log(variances).sum(1)

    def nodes(word, specific=False):
        own = index.get(_normalise(word))
        if specific and own is not None and own >= synset_count(words):
            return [own]
        return [index[n] for n in lemmas.get(_normalise(word), ()) if n in index]

    def kl(a, b):  # KL(N_a || N_b) for id arrays: the product's energy, negated
        return -edge_scores(means, variances, a, b)

    terms, gold = [], []
    for w1, w2, score in rows:
        x, y = nodes(w1, specific=True), nodes(w2)
        if not x or not y:
            continue
        a = np.repeat(x, len(y))
        b = np.tile(y, len(x))
        terms.append((kl(a, b), kl(b, a), log_det[b] - log_det[a]))
        gold.append(score)
    return terms, np.array(gold)


def scores(terms, family, weight):
    out = []
    for kl_xy, kl_yx, gen in terms:
        s = -kl_xy
        if family == "generality":
            s = s + weight * gen
        elif family == "asymmetry":
            s = s + weight * kl_yx
        elif family == "generality, mean":
            s = s + weight * gen
            out.append(s.mean())
            continue
        out.append(s.max())
    return np.array(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run")
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    args = parser.parse_args(argv)
    from keras_gauss.runs import load_run

    run = load_run(args.run)
    words, means, variances = list(run.words), np.asarray(run.means, np.float64), np.asarray(run.variances, np.float64)
    hyper = os.path.join(args.data, "hyperlex")
    split = os.path.join(hyper, "splits", "random")
    choose = read(os.path.join(split, "hyperlex_training_all_random.txt")) + read(
        os.path.join(split, "hyperlex_dev_all_random.txt"))
    parts = {"choose (train+dev)": choose,
             "test": read(os.path.join(split, "hyperlex_test_all_random.txt")),
             "all nouns": read(os.path.join(hyper, "hyperlex-nouns.txt"))}
    terms = {name: pair_terms(rows, words, means, variances) for name, rows in parts.items()}
    for name, rows in parts.items():
        print(f"{name}: {len(terms[name][0])}/{len(rows)} pairs covered")
    grids = {"kl": [0.0], "generality": [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0],
             "asymmetry": [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0],
             "generality, mean": [0.0, 0.25, 0.5, 0.75, 1.0]}
    print("| family | weight (chosen on train+dev) | train+dev rho | test rho | all nouns rho |")
    print("|---|---|---|---|---|")
    for family, grid in grids.items():
        tried = [(spearmanr(scores(terms["choose (train+dev)"][0], family, w),
                            terms["choose (train+dev)"][1])[0], w) for w in grid]
        if family != "kl":
            print(f"  {family} on train+dev: " + ", ".join(f"{w:g}: {r:.3f}" for r, w in tried),
                  file=sys.stderr)
        best, weight = max(tried)
        test = spearmanr(scores(terms["test"][0], family, weight), terms["test"][1])[0]
        everything = spearmanr(scores(terms["all nouns"][0], family, weight), terms["all nouns"][1])[0]
        print(f"| {family} | {weight:g} | {best:.3f} | {test:.3f} | {everything:.3f} |")
    prior_row(parts, words, means, variances)


def prior_row(parts, words, means, variances):
    """The `generality + sense prior` row, scored by the package's `word_pair_scores`."""
    import types

    from keras_gauss.hierarchy.evaluate import word_pair_scores

    words = tuple(words)
    hierarchy = types.SimpleNamespace(nodes=words, node_ids={w: i for i, w in enumerate(words)},
                                      num_synsets=synset_count(words), num_nodes=len(words))

    def rho(rows, beta, prior):
        scores, covered = word_pair_scores(rows, hierarchy, means, variances, generality=beta,
                                           sense_prior=prior)
        return spearmanr(scores[covered], np.array([g for *_, g in rows])[covered])[0]

    tried = [(rho(parts["choose (train+dev)"], beta, prior), beta, prior)
             for beta in (0.5, 0.75, 1.0) for prior in (1.0, 2.0, 4.0, 8.0)]
    print("  generality + sense prior on train+dev: "
          + ", ".join(f"{b:g}/{p:g}: {r:.3f}" for r, b, p in tried), file=sys.stderr)
    best, beta, prior = max(tried)
    print(f"| generality + sense prior | {beta:g}, {prior:g} | {best:.3f} | "
          f"{rho(parts['test'], beta, prior):.3f} | {rho(parts['all nouns'], beta, prior):.3f} |")


if __name__ == "__main__":
    main()
