"""Drawing 2-d Gaussian embeddings as ellipses (the paper's Figures 1 and 3)."""

import numpy as np


def plot_gaussians(means, variances, labels, ax=None, num_std=1.0, colors=None,
                   title=None):
    """Draws each 2-d diagonal Gaussian as an axis-aligned ellipse.

    The ellipse of a Gaussian is its `num_std` standard-deviation level set:
    half-widths `num_std * sqrt(var_x)` and `num_std * sqrt(var_y)`. Its
    label is written at the mean.

    Args:
        means: `(n, 2)` means.
        variances: `(n, 2)` (or `(n, 1)` spherical) variances.
        labels: `n` strings.
        ax: a matplotlib `Axes` (default: a new figure's).
        num_std: size of the ellipses in standard deviations.
        colors: optional `n` matplotlib colours.
        title: optional title.

    Returns:
        The `Axes`.

    Example:

    >>> ax = plot_gaussians([[0, 0], [1, 1]], [[4, 4], [0.5, 0.5]],
    ...                     ["animal", "dog"])
    >>> ax.figure.savefig("gaussians.png")
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Ellipse

    means = np.asarray(means, dtype=float)
    variances = np.broadcast_to(np.asarray(variances, dtype=float), means.shape)
    if means.ndim != 2 or means.shape[1] != 2:
        raise ValueError(f"plot_gaussians draws 2-d Gaussians, got means of shape {means.shape}.")
    if len(labels) != len(means):
        raise ValueError(f"{len(labels)} labels for {len(means)} Gaussians.")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 7))
    if colors is None:
        colors = plt.cm.tab10(np.arange(len(means)) % 10)
    half = num_std * np.sqrt(variances)
    # Broad Gaussians first, so that narrow ones are drawn on top.
    for i in np.argsort(-half.prod(axis=1), kind="stable"):
        mean, width, label, color = means[i], half[i], labels[i], colors[i]
        ax.add_patch(Ellipse(mean, 2 * width[0], 2 * width[1], facecolor=color,
                             edgecolor=color, alpha=0.15, lw=1.5))
        ax.add_patch(Ellipse(mean, 2 * width[0], 2 * width[1], fill=False,
                             edgecolor=color, lw=1.2))
        ax.annotate(label, mean, ha="center", va="center", fontsize=8)
    low = (means - half).min(axis=0)
    high = (means + half).max(axis=0)
    pad = 0.05 * (high - low).max()
    ax.set_xlim(low[0] - pad, high[0] + pad)
    ax.set_ylim(low[1] - pad, high[1] + pad)
    ax.set_aspect("equal")
    if title:
        ax.set_title(title)
    return ax
