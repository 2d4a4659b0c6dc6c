"""Two source trees of keras-gauss, the same commands, interleaved: did a change slow training?

Runs `keras-gauss train-corpus` (the default, native engine, from the .gz)
and `keras-gauss train-wordnet --root mammal.n.01` as whole processes from
this tree and from another one (e.g. main's, unpacked with `git archive`),
one after the other in every repeat, with gensim's `Word2Vec` on the same
corpus as the peer, and prints the best wall seconds of each and their
ratios, with the load average. The other tree runs through an overlay
(its `keras_gauss/` with its `hierarchy/` and `pipelines/` as
subpackages, as installed) on `PYTHONPATH`, with this environment's
packages.

Usage (from the repository root):

    git archive main | tar -x -C /tmp/main-tree
    python benchmarks/tree_against_tree.py /tmp/main-tree [--repeats 5]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "corpus" / "news2017.txt.gz"

GENSIM = """
import sys
from gensim.models import Word2Vec
from gensim.models.word2vec import LineSentence
Word2Vec(LineSentence(sys.argv[1]), vector_size=50, window=5, sg=1, negative=1, sample=0,
         min_count=5, workers=2, seed=0, epochs=1)
"""


def overlay(tree, root):
    """A directory whose `keras_gauss` package is `tree`'s, with `tree`'s
    `hierarchy/` and `pipelines/` as its subpackages (the install's mapping)."""
    package = Path(root) / "keras_gauss"
    package.mkdir(parents=True)
    for entry in (Path(tree) / "keras_gauss").iterdir():
        (package / entry.name).symlink_to(entry.resolve())
    for name in ("hierarchy", "pipelines"):
        (package / name).symlink_to((Path(tree) / name).resolve())
    return str(root)


def wall(command, env):
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"{command[:4]} failed: {result.stderr[-2000:]}")
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("other", help="the other source tree (e.g. main's)")
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": dict(os.environ),
                 "other tree": {**os.environ, "PYTHONPATH": overlay(args.other,
                                                                  Path(tmp) / "overlay")}}
        jobs = {
            "train-corpus": ["train-corpus", "--corpus", args.corpus, "--window", "5",
                             "--sample", "0", "--epochs", "1", "--threads", "2"],
            "train-wordnet mammals": ["train-wordnet", "--root", "mammal.n.01", "--dim", "10",
                                      "--epochs", "20", "--batch-size", "64"]}
        commands = [("gensim", [sys.executable, "-c", GENSIM, args.corpus], trees["this tree"])]
        for job, flags in jobs.items():
            for tree, env in trees.items():
                out = str(Path(tmp) / f"{job}-{tree}".replace(" ", "-"))
                commands.append((f"{job}, {tree}", [sys.executable, "-m", "keras_gauss.cli",
                                                    *flags, "--out", out, "--overwrite", "-q"],
                                 env))
        for _, command, env in commands[1:]:
            wall(command, env)  # builds (or verifies) the compiled op and native library
        best = {}
        for repeat in range(args.repeats):
            times = {name: wall(command, env) for name, command, env in commands}
            for name, seconds in times.items():
                best[name] = min(best.get(name, float("inf")), seconds)
            print(f"repeat {repeat + 1}: " + ", ".join(f"{n} {s:.2f} s" for n, s in times.items())
                  + f"; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}",
                  flush=True)
    print(f"\n{'process':<36} {'best s':>8} {'/ other tree':>13} {'/ gensim':>9}")
    for name, seconds in best.items():
        job = name.rsplit(", ", 1)[0]
        other = best.get(f"{job}, other tree")
        print(f"{name:<36} {seconds:8.2f} "
              f"{(f'{seconds / other:.3f}' if other else ''):>13} {seconds / best['gensim']:9.2f}")
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
