"""The main job's reconstruction evaluation, C++ score blocks against NumPy, in one run.

    python benchmarks/reconstruction_speed.py [--run runs/wordnet] [--queries 2000] [--jax]

Times `keras_gauss.hierarchy.evaluate.reconstruction` on the full WordNet noun
closure (82,115 nodes, 50-d, `--queries` sampled query nodes, seed 0) with
`native_scores=True` (`keras_gauss.fused.scores`, 2 threads) and `False`
(the NumPy blocks), in turn in this process, for both energies on seeded random
tables, and for the containment energy on a run's trained tables with `--run`.
Prints one row per case with the seconds of each, their ratio, the mean rank
and MAP of each (they must be equal), and the load average (`os.getloadavg`)
before and after: a 2-core machine shared with other jobs, compare within a run.
`--jax` adds the JAX path's seconds (`backend="jax"`: the blocks and rank
counts on JAX's default device in float64, `keras_gauss.hierarchy.device_scores`;
the first call compiles) and whether its figures are the same: on a GPU,
`KERAS_BACKEND=jax` and `pip install "jax[cuda12]"`.
"""

import argparse
import os
import time

import numpy as np

from keras_gauss.hierarchy import evaluate
from keras_gauss.hierarchy.data import load_data
from keras_gauss.hierarchy.train import WordNetConfig
from keras_gauss.runs import load_run


def timed(hierarchy, means, variances, energy, queries, native, backend=None):
    start = time.perf_counter()
    result = evaluate.reconstruction(hierarchy, means, variances, max_nodes=queries, seed=0,
                                     energy=energy, native_scores=native, backend=backend)
    return time.perf_counter() - start, result["mean_rank"], result["map"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="a train-wordnet run directory (its tables, containment)")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--jax", action="store_true", help="also time the JAX path")
    args = parser.parse_args()
    hierarchy, *_ = load_data(WordNetConfig(include_lemmas=False).resolved())  # the synsets
    rng = np.random.default_rng(0)
    n = hierarchy.num_nodes
    cases = [("random", energy, rng.normal(size=(n, 50)) * 0.3, rng.uniform(0.1, 2, size=(n, 50)))
             for energy in ("containment", "kl")]
    if args.run:
        means, variances = load_run(args.run).tables()
        cases.append((args.run, "containment", means, variances))
    print(f"load before {os.getloadavg()[0]:.2f}")
    print(f"{'tables':<16} {'energy':<12} {'C++ s':>7} {'NumPy s':>8} {'ratio':>6}  "
          f"{'mean rank':>20} {'MAP':>22}  same" + ("  JAX s  same" if args.jax else ""))
    for name, energy, means, variances in cases:
        fast = timed(hierarchy, means, variances, energy, args.queries, True, "native")
        slow = timed(hierarchy, means, variances, energy, args.queries, False, "numpy")
        device = ""
        if args.jax:
            jax = timed(hierarchy, means, variances, energy, args.queries, True, "jax")
            device = f"  {jax[0]:5.1f}  {jax[1:] == slow[1:]}"
        print(f"{name:<16} {energy:<12} {fast[0]:7.1f} {slow[0]:8.1f} {slow[0] / fast[0]:6.1f}  "
              f"{fast[1]!r:>20} {fast[2]!r:>22}  {fast[1:] == slow[1:]}{device}")
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
