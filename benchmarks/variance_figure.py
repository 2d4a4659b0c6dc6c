"""Is a word's learned variance more than its frequency? A figure and three numbers.

For a corpus run, plots each word's mean log variance (`log det Sigma / d`)
against its frequency rank, and the nouns' variance against the WordNet
depth of their first sense (`min_depth`), raw and with frequency taken out
(the residual from the running median over frequency rank). Prints Spearman
rho of variance with frequency rank, with depth, and of the residual with
depth (a variance that only mirrors frequency has residual rho ~0; the paper
expects general words, small depth, to be broader: negative rho).

    python benchmarks/variance_figure.py RUN_DIR [RUN_DIR ...] --out docs/corpus_variance.png
"""

import argparse
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def running_median(values, window=501):
    """Median of `values` over a centred window of ranks (values in rank order)."""
    half = window // 2
    padded = np.pad(values, half, mode="edge")
    from numpy.lib.stride_tricks import sliding_window_view

    return np.median(sliding_window_view(padded, window), axis=1)


def variance_facts(run_dir, max_rank=None):
    """`(words, rank, log variance, residual, depth)` of a run (depth nan: no noun synset)."""
    from keras_gauss.hierarchy.wordnet import load_wordnet
    from keras_gauss.runs import load_run

    run = load_run(run_dir)
    means, variances = run.tables()
    n = len(run.words) if max_rank is None else min(max_rank, len(run.words))
    order = np.argsort(-np.asarray(run.counts), kind="stable")[:n]
    words = [run.words[i] for i in order]
    logvar = np.log(variances[order]).mean(axis=1)
    residual = logvar - running_median(logvar)
    wn = load_wordnet()
    depth = np.full(n, np.nan)
    for k, word in enumerate(words):
        synsets = wn.synsets(word, pos="n")
        if synsets:
            depth[k] = synsets[0].min_depth()
    return words, np.arange(1, n + 1), logvar, residual, depth


def specificity(run_dir, queries=("rock", "food", "feeling", "algebra"), k=100):
    """The paper's Table 1: a query's k nearest neighbours (cosine of means), with the
    Spearman rho of their variance with their frequency, and the neighbours whose
    variance rank is most above / below their frequency rank."""
    from scipy.stats import rankdata
    from scipy.stats import spearmanr

    from keras_gauss.runs import load_run

    run = load_run(run_dir)
    means, variances = run.tables()
    unit = means / np.linalg.norm(means, axis=1, keepdims=True)
    logdet = np.log(variances).sum(axis=1)
    index = {w: i for i, w in enumerate(run.words)}
    for query in queries:
        if query not in index:
            continue
        near = np.argsort(-(unit @ unit[index[query]]))[1:k + 1]
        var_rank = rankdata(-logdet[near])
        freq_rank = rankdata(-np.asarray(run.counts)[near])
        gap = freq_rank - var_rank  # > 0: broader than its frequency predicts
        order = np.argsort(-logdet[near])
        over = [run.words[near[i]] for i in np.argsort(-gap)[:5]]
        under = [run.words[near[i]] for i in np.argsort(gap)[:5]]
        print(f"  {query}: neighbours by descending variance "
              f"{' '.join(run.words[near[i]] for i in order[::10])}; rho(variance, "
              f"frequency) {spearmanr(logdet[near], np.asarray(run.counts)[near]).statistic:+.2f}; "
              f"broader than their frequency: {' '.join(over)}; narrower: {' '.join(under)}")


def main(argv=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.stats import spearmanr

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories (NAME=DIR to label one)")
    parser.add_argument("--out", required=True, help="PNG to write")
    parser.add_argument("--max-rank", type=int, default=None,
                        help="only the most frequent words (default: all)")
    args = parser.parse_args(argv)

    fig, axes = plt.subplots(len(args.runs), 3, figsize=(15, 4.2 * len(args.runs)),
                             squeeze=False)
    for row, spec in zip(axes, args.runs):
        name, _, path = spec.rpartition("=")
        name = name or Path(path).name
        words, rank, logvar, residual, depth = variance_facts(path, args.max_rank)
        noun = ~np.isnan(depth)
        rho_f = spearmanr(rank, logvar).statistic
        rho_d = spearmanr(depth[noun], logvar[noun]).statistic
        rho_r = spearmanr(depth[noun], residual[noun]).statistic
        print(f"{name}: {len(words):,} words, {int(noun.sum()):,} nouns; Spearman rho of "
              f"mean log variance with frequency rank {rho_f:+.3f}, with WordNet depth "
              f"{rho_d:+.3f}, residual (frequency removed) with depth {rho_r:+.3f}")
        ax = row[0]
        ax.scatter(rank, logvar, s=1, alpha=0.15, color="tab:blue", rasterized=True)
        ax.plot(rank, running_median(logvar), color="black", lw=1.2, label="running median")
        ax.set_xscale("log")
        ax.set_xlabel("frequency rank")
        ax.set_ylabel("mean log variance")
        ax.set_title(f"{name}: variance vs frequency (rho {rho_f:+.2f})")
        for word in ("the", "such", "animal", "dog", "poodle", "vehicle", "emotion",
                     "sadness", "coldness", "joviality"):
            if word in words:
                k = words.index(word)
                ax.annotate(word, (rank[k], logvar[k]), fontsize=8, color="tab:red")
                ax.plot(rank[k], logvar[k], "o", ms=3, color="tab:red")
        ax.legend(loc="upper right", fontsize=8)
        depths = np.arange(int(np.nanmax(depth)) + 1) if noun.any() else np.arange(1)
        for ax, values, title in ((row[1], logvar, "variance"),
                                  (row[2], residual, "variance minus frequency")):
            data = [values[noun & (depth == k)] for k in depths]
            keep = [k for k in depths if len(data[k]) >= 5]
            ax.boxplot([data[k] for k in keep], positions=keep, showfliers=False)
            ax.set_xlabel("WordNet depth of the first noun sense (0 = entity)")
            ax.set_ylabel(f"mean log {title.split()[0]}" if title == "variance"
                          else "residual mean log variance")
            rho = rho_d if title == "variance" else rho_r
            ax.set_title(f"{title} vs depth (rho {rho:+.2f})")
            ax.axhline(0 if title != "variance" else np.median(values[noun]), color="grey",
                       lw=0.6, ls="--")
        specificity(path)
    fig.tight_layout()
    fig.savefig(args.out, dpi=90)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
