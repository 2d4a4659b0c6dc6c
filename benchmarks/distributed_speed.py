"""Pairs/s of the corpus model on several devices and processes, beside the fused op and gensim.

Trains one epoch of the same corpus (the first `--lines` lines of
news2017) with:

- `keras, JAX, 1 process`: `train-corpus --engine keras` on KERAS_BACKEND=jax
  (one device, no distribution);
- `keras, JAX, 2 devices`: the same with `--distribution data` over 2
  forced host devices in one process
  (`XLA_FLAGS=--xla_force_host_platform_device_count=2`);
- `keras, JAX, 2 processes`: `--distribution data` with two processes on
  localhost (`--coordinator 127.0.0.1:PORT --num-processes 2`), one
  device each;
- `keras, TF, 1 device`: `train-corpus --engine keras` on TensorFlow;
- `fused`: `train-corpus --engine fused` (the C++ op, Hogwild threads on
  every core);
- `gensim`: `Word2Vec(sg=1, negative=1)` with 2 workers on the same lines
  (lowercased, split on spaces) and the same window, subsampling and
  `min_count`, its sentences in memory.

Every `train-corpus` run is a fresh process and its `metrics.json`
`pairs_per_second` (training only: not the vocabulary count, the start-up
or the compile... the first step's tracing is inside `fit`, so inside the
time) is the figure. gensim reports no pair count but the words it
trained after subsampling (`effective_words`); with word2vec's reduced
window a centre word has `window + 1` contexts on average (news2017's
lines are ~540 tokens: their ends hardly count), so its pairs are
estimated as `effective_words * (window + 1)` (its tokenizer, `split()`,
and subsampling formula differ a little from ours). Runs go one after the other, `--repeats`
times, the best of each kept; the load average is printed with each.

Usage (from the repository root):

    python benchmarks/distributed_speed.py [--lines 1000] [--repeats 1]
"""

import argparse
import gzip
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "corpus" / "news2017.txt.gz"
CLI = [sys.executable, "-c", "import sys; from keras_gauss.cli import main; sys.exit(main())"]
SETTINGS = {"window": 5, "sample": 1e-3, "min_count": 5, "batch_size": 2048, "dim": 50}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env(backend, devices=1):
    return dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
                XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")


def train_args(corpus, out):
    args = ["train-corpus", "--corpus", str(corpus), "--out", str(out), "--overwrite",
            "--epochs", "1", "--checkpoint-every", "0", "--quiet"]
    for key, value in SETTINGS.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args


def run_cli(corpus, out, backend, extra=(), devices=1, processes=1):
    """Runs `train-corpus` (`processes` of it for a job); returns the chief's metrics."""
    base = [*CLI, *train_args(corpus, out), *extra]
    if processes == 1:
        done = subprocess.run(base, env=env(backend, devices), capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(done.stderr[-2000:])
    else:
        job = [*base, "--distribution", "data", "--num-processes", str(processes),
               "--coordinator", f"127.0.0.1:{free_port()}"]
        procs = [subprocess.Popen([*job, "--process-id", str(i)], env=env(backend, devices),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(processes)]
        for proc in procs:
            _, err = proc.communicate()
            if proc.returncode:
                raise RuntimeError(err[-2000:])
    return json.loads((Path(out) / "metrics.json").read_text())


def gensim_seconds(corpus):
    from gensim.models import Word2Vec

    with open(corpus, encoding="utf-8") as f:
        sentences = [line.lower().split() for line in f]
    model = Word2Vec(vector_size=SETTINGS["dim"], window=SETTINGS["window"], sg=1, negative=1,
                     sample=SETTINGS["sample"], min_count=SETTINGS["min_count"], workers=2,
                     seed=0)
    model.build_vocab(sentences)
    start = time.perf_counter()
    effective, _ = model.train(sentences, total_examples=len(sentences), epochs=1)
    return time.perf_counter() - start, effective * (SETTINGS["window"] + 1)


ENGINES = [
    ("keras, JAX, 1 process", "jax", ["--engine", "keras"], 1, 1),
    ("keras, JAX, 2 devices (1 process)", "jax",
     ["--engine", "keras", "--distribution", "data"], 2, 1),
    ("keras, JAX, 2 processes (1 device each)", "jax", ["--engine", "keras"], 1, 2),
    ("keras, TF, 1 device", "tensorflow", ["--engine", "keras"], 1, 1),
    ("fused (C++ op, 2 threads)", "tensorflow", ["--engine", "fused"], 1, 1),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        with gzip.open(CORPUS, "rt", encoding="utf-8") as f, open(corpus, "w") as out:
            for i, line in enumerate(f):
                if i >= args.lines:
                    break
                out.write(line)
        best, pairs = {}, {}
        for repeat in range(args.repeats):
            for label, backend, extra, devices, processes in ENGINES:
                metrics = run_cli(corpus, Path(tmp) / "run", backend, extra, devices, processes)
                rate = metrics["pairs_per_second"]
                pairs[label] = metrics["pairs"]
                best[label] = max(best.get(label, 0), rate)
                print(f"repeat {repeat + 1}: {label}: {rate:,.0f} pairs/s "
                      f"({metrics['pairs']:,} pairs, {metrics['train_seconds']:.1f} s); "
                      f"load average {os.getloadavg()[0]:.2f}", flush=True)
            seconds, gensim_pairs = gensim_seconds(corpus)
            rate = gensim_pairs / seconds
            best["gensim (2 workers)"] = max(best.get("gensim (2 workers)", 0), rate)
            print(f"repeat {repeat + 1}: gensim: {rate:,.0f} pairs/s (~{gensim_pairs:,} pairs, "
                  f"{seconds:.2f} s); "
                  f"load average {os.getloadavg()[0]:.2f}", flush=True)
    fused = best["fused (C++ op, 2 threads)"]
    print(f"\n{args.lines:,} lines of news2017, 1 epoch, "
          + ", ".join(f"{k} {v}" for k, v in SETTINGS.items())
          + f"; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
    print("| engine | pairs/s | / fused |\n|---|---|---|")
    for label, rate in best.items():
        print(f"| {label} | {rate:,.0f} | {rate / fused:.3f} |")


if __name__ == "__main__":
    main()
