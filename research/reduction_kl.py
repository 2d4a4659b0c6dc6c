"""Research: KL(N_specific || N_general) on the reduction split (unseen edges), validation only.

Why KL's reversed accuracy on held-out reduction edges lags containment's,
and which setting of the KL path (start, loss, negatives, schedule) or
which score (a function of the two Gaussians built on the KL) lifts it.
The split is `split_edges(build_hierarchy(), seed=0, method="reduction")`,
the split of `keras-gauss train-wordnet --split reduction` (all nouns).

Three subcommands, one line a run appended to `--log`:

- `diagnose RUN`: where the validation edges' reversed pairs fail: the
  training depth of both nodes, their descendant counts, the order of
  KL(c || p) against KL(p || c) and of the log-determinants.
- `rescore RUN [RUN ...]`: validation accuracy (random / reversed /
  sibling) of each score family (`RULES`) of a run's tables, nothing
  retrained; `--test RULE` reads the test split once for one rule.
- `train NAME=JSON ...`: trains a setting with the product's C++ pair
  trainer (`NativePairTable`) from the product's tree start or a variant,
  keeps the epoch of best validation random accuracy (patience as the
  command; epoch 0, the start, is scored but kept only with `"epochs": 0`),
  saves its tables as `--out/NAME.npz` (then `rescore` reads it).

Settings (JSON): loss, margin, threshold, negatives, reversed, lr, schedule,
min_var, max_var, max_norm, batch, epochs, patience, init ("tree": the
product's; "size": the same means, variances from depth *and* descendant
count, `size_weight`), spread, generality (the score that is
monitored and printed: one of `RULES`' "gen" weights, 0: -KL), edges ("closure": the
training edges, as the command; "reduction": only their direct links; the
negatives avoid the closure either way).

    python research/reduction_kl.py diagnose /work/runs/redkl
    python research/reduction_kl.py rescore /work/runs/redkl
    python research/reduction_kl.py train base='{}' size='{"init": "size"}'
"""

import argparse
import json
import os
import sys
import time

import numpy as np

DEFAULTS = {"loss": "threshold", "margin": 20.0, "threshold": 20.0, "negatives": 10,
            "reversed": True, "lr": 0.3, "schedule": "constant", "min_var": 0.01,
            "max_var": 5.0, "max_norm": 10.0, "batch": 1024, "epochs": 20, "patience": 5,
            "init": "tree", "spread": 2.0, "size_weight": 0.5, "dim": 50, "seed": 0,
            "generality": 0.0, "edges": "closure"}
KINDS = ("random", "reversed", "sibling")


def load_split(seed=0):
    from keras_gauss.hierarchy import build_hierarchy, split_edges

    hierarchy = build_hierarchy(None, pos="n")
    return hierarchy, split_edges(hierarchy, seed=seed, method="reduction")


def tables_of(path):
    """`(means, variances)` float64 of a run folder or a saved `.npz`."""
    if path.endswith(".npz"):
        data = np.load(path)
        return data["means"].astype(np.float64), data["variances"].astype(np.float64)
    from keras_gauss import load_run

    run = load_run(path)
    return np.asarray(run.means, np.float64), np.asarray(run.variances, np.float64)


def kl(means, variances, s, g):
    """KL(N_s || N_g), diagonal, float64."""
    vs, vg = variances[s], variances[g]
    return 0.5 * ((vs / vg).sum(1) + ((means[s] - means[g]) ** 2 / vg).sum(1) - means.shape[1]
                  + np.log(vg).sum(1) - np.log(vs).sum(1))


# Score families: each a function of the two Gaussians; higher = more likely "s is-a g".
def _rules():
    def plain(m, v, s, g):
        return -kl(m, v, s, g)

    def generality(beta):
        def score(m, v, s, g):
            ld = np.log(v).sum(1)
            return -kl(m, v, s, g) + beta * (ld[g] - ld[s])
        return score

    def reverse(gamma):  # the reversed divergence as evidence against the pair
        def score(m, v, s, g):
            return -kl(m, v, s, g) + gamma * kl(m, v, g, s)
        return score

    def spread(alpha):  # KL in units of the general node's own spread (mean variance ** alpha)
        def score(m, v, s, g):
            return -kl(m, v, s, g) / v[g].mean(1) ** alpha
        return score

    def general_only(a):  # a broad general node tolerates more divergence
        def score(m, v, s, g):
            return -kl(m, v, s, g) + a * np.log(v[g]).sum(1)
        return score

    rules = {"-KL": plain}
    rules.update({f"gen {b}": generality(b) for b in (0.1, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)})
    rules.update({f"rev {c}": reverse(c) for c in (0.05, 0.1, 0.2, 0.3, 0.5)})
    rules.update({f"spread {a}": spread(a) for a in (0.25, 0.5, 1.0)})
    rules.update({f"ldg {a}": general_only(a) for a in (0.1, 0.25, 0.5)})
    return rules


RULES = _rules()


def accuracies(parts, means, variances, rule, test=False):
    """`{kind: (val accuracy, test accuracy or None)}`, one threshold a kind chosen on validation."""
    from keras_gauss.hierarchy.evaluate import NEGATIVE_KINDS, threshold_classification

    out = {}
    for kind in KINDS:
        suffix = NEGATIVE_KINDS[kind]
        score = [rule(means, variances, p[:, 0], p[:, 1]) for p in parts[f"val{suffix}"]]
        tests = ([rule(means, variances, p[:, 0], p[:, 1]) for p in parts[f"test{suffix}"]]
                 if test else [score[0][:0], score[1][:0]])
        r = threshold_classification(score[0], score[1], tests[0], tests[1])
        out[kind] = (r["val_accuracy"], r["test_accuracy"] if test else None)
    return out


def log_line(args, line):
    print(line, flush=True)
    with open(args.log, "a") as f:
        f.write(line + "\n")


def diagnose(args, split):
    from keras_gauss.hierarchy.closure import transitive_reduction
    from keras_gauss.hierarchy.initialization import tree_depths

    means, variances = tables_of(args.runs[0])
    index = split.train_index
    depth = tree_depths(transitive_reduction(index), split.num_nodes)
    desc = index.num_descendants
    c, p = split.val[:, 0], split.val[:, 1]
    forward, backward = kl(means, variances, c, p), kl(means, variances, p, c)
    ld = np.log(variances).sum(1)
    groups = {"all": np.ones(len(c), bool), "train depth c == p": depth[c] == depth[p],
              "train depth c > p": depth[c] > depth[p], "descendants p > c": desc[p] > desc[c],
              "descendants p == c": desc[p] == desc[c], "c a leaf": desc[c] == 0}
    for name, m in groups.items():
        log_line(args, f"diagnose {args.runs[0]}: {name}: share {m.mean():.3f}, "
                       f"KL(c||p) < KL(p||c) {np.mean(forward[m] < backward[m]):.3f}, "
                       f"log det p > c {np.mean(ld[p[m]] > ld[c[m]]):.3f}, median KL(c||p) "
                       f"{np.median(forward[m]):.1f}, KL(p||c) {np.median(backward[m]):.1f}")


def rescore(args, split):
    parts = split.parts()
    rules = {args.test: RULES[args.test]} if args.test else RULES
    for path in args.runs:
        means, variances = tables_of(path)
        for name, rule in rules.items():
            acc = accuracies(parts, means, variances, rule, test=bool(args.test))
            line = f"rescore {path} [{name}]: val " + " / ".join(f"{acc[k][0]:.4f}" for k in KINDS)
            if args.test:
                line += "  TEST " + " / ".join(f"{acc[k][1]:.4f}" for k in KINDS)
            log_line(args, line)


def start_tables(s, split):
    """The product's tree start (`tree_initialization`); with `init == "size"` its
    variances also grow with the log descendant count (`size_weight`, the
    product's `--init tree-size` at `SIZE_WEIGHT`)."""
    from keras_gauss.hierarchy.initialization import tree_initialization

    if s["init"] not in ("tree", "size"):
        raise ValueError(f"init must be tree or size, got {s['init']!r}")
    return tree_initialization(split.train_index, s["dim"], min_variance=s["min_var"],
                               max_variance=s["max_var"], max_norm=s["max_norm"],
                               spread=s["spread"], seed=s["seed"],
                               size_weight=s["size_weight"] if s["init"] == "size" else 0.0)


def train(args, split):
    from keras_gauss.fused.pairs import NativePairTable
    from keras_gauss.hierarchy.native_training import related_nodes

    parts = split.parts()
    os.makedirs(args.out, exist_ok=True)
    from keras_gauss.hierarchy.closure import transitive_reduction

    closure = np.ascontiguousarray(split.train, np.int32)
    direct = np.ascontiguousarray(transitive_reduction(split.train_index), np.int32)
    related = related_nodes(split.train_index)
    for item in args.runs:
        name, _, text = item.partition("=")
        setting = {**json.loads(args.base), **json.loads(text or "{}")}
        s = {**DEFAULTS, **setting}
        edges = {"closure": closure, "reduction": direct}[s["edges"]]
        steps = -(-len(edges) // s["batch"])
        table = NativePairTable.initial(
            split.num_nodes, s["dim"], seed=s["seed"], energy="kl", loss=s["loss"],
            margin=s["margin"], threshold=s["threshold"], learning_rate=s["lr"],
            schedule=s["schedule"], total_steps=max(1, s["epochs"] * steps), max_norm=s["max_norm"],
            min_variance=s["min_var"], max_variance=s["max_var"])
        table.means[...], table.variances[...] = start_tables(s, split)
        history, best, it, start = [], (-1.0, 0), 0, time.time()
        for epoch in range(-1, s["epochs"]):  # -1: the start, scored as epoch 0
            if epoch >= 0:
                table.train_steps(related, edges, s["seed"], epoch, s["batch"], s["negatives"],
                                  s["reversed"], iteration=it)
                it += steps
            m, v = table.means.astype(np.float64), table.variances.astype(np.float64)
            acc = accuracies(parts, m, v, RULES["-KL"])
            if s["generality"]:  # the monitor and the figures with the generality term
                acc = accuracies(parts, m, v, RULES[f"gen {s['generality']}"])
            history.append("/".join(f"{acc[k][0]:.3f}" for k in KINDS))
            print(f"  {name} epoch {epoch + 1}: val {history[-1]}", flush=True)
            if acc["random"][0] > best[0] or epoch == 0:  # the start only when not trained
                best = (acc["random"][0], epoch + 1)
                np.savez(os.path.join(args.out, name), means=table.means, variances=table.variances)
            elif epoch + 1 - best[1] >= s["patience"]:
                break
        log_line(args, f"train {name}: best epoch {best[1]} of {len(history) - 1}: val "
                       f"{history[best[1]]} (random/reversed/sibling, -KL + {s['generality']} gen.) "
                       f"{time.time() - start:.0f} s load {os.getloadavg()[0]:.1f} | "
                       f"{json.dumps(setting)} | epochs {' '.join(history)}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("diagnose", "rescore", "train"))
    parser.add_argument("runs", nargs="+", help="run folders / .npz tables, or NAME=JSON to train")
    parser.add_argument("--test", default=None, help="rescore: read the test split once for this rule")
    parser.add_argument("--base", default="{}", help="train: JSON for every setting")
    parser.add_argument("--out", default="/work/runs/redkl_research")
    parser.add_argument("--log", default="research/reduction_kl.log")
    args = parser.parse_args(argv)
    _, split = load_split()
    {"diagnose": diagnose, "rescore": rescore, "train": train}[args.command](args, split)
    return 0


if __name__ == "__main__":
    sys.exit(main())
