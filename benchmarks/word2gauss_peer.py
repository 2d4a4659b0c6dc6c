"""One timed epoch of word2gauss (the Cython peer) on token ids in memory.

Run by `corpus_speed.py` with the Python of a virtual environment where
word2gauss is built (see /work/shared/peers/README.md; it needs NumPy 1.x
and Cython 0.29, so it does not live in ours):

    w2g-venv/bin/python benchmarks/word2gauss_peer.py IDS.npz --word2gauss w2g-src

`IDS.npz` holds `ids` (int32 token ids), `splits` (int64 sentence
boundaries) and `counts` (per word). The (word, context, word, negative)
rows of every pair within a fixed window are built first (not timed), the
negatives drawn from the unigram^0.75 distribution, at most `--max-pairs`
of them; then `GaussianEmbedding.train` runs over them once (EL energy,
which word2gauss calls "IP", diagonal, 50-d, `--threads` workers). Prints
one JSON line: seconds and pairs.
"""

import argparse
import json
import sys
import time

import numpy as np


def pairs_of(ids, splits, counts, window, max_pairs, seed=0):
    """word2gauss's training rows `(w, c, w, negative, 0)` for every (w, c)
    within `window` of each other in a sentence, in sentence order."""
    # Only the sentences that can give `max_pairs` (a token has at most
    # 2 * window pairs; the first ones are kept, so allow a margin).
    last = np.searchsorted(splits, 1.5 * max_pairs / (2 * window) + 1000)
    splits = splits[:min(last, len(splits) - 1) + 1]
    ids = ids[:splits[-1]]
    sentence = np.repeat(np.arange(len(splits) - 1), np.diff(splits))
    rows = []
    for offset in [o for o in range(-window, window + 1) if o]:
        centre = np.arange(len(ids))
        other = centre + offset
        ok = (other >= 0) & (other < len(ids))
        ok[ok] &= sentence[other[ok]] == sentence[centre[ok]]
        rows.append(np.stack([centre[ok], other[ok]], 1))
    pairs = np.concatenate(rows)
    pairs = pairs[np.argsort(pairs[:, 0], kind="stable")][:max_pairs]
    weights = np.asarray(counts, np.float64) ** 0.75
    rng = np.random.default_rng(seed)
    negatives = np.searchsorted(np.cumsum(weights / weights.sum()),
                                rng.random(len(pairs)), side="right")
    negatives = np.minimum(negatives, len(counts) - 1)
    out = np.zeros((len(pairs), 5), np.uint32)
    out[:, 0] = ids[pairs[:, 0]]
    out[:, 1] = ids[pairs[:, 1]]
    out[:, 2] = out[:, 0]
    out[:, 3] = negatives
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids")
    parser.add_argument("--word2gauss", required=True, help="directory of the built word2gauss")
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--max-pairs", type=int, default=20_000_000)
    parser.add_argument("--batch", type=int, default=10_000, help="pairs per queued batch")
    args = parser.parse_args(argv)
    sys.path.insert(0, args.word2gauss)
    from word2gauss import GaussianEmbedding

    data = np.load(args.ids)
    pairs = pairs_of(data["ids"], data["splits"], data["counts"], args.window, args.max_pairs)
    batches = [pairs[i:i + args.batch] for i in range(0, len(pairs), args.batch)]
    model = GaussianEmbedding(len(data["counts"]), size=args.dim, covariance_type="diagonal",
                              energy_type="IP", mu_max=2.0, sigma_min=0.05, sigma_max=5.0,
                              eta=0.2, Closs=0.5)
    start = time.perf_counter()
    model.train(iter(batches), n_workers=args.threads, report_interval=None)
    print(json.dumps({"seconds": time.perf_counter() - start, "pairs": int(len(pairs))}))


if __name__ == "__main__":
    main()
