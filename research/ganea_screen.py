"""Screens training settings on validation data (research): Ganea et al.'s split by default.

Each named setting trains `train-wordnet` (the library's `train_wordnet`;
`--split ganea` unless `--base` says otherwise) and prints its validation
figures: F1 or accuracy by epoch, the reversed and sibling parts' validation
accuracy, and with `--hyperlex FILE` the Spearman rho on that file (give a
part of HyperLex that is not reported, e.g. the random split's training
pairs). Test figures are written into each run's metrics.json but never
printed here (choose on validation only; read the test split once per
configuration reported, e.g. with `benchmarks/wordnet_literature.py`).

    python research/ganea_screen.py --percent 25 --dim 10 --epochs 30 \\
        base='{}' lr1='{"learning_rate": 1.0}'

Settings are JSON objects of `WordNetConfig` fields. Appends one line a
setting to `--log` (default `ganea_results.log`).
"""

import argparse
import json
import os
import sys
import time


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("settings", nargs="+", help="NAME=JSON of WordNetConfig fields")
    parser.add_argument("--percent", type=float, default=25.0)
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--patience", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--root", default=None, help="a subtree (e.g. mammal.n.01) for sanity checks")
    parser.add_argument("--base", default="{}", help="JSON of WordNetConfig fields for every "
                        "setting, e.g. '{\"split\": \"reduction\", \"dim\": 50}'")
    parser.add_argument("--hyperlex", default=None, help="HyperLex file to score (not reported)")
    parser.add_argument("--out", default="/tmp/ganea_screen")
    parser.add_argument("--log", default="ganea_results.log")
    args = parser.parse_args(argv)

    from keras_gauss.hierarchy.train import WordNetConfig, train_wordnet

    for item in args.settings:
        name, _, text = item.partition("=")
        overrides = json.loads(text or "{}")
        fields = {"split": "ganea", "non_basic_percent": args.percent, "dim": args.dim,
                  "epochs": args.epochs, "patience": args.patience or args.epochs,
                  "seed": args.seed, "root": args.root, "reconstruction_nodes": 200}
        base = json.loads(args.base)
        if base.get("split", "ganea") != "ganea":
            fields.pop("non_basic_percent")
        fields.update(base)
        fields.update(overrides)
        config = WordNetConfig(**fields)
        start = time.time()
        metrics = train_wordnet(config, os.path.join(args.out, name), overwrite=True, verbose=0,
                                checkpoint_every=0, hyperlex=args.hyperlex)
        history = metrics["selection"]["history"]
        monitor = metrics["selection"]["monitor"]
        parts = metrics["evaluation"]["model"]
        others = " ".join(f"{kind} {parts[kind]['val_accuracy']:.4f}"
                          for kind in ("reversed", "sibling") if kind in parts)
        if "hyperlex_spearman" in metrics:
            others += f" hyperlex {metrics['hyperlex_spearman']:.4f}"
        line = (f"{name}: {monitor} {metrics[monitor]:.4f} best epoch "
                f"{metrics['selection']['best_epoch']}/{len(history)} "
                f"[{' '.join(f'{h:.3f}' for h in history[::max(1, len(history) // 10)])}] "
                f"{others} {time.time() - start:.0f} s load {os.getloadavg()[0]:.1f} | "
                f"{json.dumps({k: v for k, v in fields.items() if k != 'reconstruction_nodes'})}")
        print(line, flush=True)
        with open(args.log, "a") as log:
            log.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
