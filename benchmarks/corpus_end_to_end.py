"""End to end: `keras-gauss train-corpus` against gensim, whole processes from the .gz.

Both read and tokenize the same gzipped corpus themselves, count its
vocabulary (`min_count=5`), train one epoch (50-d, window 5 reduced, one
negative, no subsampling, 2 threads/workers) and exit; ours also writes its
run (`model.keras`, vocabulary, metrics). Each process is timed from start
to exit (wall seconds, and peak memory of the child), interleaved, best of
`--repeats`, with the load average.

Ours runs three ways: with the default settings (a checkpoint every 10
minutes: none is due in a short run, but the checkpointing path runs), with
`--checkpoint-every 0` (no checkpoints), and with `--checkpoint-every 1e-9`
(a checkpoint after every chunk of 2^20 tokens: the cost of checkpoints,
written by a background thread, at the most frequent they can be).

Usage (from the repository root):

    python benchmarks/corpus_end_to_end.py [--repeats 3] [--corpus news2017.txt.gz]

Target (issue 15): ours / gensim <= 1.25.
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
         min_count=5, workers=int(sys.argv[2]), seed=0, epochs=1)
"""


def run(command):
    """Wall seconds, CPU seconds and peak resident MB of one process."""
    with tempfile.NamedTemporaryFile("r") as usage:
        start = time.perf_counter()
        result = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", usage.name]
                                + command, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if result.returncode:
            raise SystemExit(f"{command[:3]} failed: {result.stderr[-2000:]}")
        user, system, peak = usage.read().split()[-3:]
    return seconds, float(user) + float(system), int(peak) / 1024


def load_average():
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        ours = [python, "-m", "keras_gauss", "train-corpus", "--corpus", args.corpus,
                "--out", str(Path(tmp) / "run"), "--overwrite", "-q", "--window", "5",
                "--sample", "0", "--epochs", "1", "--threads", str(args.threads)]
        theirs = [python, "-c", GENSIM, args.corpus, str(args.threads)]
        run(ours)  # builds (or verifies) the native library once
        commands = (("gensim", theirs), ("train-corpus (defaults)", ours),
                    ("train-corpus, no checkpoints", ours + ["--checkpoint-every", "0"]),
                    ("train-corpus, every chunk", ours + ["--checkpoint-every", "1e-9"]))
        best = {}
        for repeat in range(args.repeats):
            line = []
            for name, command in commands:
                seconds, cpu, rss = run(command)
                if seconds < best.get(name, (float("inf"),))[0]:
                    best[name] = (seconds, cpu, rss)
                line.append(f"{name} {seconds:.2f} s ({cpu:.1f} CPU-s)")
            print(f"repeat {repeat + 1}: " + ", ".join(line) + f"; {load_average()}",
                  flush=True)
    base = best["gensim"][0]
    print(f"\n{'process':<30} {'best s':>8} {'CPU-s':>7} {'peak MB':>8} {'/ gensim':>9}")
    for name, (seconds, cpu, rss) in best.items():
        print(f"{name:<30} {seconds:8.2f} {cpu:7.1f} {rss:8.0f} {seconds / base:9.2f}")
    plain = best["train-corpus, no checkpoints"][0]
    print(f"checkpoint cost: defaults / no checkpoints "
          f"{best['train-corpus (defaults)'][0] / plain:.3f}, every chunk / no checkpoints "
          f"{best['train-corpus, every chunk'][0] / plain:.3f}")
    print(f"target: train-corpus / gensim <= 1.25. {load_average()}")


if __name__ == "__main__":
    main()
