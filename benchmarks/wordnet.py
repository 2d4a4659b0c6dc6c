"""WordNet hierarchy targets: accuracy, reconstruction, HyperLex, Baroni 2012.

    python benchmarks/wordnet.py [--epochs 20] [--mammal-epochs 100] [--out runs/bench]

Trains (1) the full noun closure, 50-d diagonal, with the Vendrov et al. split
(4,000 validation and 4,000 test edges held out, none of them in training)
and scores HyperLex nouns and Baroni 2012 with it; (2) the mammal subtree at
10-d on all its edges, for reconstruction MAP. Prints a table beside the
published anchors. The data files are read from `../shared/data`.
"""

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from keras_gauss.hierarchy.train import WordNetConfig, train_wordnet  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

# settings of the two runs (also the README's)
FULL = WordNetConfig()  # the defaults of `keras-gauss train-wordnet`
MAMMALS = WordNetConfig(root="mammal.n.01", dim=10, epochs=100, batch_size=64,
                        val_size=0, test_size=0, reconstruction_nodes=None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=FULL.epochs)
    parser.add_argument("--mammal-epochs", type=int, default=MAMMALS.epochs)
    parser.add_argument("--out", default=None, help="keep the runs here (default: temporary)")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="kg-wordnet-"))

    full = train_wordnet(dataclasses.replace(FULL, epochs=args.epochs), out / "full",
                         hyperlex=DATA / "hyperlex" / "hyperlex-nouns.txt",
                         entailment=DATA / "entailment" / "baroni2012.tsv",
                         overwrite=True, verbose=0)
    one_negative = train_wordnet(dataclasses.replace(FULL, epochs=1, negatives=1,
                                                     reversed_negatives=False),
                                 out / "epoch", overwrite=True, verbose=0)
    mammals = train_wordnet(dataclasses.replace(MAMMALS, epochs=args.mammal_epochs),
                            out / "mammals", overwrite=True, verbose=0)

    rows = [
        ("test accuracy, full nouns, 50-d", full["test_accuracy"],
         ">= .923 (DOE .923, order emb. .906, word2gauss .866)"),
        ("  validation accuracy", full["val_accuracy"], "threshold chosen here"),
        ("HyperLex nouns, Spearman", full.get("hyperlex_spearman"),
         ">= .59 (DOE .590, Poincare .512, word2gauss .192)"),
        ("Baroni 2012 AP (KL)", full.get("baroni2012_ap"), ">= .80 (paper .80)"),
        ("Baroni 2012 best F1 (KL)", full.get("baroni2012_best_f1"), "paper .79"),
        ("reconstruction MAP, full nouns", full["map"],
         f"{full['reconstruction_queries']} sampled query nodes"),
        ("reconstruction MAP, mammals, 10-d", mammals["map"], ">= .90"),
        ("  mean rank, mammals", mammals["mean_rank"], ""),
        ("s / epoch, full closure, 1 negative", one_negative["seconds_per_epoch"], "<= 30 s"),
        ("s / epoch, full closure, 5 neg. + reversed", full["seconds_per_epoch"], ""),
    ]
    print(f"{'measure':<44}{'ours':>8}  target / anchors")
    for name, value, note in rows:
        shown = "n/a" if value is None else f"{value:.3f}"
        print(f"{name:<44}{shown:>8}  {note}")
    print(f"runs in {out}")


if __name__ == "__main__":
    main()
