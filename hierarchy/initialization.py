"""How a hierarchy's Gaussian table starts: uniform (the layers' default) or nested along the tree.

`tree_initialization` starts every node inside its parents: the variance
shrinks by a constant factor a level, from the upper bound at the top
nodes to the lower bound at the deepest level, and each mean is its
parents' mean moved by noise of about the parents' standard deviation.
The `"tree-size"` start (`size_weight`) also lets a node's variance grow
with its number of descendants, so of two nodes at one depth the one
with more below it is the broader: what an edge the training edges do not
imply (the reduction split's held-out edges) needs for its direction.
Nested Gaussians are what `-KL(N_specific || N_general)` must learn for
the edges the training edges imply (a node and every ancestor, not only
its parents); trained from there, KL reaches containment's validation F1
on Ganea et al.'s split (`research/kl_sweep.md`). It reads the training
edges only (the closure the negatives avoid), never a held-out edge.

Pure NumPy: the native and the keras engine set the same arrays.
"""

import numpy as np

# The kinds of start (`WordNetConfig.init`).
INITS = ("uniform", "tree", "tree-size")
SIZE_WEIGHT = 0.25
"""The share of the descendant count in the variances of the `"tree-size"` start
(`tree_initialization`'s `size_weight`; chosen on the reduction split's validation
edges, `research/reduction_kl.md`)."""


def tree_depths(basic, num_nodes):
    """The length of the longest path from a top node to each node.

    Args:
        basic: `(m, 2)` `(child, parent)` direct links (acyclic).
        num_nodes: the number of nodes.

    Example:

    >>> tree_depths(np.array([[1, 0], [2, 1], [2, 0], [3, 4]]), 5).tolist()
    [0, 1, 2, 1, 0]
    """
    basic = np.asarray(basic, np.int64).reshape(-1, 2)
    depth = np.zeros(num_nodes, np.int64)
    for _ in range(num_nodes):  # at most the longest path's length of rounds
        before = depth.copy()
        np.maximum.at(depth, basic[:, 0], depth[basic[:, 1]] + 1)
        if np.array_equal(before, depth):
            break
    return depth


def tree_initialization(index, dim, *, min_variance, max_variance, max_norm=None, spread=2.0,
                        seed=0, spherical=False, size_weight=0.0):
    """Means and variances nested along the direct links of `index`.

    A node at depth `k` (the longest path from a top node, `tree_depths`)
    gets the variance `max_variance * rho**k`, `rho` taking the deepest
    level to `min_variance`; a top node's mean is drawn from `N(0,
    max_variance / dim)` in each dimension, a deeper node's is the mean of
    its parents' means plus noise from `N(0, spread**2 * v / dim)`, `v` the
    smallest variance among its parents. Means are then scaled into
    `max_norm`.

    With `size_weight = w > 0` the variances (not the means' noise) become
    `exp(log min + level * (log max - log min))` with `level = (1 - w) *
    (1 - k / K) + w * log(1 + c) / log(1 + C)`, `K` the deepest level, `c`
    the node's descendant count in `index`, `C` the largest: still shrinking
    along every link (a child has a larger depth and fewer descendants), and
    broader where more lies below.

    Args:
        index: the `keras_gauss.hierarchy.closure.EdgeIndex` of the training
            edges' closure (a split's `train_index`).
        dim: the dimension `d`.
        min_variance, max_variance: the table's variance bounds.
        max_norm: the means' norm bound (`None`: none).
        spread: how far a child's mean moves from its parents', in their
            standard deviations (default 2).
        seed: the seed of the noise.
        spherical: one variance a node instead of `d`.
        size_weight: the share `w` in `[0, 1]` of the descendant count in the
            variances (default 0: depth alone; `SIZE_WEIGHT` for `"tree-size"`).

    Returns:
        `(means, variances)`: float32 `(n, d)` and `(n, d)` (`(n, 1)` spherical).

    Example: a root, its child and grandchild nest.

    >>> from keras_gauss.hierarchy.closure import closure_index
    >>> index = closure_index(np.array([[1, 0], [2, 1]]), 3)
    >>> means, variances = tree_initialization(index, 2, min_variance=0.01, max_variance=4.0)
    >>> [round(float(v), 2) for v in variances[:, 0]]
    [4.0, 0.2, 0.01]
    """
    from keras_gauss.hierarchy.closure import transitive_reduction

    if not 0 < min_variance <= max_variance:
        raise ValueError(f"the tree initialization needs 0 < --min-variance <= --max-variance, "
                         f"got {min_variance} and {max_variance}.")
    if not (np.isfinite(spread) and spread >= 0):
        raise ValueError(f"spread must be a finite number >= 0, got {spread!r}.")
    if not 0 <= size_weight <= 1:
        raise ValueError(f"size_weight must lie in [0, 1], got {size_weight!r}.")
    n = index.num_nodes
    basic = transitive_reduction(index).astype(np.int64)
    depth = tree_depths(basic, n)
    rho = (min_variance / max_variance) ** (1.0 / max(int(depth.max()), 1))
    variance = np.clip(max_variance * rho ** depth, min_variance, max_variance)
    noise = np.random.default_rng([seed, 7]).standard_normal((n, dim)) / np.sqrt(dim)
    means = np.zeros((n, dim))
    top = depth == 0
    means[top] = noise[top] * np.sqrt(max_variance)
    for level in range(1, int(depth.max()) + 1):
        links = basic[depth[basic[:, 0]] == level]
        child, parent = links[:, 0], links[:, 1]
        total = np.zeros((n, dim))
        np.add.at(total, child, means[parent])
        count = np.bincount(child, minlength=n)
        smallest = np.full(n, np.inf)
        np.minimum.at(smallest, child, variance[parent])
        nodes = np.flatnonzero(count)
        means[nodes] = (total[nodes] / count[nodes, None]
                        + spread * np.sqrt(smallest[nodes])[:, None] * noise[nodes])
    if max_norm:
        norms = np.linalg.norm(means, axis=1, keepdims=True)
        means *= np.minimum(1.0, max_norm / np.maximum(norms, 1e-30))
    if size_weight:
        count = np.log1p(index.num_descendants.astype(np.float64))
        level = ((1 - size_weight) * (1 - depth / max(int(depth.max()), 1))
                 + size_weight * count / max(count.max(), 1e-30))
        variance = np.exp(np.log(min_variance) + level * (np.log(max_variance) - np.log(min_variance)))
    variances = variance[:, None] if spherical else np.repeat(variance[:, None], dim, axis=1)
    return means.astype(np.float32), variances.astype(np.float32)
