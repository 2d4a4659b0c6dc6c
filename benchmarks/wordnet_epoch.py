"""One epoch of the WordNet main job, native engine against keras engine and gensim, in one run.

    python benchmarks/wordnet_epoch.py [--repeats 2] [--corpus news2017.txt.gz]

Each repeat runs, each in a fresh process and in turn (so all see the same
machine load):

- `train_wordnet` with the `keras-gauss train-wordnet --no-lemmas` defaults
  (the full noun closure, 82,115 nodes, 735,241 training edges, 50-d
  diagonal, KL, 10 negatives and reversed edges, batch 1024; the synset
  epoch issue 32 names: the main job's word nodes make its epochs 2.9
  times as many edges, three of them instead of ten) for one epoch, with
  `--engine native` (the C++ pair trainer: one thread trains, a second
  draws the next step's negatives), the same with the main job's word
  nodes (`train-wordnet`'s defaults: 2.1 M training edges) and with
  `--engine keras` (`model.fit`): the run's `train_seconds` (the epoch and
  its validation score, without reading WordNet, evaluating or writing),
  and the keras engine again with the negatives' edge lookups in NumPy
  instead of the native library (`closure.NATIVE_LOOKUPS`);
- one epoch of gensim's skip-gram on news2017 (2.0 M tokens,
  `../shared/data/corpus`) with the settings of `corpus_end_to_end.py`
  (50-d, window 5, one negative, no subsampling, min_count 5, 2 workers):
  the seconds of `train` after `build_vocab`.

Prints one row per run with the process's CPU seconds, the best of each, and
the ratios native / gensim and native / keras (target: native <= gensim).
`uptime`'s load average before and after (a 2-core machine shared with other
jobs: compare within a run).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "corpus" / "news2017.txt.gz"

HIERARCHY = r"""
import json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from keras_gauss.hierarchy import closure
from keras_gauss.hierarchy.train import WordNetConfig, train_wordnet
if sys.argv[1] == "keras-numpy":  # the negatives' lookups without the native library
    closure.NATIVE_LOOKUPS = 1 << 62
config = WordNetConfig(epochs=1, engine=sys.argv[1].split("-")[0], reconstruction_nodes=200,
                       include_lemmas=None if sys.argv[1].endswith("-words") else False)
metrics = train_wordnet(config, sys.argv[2], overwrite=True, verbose=0, checkpoint_every=0)
print("RESULT " + json.dumps({"seconds": metrics["train_seconds"],
                              "test_accuracy": metrics["test_accuracy"]}))
"""

GENSIM = r"""
import json, sys, time
from gensim.models import Word2Vec
from gensim.models.word2vec import LineSentence
model = Word2Vec(sg=1, vector_size=50, window=5, negative=1, sample=0, min_count=5,
                 workers=int(sys.argv[2]), seed=0)
model.build_vocab(LineSentence(sys.argv[1]))
start = time.perf_counter()
model.train(LineSentence(sys.argv[1]), total_examples=model.corpus_count, epochs=1)
print("RESULT " + json.dumps({"seconds": time.perf_counter() - start}))
"""


def load_average():
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run(command):
    """The child's RESULT dict, with its CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    if result.returncode or not lines:
        sys.exit(f"wordnet_epoch: {command[:3]} failed:\n{result.stderr[-3000:]}")
    record = json.loads(lines[-1][len("RESULT "):])
    record["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--workers", type=int, default=2, help="gensim's worker threads")
    args = parser.parse_args(argv)
    if not Path(args.corpus).is_file():
        sys.exit(f"wordnet_epoch: error: --corpus {args.corpus} is not a file")
    python = sys.executable
    print(load_average(), flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kg-epoch-") as tmp:
        commands = {
            "native": [python, "-c", HIERARCHY, "native", str(Path(tmp) / "native")],
            "native-words": [python, "-c", HIERARCHY, "native-words", str(Path(tmp) / "words")],
            "keras": [python, "-c", HIERARCHY, "keras", str(Path(tmp) / "keras")],
            "keras-numpy": [python, "-c", HIERARCHY, "keras-numpy", str(Path(tmp) / "keras")],
            "gensim": [python, "-c", GENSIM, args.corpus, str(args.workers)],
        }
        run(commands["native"][:3] + ["native", str(Path(tmp) / "warm")])  # builds the library
        for repeat in range(args.repeats):
            for name, command in commands.items():
                record = run(command)
                rows.append((name, record))
                print(f"  repeat {repeat + 1}: {name:<11} {record['seconds']:6.2f} s "
                      f"(process {record['cpu']:.1f} CPU-s)"
                      + (f", test accuracy {record['test_accuracy']:.4f}"
                         if "test_accuracy" in record else "") + f"; {load_average()}",
                      flush=True)
    best = {name: min(r["seconds"] for n, r in rows if n == name) for name in commands}
    print(f"\none epoch, best of {args.repeats}:")
    labels = {"native": "train-wordnet epoch, --engine native",
              "keras": "train-wordnet epoch, --engine keras",
              "keras-numpy": "  the same, negatives' lookups in NumPy",
              "native-words": "the main job's epoch with word nodes, native",
              "gensim": f"gensim skip-gram epoch of news2017 ({args.workers} workers)"}
    for name, seconds in best.items():
        print(f"  {labels[name]:<52} {seconds:7.2f} s")
    print(f"native / gensim {best['native'] / best['gensim']:.2f} (target <= 1), "
          f"with word nodes {best['native-words'] / best['gensim']:.2f} (three epochs, not ten), "
          f"native / keras {best['native'] / best['keras']:.2f}, keras with native lookups / "
          f"NumPy lookups {best['keras'] / best['keras-numpy']:.2f}; {load_average()}")


if __name__ == "__main__":
    main()
