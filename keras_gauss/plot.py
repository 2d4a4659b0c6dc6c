"""Drawing 2-d Gaussian embeddings as ellipses (the paper's Figures 1 and 3)."""

import math

import numpy as np


def mass_radius(mass):
    """The Mahalanobis radius of the 2-d ellipse holding `mass` of a Gaussian.

    `P(|x - mu|_Sigma <= r) = 1 - exp(-r^2 / 2)` in 2-d, so
    `r = sqrt(-2 log(1 - mass))` (0.5 -> 1.18, 0.9 -> 2.15).

    Args:
        mass: probability in `(0, 1)`.

    Returns:
        The radius `r` in standard deviations.

    Example:

    >>> round(mass_radius(0.9), 3)
    2.146
    """
    if not 0 < mass < 1:
        raise ValueError(f"mass must be in (0, 1), got {mass}.")
    return math.sqrt(-2.0 * math.log1p(-mass))


def ellipse_inside(inner_mean, inner_var, outer_mean, outer_var, radius=1.0, points=720):
    """Whether the inner axis-aligned ellipse lies inside the outer one.

    Both ellipses are `radius`-standard-deviation level sets of diagonal
    2-d Gaussians (what `plot_gaussians` draws). Checked on `points` points
    of the inner boundary.

    Args:
        inner_mean, inner_var: `(2,)` mean and variances of the inner Gaussian.
        outer_mean, outer_var: `(2,)` of the outer Gaussian.
        radius: the level set drawn, in standard deviations (same for both).
        points: boundary points checked.

    Returns:
        A bool.

    Example:

    >>> ellipse_inside([0.5, 0], [0.1, 0.1], [0, 0], [1, 1], radius=2.0)
    True
    """
    angle = np.linspace(0.0, 2 * np.pi, points, endpoint=False)
    circle = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    boundary = np.asarray(inner_mean, float) + radius * np.sqrt(np.asarray(inner_var, float)) * circle
    scaled = (boundary - np.asarray(outer_mean, float)) / (radius * np.sqrt(np.asarray(outer_var, float)))
    return bool(np.all(np.square(scaled).sum(axis=1) <= 1.0 + 1e-9))


def _place_labels(ax, texts, tries=24):
    """Moves labels so that none overprints another: each in turn (broad
    Gaussians' first) takes the nearest free vertical offset from its spot."""
    renderer = ax.figure.canvas.get_renderer()
    to_data = ax.transData.inverted()
    placed = []
    for text in texts:
        x, y = text.get_position()
        box = text.get_window_extent(renderer)
        step = to_data.transform((0, box.height * 1.1))[1] - to_data.transform((0, 0))[1]
        for k in range(tries):
            shift = (k + 1) // 2 * (1 if k % 2 else -1) * step
            text.set_position((x, y + shift))
            box = text.get_window_extent(renderer).expanded(1.05, 1.0)
            if not any(box.overlaps(other) for other in placed):
                break
        else:
            text.set_position((x, y))
            box = text.get_window_extent(renderer)
        placed.append(box)


def plot_gaussians(means, variances, labels, ax=None, num_std=1.0, colors=None,
                   title=None, mass=None, label_position="center"):
    """Draws each 2-d diagonal Gaussian as an axis-aligned ellipse.

    The ellipse of a Gaussian is a level set: with `mass`, the one holding
    that probability (`mass_radius`), the same for every Gaussian so that
    nesting in the picture means nesting of the distributions' bulk; else
    the `num_std` standard-deviation one. Labels are written at the mean, or
    (`label_position="top"`) just inside the top of ellipses that hold
    narrower ones, and nudged apart where they would overprint.

    Args:
        means: `(n, 2)` means.
        variances: `(n, 2)` (or `(n, 1)` spherical) variances.
        labels: `n` strings.
        ax: a matplotlib `Axes` (default: a new figure's).
        num_std: size of the ellipses in standard deviations.
        colors: optional `n` matplotlib colours.
        title: optional title.
        mass: probability mass inside each ellipse (overrides `num_std`).
        label_position: `"center"` or `"top"`.

    Returns:
        The `Axes`.

    Example:

    >>> ax = plot_gaussians([[0, 0], [1, 1]], [[4, 4], [0.5, 0.5]],
    ...                     ["animal", "dog"], mass=0.9)
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
    if label_position not in ("center", "top"):
        raise ValueError(f"label_position must be 'center' or 'top', got {label_position!r}.")
    if mass is not None:
        num_std = mass_radius(mass)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 7))
    if colors is None:
        colors = plt.cm.tab10(np.arange(len(means)) % 10)
    half = num_std * np.sqrt(variances)
    size = half.prod(axis=1)
    # Broad Gaussians first, so that narrow ones are drawn on top.
    order = np.argsort(-size, kind="stable")
    texts = []
    for i in order:
        mean, width, label, color = means[i], half[i], labels[i], colors[i]
        ax.add_patch(Ellipse(mean, 2 * width[0], 2 * width[1], facecolor=color,
                             edgecolor=color, alpha=0.15, lw=1.5))
        ax.add_patch(Ellipse(mean, 2 * width[0], 2 * width[1], fill=False,
                             edgecolor=color, lw=1.2))
        holds_others = any(size[j] < size[i] and ellipse_inside(
            means[j], variances[j], means[i], variances[i], num_std, 90)
            for j in range(len(means)) if j != i)
        if label_position == "top" and holds_others:
            texts.append(ax.text(mean[0], mean[1] + 0.93 * width[1], label, ha="center",
                                 va="top", fontsize=8, fontweight="bold"))
        else:
            texts.append(ax.text(mean[0], mean[1], label, ha="center", va="center",
                                 fontsize=8))
    low = (means - half).min(axis=0)
    high = (means + half).max(axis=0)
    pad = 0.05 * (high - low).max()
    ax.set_xlim(low[0] - pad, high[0] + pad)
    ax.set_ylim(low[1] - pad, high[1] + pad)
    ax.set_aspect("equal")
    if title:
        ax.set_title(title)
    # Narrow Gaussians' labels move; the broad ones' (listed first) stay.
    # The equal aspect moves the axes box when drawn: fix it before measuring.
    ax.apply_aspect()
    _place_labels(ax, texts)
    return ax
