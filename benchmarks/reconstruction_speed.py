"""The main job's reconstruction evaluation, C++ score blocks against NumPy, in one run.

    python benchmarks/reconstruction_speed.py [--run runs/wordnet] [--queries 2000]

Times `keras_gauss.hierarchy.evaluate.reconstruction` on the full WordNet noun
closure (82,115 nodes, 50-d, `--queries` sampled query nodes, seed 0) with
`native_scores=True` (`keras_gauss.fused.scores`, 2 threads) and `False`
(the NumPy blocks), in turn in this process, for both energies on seeded random
tables, and for the containment energy on a run's trained tables with `--run`.
Prints one row per case with the seconds of each, their ratio, the mean rank
and MAP of each (they must be equal), and the load average (`os.getloadavg`)
before and after: a 2-core machine shared with other jobs, compare within a run.
"""

import argparse
import os
import time

import numpy as np

from keras_gauss.hierarchy import evaluate
from keras_gauss.hierarchy.data import load_data
from keras_gauss.hierarchy.train import WordNetConfig
from keras_gauss.runs import load_run


def timed(hierarchy, means, variances, energy, queries, native):
    start = time.perf_counter()
    result = evaluate.reconstruction(hierarchy, means, variances, max_nodes=queries, seed=0,
                                     energy=energy, native_scores=native)
    return time.perf_counter() - start, result["mean_rank"], result["map"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="a train-wordnet run directory (its tables, containment)")
    parser.add_argument("--queries", type=int, default=2000)
    args = parser.parse_args()
    hierarchy, *_ = load_data(WordNetConfig().resolved())
    rng = np.random.default_rng(0)
    n = hierarchy.num_nodes
    cases = [("random", energy, rng.normal(size=(n, 50)) * 0.3, rng.uniform(0.1, 2, size=(n, 50)))
             for energy in ("containment", "kl")]
    if args.run:
        means, variances = load_run(args.run).tables()
        cases.append((args.run, "containment", means, variances))
    print(f"load before {os.getloadavg()[0]:.2f}")
    print(f"{'tables':<16} {'energy':<12} {'C++ s':>7} {'NumPy s':>8} {'ratio':>6}  "
          f"{'mean rank':>20} {'MAP':>22}  same")
    for name, energy, means, variances in cases:
        fast = timed(hierarchy, means, variances, energy, args.queries, True)
        slow = timed(hierarchy, means, variances, energy, args.queries, False)
        print(f"{name:<16} {energy:<12} {fast[0]:7.1f} {slow[0]:8.1f} {slow[0] / fast[0]:6.1f}  "
              f"{fast[1]!r:>20} {fast[2]!r:>22}  {fast[1:] == slow[1:]}")
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
