"""Two source trees of keras-gauss, the same commands, interleaved: did a change slow training?

Runs `keras-gauss train-corpus` (the default, native engine, from the .gz)
and `keras-gauss train-wordnet --root mammal.n.01` as whole processes from
this tree and from another one (e.g. main's, unpacked with `git archive`),
one after the other in every repeat (the trees taking turns going first),
with gensim's `Word2Vec` on the same corpus as the peer, and prints the
best wall and CPU seconds of each and their ratios, with the load average
(on a loaded machine the CPU seconds are the steadier figure). The other tree runs through an overlay
(its `keras_gauss/` with its `hierarchy/` and `pipelines/` as
subpackages, as installed) on `PYTHONPATH`, with this environment's
packages.

Usage (from the repository root):

    git archive main | tar -x -C /tmp/main-tree
    python benchmarks/tree_against_tree.py /tmp/main-tree [--repeats 5]
"""

import argparse
import os
import resource
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


def timed(command, env):
    """Wall and CPU seconds (user + system) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode:
        raise SystemExit(f"{command[:4]} failed: {result.stderr[-2000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return seconds, cpu


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
                commands.append((f"{job}, {tree}", [sys.executable, "-m", "keras_gauss",
                                                    *flags, "--out", out, "--overwrite", "-q"],
                                 env))
        for _, command, env in commands[1:]:
            timed(command, env)  # builds (or verifies) the compiled op and native library
        best = {}
        for repeat in range(args.repeats):
            # The trees take turns going first (the first of a pair pays for a cold cache).
            order = commands if repeat % 2 == 0 else [commands[0], *[
                pair[i] for pair in zip(commands[1::2], commands[2::2]) for i in (1, 0)]]
            times = {name: timed(command, env) for name, command, env in order}
            for name, (seconds, cpu) in times.items():
                old = best.get(name, (float("inf"), float("inf")))
                best[name] = (min(old[0], seconds), min(old[1], cpu))
            print(f"repeat {repeat + 1}: " + ", ".join(f"{n} {s:.2f} s ({c:.1f} CPU-s)"
                                                      for n, (s, c) in times.items())
                  + f"; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}",
                  flush=True)
    print(f"\n{'process':<36} {'best s':>8} {'CPU-s':>7} {'/ other (s)':>12} "
          f"{'/ other (CPU)':>14} {'/ gensim':>9}")
    for name, (seconds, cpu) in best.items():
        job = name.rsplit(", ", 1)[0]
        other = best.get(f"{job}, other tree")
        ratios = (f"{seconds / other[0]:12.3f} {cpu / other[1]:14.3f}" if other
                  else f"{'':>12} {'':>14}")
        print(f"{name:<36} {seconds:8.2f} {cpu:7.1f} {ratios} "
              f"{seconds / best['gensim'][0]:9.2f}")
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
