"""Pairs drawn on the device against pairs from the host, and the native trainer.

Runs `train-corpus` (one process each, as a user runs it) on news2017 with
the news recipe (`benchmarks/corpus_quality.py`'s `RECIPE`: batch 16,384,
sample 1e-3, window 15 and its learning rate; margin 0.5, C = 4, one
negative, 50-d EL) for `--epochs` epochs, and prints the pairs/s of the training (the
run's `metrics.json`: pairs over `train_seconds`, which counts `model.fit`
with its compilation, not the reading of the corpus) of:

- `native`: `--engine native` (the C++ trainer, all cores);
- `keras host`: `--engine keras --pairs host` (the `tf.data` stream);
- `keras device`: `--engine keras --pairs device` (`SkipGramSampler`
  inside the compiled step),

the keras rows on each of `--backends`, with the load average before and
after each row. With `--evaluate DIR` each run is also scored on
WordSim353 and SimLex-999 (`keras-gauss evaluate`, cosine of the means).

Usage (from the repository root):

    python benchmarks/device_pairs_speed.py [--epochs 1] [--backends tensorflow jax]
        [--rows native host device] [--evaluate ../shared/data/similarity]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpus_quality import RECIPE as NEWS_RECIPE

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "corpus" / "news2017.txt.gz"
RECIPE = [arg for name in ("batch_size", "learning_rate", "sample", "window")
          for arg in (f"--{name.replace('_', '-')}", str(NEWS_RECIPE[name]))]
RECIPE += ["--margin", "0.5", "--max-norm", "4", "--seed", "0"]


def train(out, engine, pairs, backend, args):
    argv = [sys.executable, "-m", "keras_gauss", "train-corpus", "--corpus", str(args.corpus),
            "--out", str(out), "--overwrite", "--quiet", "--epochs", str(args.epochs),
            "--checkpoint-every", "0", *RECIPE, "--engine", engine]
    if engine == "keras":
        argv += ["--pairs", pairs]
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    before, start = os.getloadavg()[0], time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    metrics = json.loads((out / "metrics.json").read_text())
    row = {"engine": engine, "pairs": pairs if engine == "keras" else "native",
           "backend": backend if engine == "keras" else "-",
           "pairs_trained": metrics["pairs"], "train_seconds": metrics["train_seconds"],
           "pairs_per_s": metrics["pairs_per_second"], "final_loss": metrics["final_loss"],
           "process_seconds": time.perf_counter() - start,
           "load": f"{before:.1f} -> {os.getloadavg()[0]:.1f}"}
    if args.evaluate:
        files = [str(Path(args.evaluate) / f"{name}.tsv") for name in ("wordsim353", "simlex999")]
        subprocess.run([sys.executable, "-m", "keras_gauss", "evaluate", str(out),
                        "--similarity", *files], env=env, capture_output=True, text=True,
                       check=True)
        scores = json.loads((out / "eval.json").read_text())
        row["scores"] = scores
    print(json.dumps(row), flush=True)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax"])
    parser.add_argument("--rows", nargs="+", default=["native", "host", "device"])
    parser.add_argument("--evaluate", default=None, metavar="DIR",
                        help="the similarity files' folder: score every run")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.rows:
            backends = ["tensorflow"] if name == "native" else args.backends
            for backend in backends:
                engine = "native" if name == "native" else "keras"
                rows.append(train(Path(tmp) / f"{name}-{backend}", engine, name, backend, args))
    print("\n| engine, pairs | backend | M pairs/s | train s | pairs | final loss | load |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['engine']}, {row['pairs']} | {row['backend']} | "
              f"{row['pairs_per_s'] / 1e6:.3f} | {row['train_seconds']:.1f} | "
              f"{row['pairs_trained']:,} | {row['final_loss']:.4f} | {row['load']} |")


if __name__ == "__main__":
    sys.exit(main())
