"""Time of WordNet training epochs: this checkout against another one, in one run.

    python benchmarks/wordnet_epoch.py --baseline DIR [--epochs 1] [--repeats 2]

`DIR` is another checkout of keras-gauss, for example today's main:
`git -C /path/to/main worktree add /tmp/base 656196b`. Each repeat runs
`train_wordnet` with the `keras-gauss train-wordnet` defaults (the full noun
closure, 50-d, 5 negatives + the reversed edge, batch 1024) for `--epochs`
epochs in a fresh process, first with the baseline's code, then with this
checkout's, alternately, so both see the same machine load. The compiled
kernels are built (or loaded from their cache) before the timed part. Reconstruction
is scored on 200 query nodes (not 2,000) to keep the run short; it is outside
the timed training anyway.

Prints one row per run and a summary: the training (`fit`) wall, user and
system seconds, its minor page faults, the whole process's user and system
seconds, test accuracy after training, and the ratio ours / baseline of the
best wall and of the CPU seconds (user + system) of `fit`. Targets: ratio
<= 1/3, system time under 10% of user time. `uptime`'s load average is printed
before and after (2-core machine shared with other jobs: compare the ratios).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

# Runs in the child: times `fit` inside `train_wordnet` with getrusage.
CHILD = r"""
import json, os, resource, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras
record = {}
fit = keras.Model.fit
def timed_fit(self, *args, **kwargs):
    r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
    try:
        return fit(self, *args, **kwargs)
    finally:
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        record.update(fit_wall=time.perf_counter() - t0,
                      fit_user=r1.ru_utime - r0.ru_utime,
                      fit_sys=r1.ru_stime - r0.ru_stime,
                      fit_minflt=r1.ru_minflt - r0.ru_minflt)
keras.Model.fit = timed_fit
import keras_gauss
from keras_gauss.fused import build
build.load()  # compile (or load from the cache) the C++ library before timing
from keras_gauss.hierarchy.train import WordNetConfig, train_wordnet
config = WordNetConfig(epochs=int(sys.argv[1]), reconstruction_nodes=200)
metrics = train_wordnet(config, sys.argv[2], overwrite=True, verbose=0)
record.update(test_accuracy=metrics["test_accuracy"], final_loss=metrics["final_loss"],
              package=os.path.dirname(keras_gauss.__file__))
print("RESULT " + json.dumps(record))
"""


def overlay(tree, root):
    """A directory whose `keras_gauss` package is `tree`'s, with `tree`'s
    `hierarchy/` and `pipelines/` as its subpackages (the install's mapping)."""
    package = Path(root) / "keras_gauss"
    package.mkdir(parents=True)
    for entry in (Path(tree) / "keras_gauss").iterdir():
        (package / entry.name).symlink_to(entry)
    for name in ("hierarchy", "pipelines"):
        (package / name).symlink_to(Path(tree) / name)
    return str(root)


def run(path, epochs, out):
    env = dict(os.environ, PYTHONPATH=path, PYTHONNOUSERSITE="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, "-c", CHILD, str(epochs), out], env=env,
                            cwd=path, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    if result.returncode or not lines:
        sys.exit(f"wordnet_epoch: the run in {path} failed:\n{result.stderr[-3000:]}")
    record = json.loads(lines[-1][len("RESULT "):])
    record.update(user=after.ru_utime - before.ru_utime,
                  sys=after.ru_stime - before.ru_stime)
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="another keras-gauss checkout")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    if not (Path(args.baseline) / "keras_gauss").is_dir():
        sys.exit(f"wordnet_epoch: error: --baseline {args.baseline} is not a keras-gauss "
                 "checkout (no keras_gauss/ in it)")
    print("load average before:", os.getloadavg())
    rows = []
    with tempfile.TemporaryDirectory(prefix="kg-epoch-") as tmp:
        trees = {"baseline": overlay(args.baseline, Path(tmp) / "base"),
                 "this": overlay(HERE, Path(tmp) / "this")}
        for repeat in range(args.repeats):
            for name, path in trees.items():
                record = run(path, args.epochs, str(Path(tmp) / f"run-{name}"))
                rows.append((name, record))
                print(f"  {name:<9} ({record['package']}) repeat {repeat}: fit {record['fit_wall']:.1f} s wall, "
                      f"{record['fit_user']:.1f} user, {record['fit_sys']:.1f} sys", flush=True)
    print("load average after:", os.getloadavg())
    print(f"\n{args.epochs} epoch(s) of the train-wordnet defaults, {args.repeats} runs each")
    header = ("code", "fit wall", "fit user", "fit sys", "fit faults", "proc user",
              "proc sys", "test acc")
    print(f"{header[0]:<10}" + "".join(f"{h:>11}" for h in header[1:]))
    for name, r in rows:
        print(f"{name:<10}{r['fit_wall']:>11.1f}{r['fit_user']:>11.1f}{r['fit_sys']:>11.1f}"
              f"{r['fit_minflt']:>11,}{r['user']:>11.1f}{r['sys']:>11.1f}"
              f"{r['test_accuracy']:>11.4f}")

    def best(name, key):
        return min(key(r) for n, r in rows if n == name)

    wall = best("this", lambda r: r["fit_wall"]) / best("baseline", lambda r: r["fit_wall"])
    cpu = (best("this", lambda r: r["fit_user"] + r["fit_sys"])
           / best("baseline", lambda r: r["fit_user"] + r["fit_sys"]))
    share = max(r["fit_sys"] / r["fit_user"] for n, r in rows if n == "this")
    print(f"ratio this / baseline, best fit wall: {wall:.2f}   fit CPU seconds: {cpu:.2f}"
          "   (target <= 0.33)")
    print(f"fit system / user time, this: at most {share:.1%}   (target < 10%)")


if __name__ == "__main__":
    main()
