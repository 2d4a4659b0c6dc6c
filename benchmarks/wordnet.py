"""Hierarchy targets: held-out edges a lookup cannot pass, HyperLex, Baroni 2012, reconstruction.

    python benchmarks/wordnet.py [--epochs 10] [--poincare-seconds 600]
        [--only closure,reduction,edam,mammals,speed] [--out runs/bench]

Trains (1) the full noun closure, 50-d diagonal, with the Vendrov et al.
split (`--split closure`, 4,000 validation and 4,000 test edges, each implied
by two training edges) and scores HyperLex nouns and Baroni 2012 with it;
(2) the same with `--split reduction` (edges of the transitive reduction, which
no training edge implies); (3) the EDAM ontology (a second real taxonomy,
from the `edam-ontology` package) with `--split closure` and `--split
reduction`, each with the KL defaults and again with `--energy containment`;
(4) the mammal
subtree at 10-d on all its edges, for reconstruction MAP; (5) one epoch with
one negative, for speed. Every split is scored on three kinds of negatives on
the same positives (random corruption, reversed edge, general node replaced by
a sibling) by our model, the trivial baselines (lookup in the closure of the
training edges; depth difference) and gensim's PoincareModel (50-d) trained on
the run's own training edges (`RUN/split/train.tsv`) in the same run for
`--poincare-seconds` (at least one epoch; the table says how long). Thresholds are chosen on validation. Prints
the tables and `uptime`'s load average. Data files are read from `../shared/data`.
"""

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
from poincare_peer import train_poincare  # noqa: E402

from keras_gauss.hierarchy.evaluate import split_classification  # noqa: E402
from keras_gauss.hierarchy.train import WordNetConfig, train_wordnet  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

# settings of the runs (also the README's)
FULL = WordNetConfig()  # the defaults of `keras-gauss train-wordnet`
MAMMALS = WordNetConfig(root="mammal.n.01", dim=10, epochs=100, batch_size=64,
                        val_size=0, test_size=0, reconstruction_nodes=None)
RUNS = ("closure", "reduction", "edam", "mammals", "speed")
SCORERS = (("model", "keras-gauss (KL)"), ("containment", "  --energy containment"),
           ("poincare", "gensim Poincare"),
           ("closure_lookup", "closure lookup"), ("depth_difference", "depth difference"))
KINDS = ("random", "reversed", "sibling")


def held_out_table(title, evaluation):
    """Test (validation) accuracy of every scorer on every kind of negatives."""
    sizes = evaluation["sizes"]
    lines = [f"{title}: --split {evaluation['split']}, "
             f"{sizes['test'][0]:,} test positives ({evaluation['eligible']:,} eligible edges)",
             f"{'test (val) accuracy':<22}" + "".join(f"{k + ' neg.':>18}" for k in KINDS)]
    for key, label in SCORERS:
        if key not in evaluation:
            continue
        cells = "".join(f"{evaluation[key][k]['test_accuracy']:>10.3f} ({evaluation[key][k]['val_accuracy']:.3f})"
                        if k in evaluation[key] else f"{'n/a':>18}" for k in KINDS)
        lines.append(f"{label:<22}{cells}")
    if "poincare" in evaluation:
        info = evaluation["poincare"]["training"]
        epochs = f"{info['epochs']} epoch" + ("s" if info["epochs"] != 1 else "")
        lines.append(f"  (Poincare: {info['dim']}-d, {epochs} in "
                     f"{info['train_seconds']:.0f} s, {info['negative']} negatives, "
                     f"burn-in {info['burn_in']}; ours trained {evaluation['model_seconds']:.0f} s)")
    return "\n".join(lines)


def poincare_evaluation(run_dir, seconds, seed=0):
    """gensim's Poincaré model trained on a run's own training edges
    (`RUN/split/train.tsv`) for about `seconds`, scored on the run's held-out
    parts (`RUN/split/PART.tsv`) as the run's own scorers are."""
    split = Path(run_dir) / "split"
    index = {}

    def ids(rows):
        return np.array([[index.setdefault(a, len(index)), index.setdefault(b, len(index))]
                         for a, b in rows], dtype=np.int64).reshape(-1, 2)

    def rows(path):
        return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]

    train = ids(rows(split / "train.tsv"))
    parts = {}
    for path in sorted(split.glob("*.tsv")):
        if path.stem != "train":
            labelled = rows(path)
            parts[path.stem] = (ids([r[:2] for r in labelled if r[2] == "1"]),
                                ids([r[:2] for r in labelled if r[2] == "0"]))
    score, info = train_poincare(train, list(index), seconds=seconds, seed=seed)
    return {**split_classification(parts, score), "training": info}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=FULL.epochs)
    parser.add_argument("--mammal-epochs", type=int, default=MAMMALS.epochs)
    parser.add_argument("--poincare-seconds", type=float, default=600.0,
                        help="gensim PoincareModel training budget per split (0: skip)")
    parser.add_argument("--only", default=",".join(RUNS),
                        help=f"comma-separated runs out of {','.join(RUNS)}")
    parser.add_argument("--out", default=None, help="keep the runs here (default: temporary)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    out = Path(args.out or tempfile.mkdtemp(prefix="kg-wordnet-"))
    full = dataclasses.replace(FULL, epochs=args.epochs)
    tables, rows = [], []

    def held_out(name, config, poincare_seconds=args.poincare_seconds, containment=False,
                 **files):
        metrics = train_wordnet(config, out / name, overwrite=True, verbose=0, **files)
        evaluation = {**metrics["evaluation"], "model_seconds": metrics["train_seconds"]}
        if containment:  # the same split (the seed's), the other energy's defaults
            other = train_wordnet(dataclasses.replace(config, energy="containment"),
                                  out / f"{name}-containment", overwrite=True, verbose=0)
            if (out / name / "split" / "test.tsv").read_bytes() != (
                    out / f"{name}-containment" / "split" / "test.tsv").read_bytes():
                raise RuntimeError(f"{name}: the containment run split the edges differently")
            evaluation["containment"] = other["evaluation"]["model"]
        if poincare_seconds > 0:
            evaluation["poincare"] = poincare_evaluation(out / name, poincare_seconds,
                                                         config.seed)
        tables.append(held_out_table(name, evaluation))
        return metrics

    if "closure" in only:
        closure = held_out("closure", full, hyperlex=DATA / "hyperlex" / "hyperlex-nouns.txt",
                           entailment=DATA / "entailment" / "baroni2012.tsv")
        rows += [
            ("test accuracy, --split closure, 50-d", closure["test_accuracy"],
             ">= .923 (DOE .923, order emb. .906, word2gauss .866); lookup 1.000"),
            ("HyperLex nouns, Spearman", closure.get("hyperlex_spearman"),
             ">= .59 (DOE .590, Poincare .512, word2gauss .192); WordNet lookup .651"),
            ("Baroni 2012 AP (KL)", closure.get("baroni2012_ap"),
             ">= .80 (paper .80); WordNet lookup .996"),
            ("Baroni 2012 best F1 (KL)", closure.get("baroni2012_best_f1"), "paper .79"),
            ("reconstruction MAP, full nouns", closure["map"],
             f"{closure['reconstruction_queries']} sampled query nodes"),
            ("s / epoch, the main job's closure", closure["seconds_per_epoch"],
             f"{closure['num_train_edges']:,} training edges"),
        ]
    if "reduction" in only:
        reduction = held_out("reduction", dataclasses.replace(full, split="reduction"))
        rows.append(("test accuracy, --split reduction, 50-d", reduction["test_accuracy"],
                     ">= .975 (issue 11; Poincare .973)"))
    if "edam" in only:
        from keras_gauss.hierarchy.benchmark_data import write_edam_edges

        edges = out / "edam.tsv"
        out.mkdir(parents=True, exist_ok=True)
        write_edam_edges(edges)
        # The command's defaults of each split (`--epochs` given: that).
        for split in ("closure", "reduction"):
            edam = held_out(f"edam-{split}",
                            dataclasses.replace(full, edges=str(edges), split=split,
                                                batch_size=256),
                            poincare_seconds=min(args.poincare_seconds, 120), containment=True)
            rows.append((f"test accuracy, EDAM, --split {split}", edam["test_accuracy"], ""))
    if "mammals" in only:
        mammals = train_wordnet(dataclasses.replace(MAMMALS, epochs=args.mammal_epochs),
                                out / "mammals", overwrite=True, verbose=0)
        rows += [("reconstruction MAP, mammals, 10-d", mammals["map"], ">= .90"),
                 ("  mean rank, mammals", mammals["mean_rank"], "")]
    if "speed" in only:
        one_negative = train_wordnet(dataclasses.replace(FULL, epochs=1, negatives=1,
                                                         reversed_negatives=False),
                                     out / "epoch", overwrite=True, verbose=0)
        rows.append(("s / epoch, full closure, 1 negative", one_negative["seconds_per_epoch"],
                     "<= 30 s"))

    for table in tables:
        print(table, end="\n\n")
    print(f"{'measure':<44}{'ours':>8}  target / anchors")
    for name, value, note in rows:
        shown = "n/a" if value is None else f"{value:.3f}"
        print(f"{name:<44}{shown:>8}  {note}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; runs in {out}")


if __name__ == "__main__":
    main()
