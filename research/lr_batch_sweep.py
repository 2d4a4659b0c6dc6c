"""Research: the learning rate against the batch size for large-batch corpus training, validation pairs only.

Trains news2017 with the 20-epoch recipe's settings (sample 1e-3, window 15,
EL, one negative; `benchmarks/corpus_quality.py`'s RECIPE) at each named
`batch:lr` point and scores it on the validation pairs:

- `men`: MEN (all its covered pairs; relatedness, like WordSim353, but
  another data set), and
- `simlex_val`: a fixed half of SimLex-999 (`split_pairs`, seed 0: 500 of
  its 999 pairs), for similarity.

The choice is made on `val` = the mean of the two rhos (cosine of means).
The test sets (WordSim353, the other SimLex half `simlex_test`, and the
whole SimLex-999 the target is stated on) are scored only with `--test`,
which is run once, for the chosen rule. One JSON line per run is appended
to `--log`. A point `batch:lr:acc[:eps]` also sets AdaGrad's initial
accumulator (`CorpusConfig.initial_accumulator`; default 1e-6) and epsilon
(`CorpusConfig.epsilon`; 1e-7).

`--engine native --threads 1` is the same large-batch step as the keras
engine with device pairs (one AdaGrad update per touched row with the
gradient of the batch-mean loss, the same epsilon, initial accumulator and
projections; `keras_gauss/fused/skipgram_core.h` `Worker::Flush`), about 20
times faster on this CPU; it draws a minibatch from a shuffled chunk of
2^20 tokens instead of from random positions of the whole corpus. `--engine
keras` runs the device-pairs trainer itself (set `KERAS_BACKEND=jax`).

    nice -n 10 python research/lr_batch_sweep.py --epochs 5 --engine native \\
        --threads 1 16384:0.4 65536:2.0 262144:2.0
"""

import argparse
import dataclasses
import json
import os
import runpy
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CORPUS = DATA / "corpus" / "news2017.txt.gz"
SIM = DATA / "similarity"
# The news recipe's settings but its epochs (`benchmarks/corpus_quality.py`).
RECIPE = {name: value for name, value in runpy.run_path(str(
    Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_quality.py"))["RECIPE"].items()
    if name != "epochs"}


def split_pairs(lines, seed=0):
    """The data lines of a similarity file cut in two fixed halves:
    `(validation, test)`, the first `ceil(n / 2)` of a seeded permutation
    and the rest (each in file order).

    >>> split_pairs(["a\\tb\\t1", "c\\td\\t2", "e\\tf\\t3"], seed=0)[0]
    ['a\\tb\\t1', 'c\\td\\t2']
    """
    import numpy as np

    order = np.random.default_rng(seed).permutation(len(lines))
    half = set(order[: (len(lines) + 1) // 2].tolist())
    return ([x for i, x in enumerate(lines) if i in half],
            [x for i, x in enumerate(lines) if i not in half])


def eval_files(directory):
    """`{name: path}` of the validation files and, apart, of the test files,
    written to `directory` where they are halves."""
    lines = [x for x in (SIM / "simlex999.tsv").read_text().splitlines()
             if x.strip() and not x.startswith("#")]
    val, test = split_pairs(lines)
    paths = {}
    for name, part in (("simlex_val", val), ("simlex_test", test)):
        paths[name] = Path(directory) / f"{name}.tsv"
        paths[name].write_text("\n".join(part) + "\n")
    validation = {"men": SIM / "men.tsv", "simlex_val": paths["simlex_val"]}
    testing = {"wordsim353": SIM / "wordsim353.tsv", "simlex999": SIM / "simlex999.tsv",
               "simlex_test": paths["simlex_test"]}
    return validation, testing


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("points", nargs="*", metavar="BATCH:LR[:ACC[:EPS]]")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--engine", default="native", choices=("native", "keras"))
    parser.add_argument("--threads", type=int, default=1, help="native engine threads")
    parser.add_argument("--setting", default="{}",
                        help="JSON of CorpusConfig fields over the recipe's "
                             '(e.g. \'{"window": 10, "sample": 1e-4}\')')
    parser.add_argument("--test", action="store_true",
                        help="score the test sets too (once, for the chosen rule)")
    parser.add_argument("--log", default=str(Path(__file__).with_suffix(".log")))
    parser.add_argument("--keep", default=None,
                        help="keep each run in DIR/BATCH_LR_sSEED (default: one temp run)")
    parser.add_argument("--score", nargs="+", default=None, metavar="RUN",
                        help="score these kept runs instead of training (with --test: "
                             "the test sets too)")
    args = parser.parse_args(argv)

    from keras_gauss.pipelines import build_vocabulary
    from keras_gauss.pipelines.evaluate import similarity
    from keras_gauss.pipelines.train import CorpusConfig
    from keras_gauss.pipelines.train import train_corpus

    tmp = Path(tempfile.mkdtemp(prefix="lr_batch_"))
    validation, testing = eval_files(tmp)
    files = {**validation, **(testing if args.test else {})}
    if args.score:
        for run in args.score:
            row = {"run": run, **{name: round(similarity(run, path)["spearman_m"], 4)
                                  for name, path in files.items()}}
            row["val"] = round((row["men"] + row["simlex_val"]) / 2, 4)
            print(json.dumps(row), flush=True)
            with open(args.log, "a") as log:
                log.write(json.dumps(row) + "\n")
        return
    setting = json.loads(args.setting)
    base = CorpusConfig(**{**RECIPE, **setting}, epochs=args.epochs, engine=args.engine,
                        threads=args.threads if args.engine == "native" else 0,
                        **({"pairs": "device"} if args.engine == "keras" else {}))
    vocab = build_vocabulary(str(CORPUS), min_count=base.min_count, max_size=base.max_size)
    backend = os.environ.get("KERAS_BACKEND", "") if args.engine == "keras" else ""
    for point in args.points:
        batch, lr, *acc = point.split(":")
        extra = dict(zip(("initial_accumulator", "epsilon"), map(float, acc)))
        for seed in args.seeds:
            config = dataclasses.replace(base, batch_size=int(batch), learning_rate=float(lr),
                                         seed=seed, **extra)
            label = f"{batch}_{lr}" + "".join(f"_{k}{v}" for k, v in zip("ae", acc)) + f"_s{seed}"
            run = (Path(args.keep) / label if args.keep else tmp / "run")
            start = time.perf_counter()
            metrics = train_corpus(config, str(CORPUS), run, overwrite=True, verbose=0,
                                   vocab=vocab)
            row = {"engine": args.engine + (f"/{backend}" if backend else ""),
                   "threads": config.threads, "epochs": args.epochs, "batch": int(batch),
                   **({"setting": setting} if setting else {}),
                   "lr": float(lr), **dict(zip(("acc", "eps"), map(float, acc))), "seed": seed,
                   "seconds": round(time.perf_counter() - start, 1),
                   "loss": round(metrics.get("final_loss", float("nan")), 4)}
            for name, path in files.items():
                row[name] = round(similarity(run, path)["spearman_m"], 4)
            row["val"] = round((row["men"] + row["simlex_val"]) / 2, 4)
            print(json.dumps(row), flush=True)
            with open(args.log, "a") as log:
                log.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
