"""Research: KL(N_specific || N_general) settings on Ganea et al.'s split, validation F1 only.

Loads the split once (`--split ganea`, WordNet nouns without `entity.n.01`,
cached in /tmp) and trains each named setting with the native pair trainer
(`keras_gauss.fused.NativePairTable`, the product's step), scoring the
validation F1 every `--every` epochs with the KL energy. Test pairs are
never scored. One line a setting is appended to `--log`.

Settings are JSON objects of: loss ("ranking" | "threshold"), margin,
threshold, negatives, reversed, lr, schedule, min_var, max_var, max_norm,
batch, init ("ones" | "depth": variances started from the node's
descendant count in the training closure | "tree": nested along the
tree, `keras_gauss.hierarchy.initialization.tree_initialization`, with
`spread` and `size_weight`), var0 (the "ones" variance).

    python research/kl_sweep.py --percent 10 --epochs 30 \\
        base='{}' t20='{"loss": "threshold", "threshold": 20, "margin": 10}'
"""

import argparse
import json
import os
import sys
import time

import numpy as np

DEFAULTS = {"loss": "ranking", "margin": 1.0, "threshold": 0.0, "negatives": 5,
            "reversed": True, "lr": 0.3, "schedule": "constant", "min_var": 0.05,
            "max_var": 5.0, "max_norm": 4.0, "batch": 1024, "init": "ones", "var0": 1.0,
            "mean_range": 0.05, "energy": "kl"}


def load(percent, seed, root=None, cache="/tmp/kl_sweep_cache"):
    """`(hierarchy, split)` of the cell (the split's arrays cached)."""
    from keras_gauss.hierarchy import build_hierarchy
    from keras_gauss.hierarchy.split import drop_root, ganea_split

    hierarchy = drop_root(build_hierarchy(root), root or "entity.n.01")
    return hierarchy, ganea_split(hierarchy, percent, seed=seed)


def run(setting, split, dim, epochs, every, seed):
    from keras_gauss.fused.pairs import NativePairTable
    from keras_gauss.hierarchy.native_training import related_nodes
    from keras_gauss.hierarchy.selection import validation_scorer

    s = {**DEFAULTS, **setting}
    n = split.num_nodes
    edges = np.ascontiguousarray(split.train, np.int32)
    steps = -(-len(edges) // s["batch"])
    table = NativePairTable.initial(
        n, dim, seed=seed, mean_range=s["mean_range"], energy=s["energy"], loss=s["loss"],
        margin=s["margin"], threshold=s["threshold"], learning_rate=s["lr"],
        schedule=s["schedule"], total_steps=epochs * steps, max_norm=s["max_norm"],
        min_variance=s["min_var"], max_variance=s["max_var"])
    lo, hi = s["min_var"], s["max_var"]
    if s["init"] == "depth":  # broad where many descendants: log-linear in the count
        count = split.train_index.num_descendants.astype(np.float64)
        frac = np.log1p(count) / np.log1p(count.max())
        table.variances[...] = np.exp(np.log(lo) + frac * (np.log(hi) - np.log(lo)))[:, None]
    elif s["init"] == "tree":
        from keras_gauss.hierarchy.initialization import tree_initialization

        table.means[...], table.variances[...] = tree_initialization(
            split.train_index, dim, min_variance=lo, max_variance=hi, max_norm=s["max_norm"],
            spread=s.get("spread", 2.0), seed=seed, size_weight=s.get("size_weight", 0.0))
    else:
        table.variances[...] = np.clip(s["var0"], lo, hi)
    related = related_nodes(split.train_index)
    score = validation_scorer(split, "val_f1", energy=s["energy"])
    history, it, start = [], 0, time.time()
    for epoch in range(epochs):
        table.train_steps(related, edges, seed, epoch, s["batch"], s["negatives"], s["reversed"],
                          iteration=it)
        it += steps
        if (epoch + 1) % every == 0 or epoch + 1 == epochs:
            history.append((epoch + 1, score(table.means, table.variances)))
    best = max(history, key=lambda h: h[1])
    return s, history, best, time.time() - start, table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("settings", nargs="+", help="NAME=JSON")
    parser.add_argument("--percent", type=float, default=10.0)
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--root", default=None)
    parser.add_argument("--base", default="{}", help="JSON for every setting")
    parser.add_argument("--log", default="research/kl_sweep.log")
    parser.add_argument("--save", default=None, help="folder for each setting's final table")
    args = parser.parse_args(argv)

    t = time.time()
    hierarchy, split = load(args.percent, args.seed, args.root)
    print(f"split loaded in {time.time() - t:.0f} s: {len(split.train):,} training edges",
          flush=True)
    for item in args.settings:
        name, _, text = item.partition("=")
        setting = {**json.loads(args.base), **json.loads(text or "{}")}
        s, history, best, seconds, table = run(setting, split, args.dim, args.epochs,
                                               args.every, args.seed)
        if args.save:
            os.makedirs(args.save, exist_ok=True)
            np.savez(os.path.join(args.save, name), means=table.means,
                     variances=table.variances)
        line = (f"{name}: {args.dim}-d {args.percent:g}% seed {args.seed}"
                f"{' root ' + args.root if args.root else ''}: val F1 {best[1]:.4f} at epoch "
                f"{best[0]}/{args.epochs} [{' '.join(f'{f:.3f}' for _, f in history)}] "
                f"{seconds:.0f} s load {os.getloadavg()[0]:.1f} | {json.dumps(setting)}")
        print(line, flush=True)
        with open(args.log, "a") as log:
            log.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
