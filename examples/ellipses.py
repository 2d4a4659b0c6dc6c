"""The paper's Figure 1: a word's Gaussian among its neighbours', in 2-d.

Projection (the paper's): the top two generalized eigenvectors `v` of

    S v = lambda Sigma_q v,

with `S` the scatter of the neighbours' means around their average and
`Sigma_q` the query word's (diagonal) covariance: the two directions in
which the neighbours spread most *relative to the query's own variance*.
The eigenvectors are normalised so that `v^T Sigma_q v = 1`, so the query's
projected covariance is exactly the identity; every other word's projected
covariance `V^T Sigma V` is drawn by its diagonal (axis-aligned ellipses,
what `keras_gauss.plot.plot_gaussians` draws; the off-diagonal term is
dropped).

Usage:

    python examples/ellipses.py RUN_DIR WORD [--k 12] [--num-std 0.5] [--out FILE]

The figure goes to `ellipses-WORD.png` in the working directory unless
`--out` names a file (never into the run: a run holding a file it did not
write is never replaced, not even with `--overwrite`).
"""

import argparse
import re
import sys
from pathlib import Path

import numpy as np


def project(means, variances, query):
    """Projects Gaussians onto the paper's two generalized eigenvectors.

    Args:
        means: `(n, d)` means (the query among them).
        variances: `(n, d)` diagonal variances.
        query: row of the query word.

    Returns:
        `(means_2d (n, 2), variances_2d (n, 2))`.
    """
    from scipy.linalg import eigh

    centred = means - means.mean(axis=0)
    scatter = centred.T @ centred / len(means)
    _, vectors = eigh(scatter, np.diag(variances[query]))  # ascending; v^T Sigma_q v = I
    basis = vectors[:, ::-1][:, :2]  # (d, 2)
    return means @ basis, variances @ basis**2


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="run directory (keras-gauss train-corpus)")
    parser.add_argument("word", help="query word")
    parser.add_argument("--k", type=int, default=12, help="neighbours drawn (default: 12)")
    parser.add_argument("--out", default=None,
                        help="figure file (default: ellipses-WORD.png here)")
    parser.add_argument("--num-std", type=float, default=0.5,
                        help="ellipse size in standard deviations (default: 0.5)")
    args = parser.parse_args(argv)

    from keras_gauss.plot import plot_gaussians
    from keras_gauss.pipelines.evaluate import Embeddings
    from keras_gauss.pipelines.evaluate import nearest

    emb = Embeddings.from_run(args.run)
    try:
        found = nearest(emb, args.word, k=args.k)
    except KeyError as error:
        sys.exit(f"unknown word: {error.args[0]}")
    words = [args.word.lower()] + [w for w, _ in found]
    ids = [emb.index[w] for w in words]
    means_2d, variances_2d = project(emb.means[ids], emb.variances[ids], 0)
    colors = ["tab:red"] + ["tab:blue"] * (len(words) - 1)
    ax = plot_gaussians(means_2d, variances_2d, words, colors=colors, num_std=args.num_std,
                        title=f"'{args.word}' and its {len(found)} nearest neighbours "
                              f"(generalized eigenvectors, {args.num_std:g} std)")
    out = Path(args.out) if args.out else Path(default_name(args.word))
    ax.figure.savefig(out, dpi=120, bbox_inches="tight")
    print(f"figure written to {out}")


def default_name(word):
    """`ellipses-WORD.png`, the word reduced to characters safe in a file name."""
    safe = re.sub(r"[^\w.-]+", "_", word.lower())
    return f"ellipses-{safe}.png"


if __name__ == "__main__":
    main()
