"""Evaluation of Gaussian embeddings of the WordNet noun hierarchy (NumPy only, no TensorFlow).

Every function takes the trained node table as two NumPy arrays, `means` and
`variances`, both `(num_nodes, d)` (row `i` is node `i` of the
`keras_gauss.hierarchy.closure.Hierarchy`; diagonal covariances, variances > 0),
and works in float64.

Energy convention (Vilnis & McCallum, 2015)::

    score(specific, general) = -KL(N_specific || N_general)      (<= 0)

Higher means more likely "specific is-a general": the score is 0 when the two
Gaussians are equal and close to 0 when the specific Gaussian lies inside the
broad general one. This is `keras_gauss.ops.kl_energy` `(general, specific)`.

With a *generality term* `beta >= 0` (`WordNetConfig.generality`,
`--generality`) every score below becomes::

    score(specific, general) = -KL(N_specific || N_general)
                               + beta * (log det Sigma_general - log det Sigma_specific)

which rewards a general side broader than the specific side and changes sign
for the reversed pair. `beta = 0` (every function's default) is exactly the
KL energy, bit for bit.

With the containment energy (a run trained with `--energy containment`)
every score is instead `-sum_d max(0, |mu_s - mu_g| + sigma_s - sigma_g)^2`
(`keras_gauss.layers.containment_energy`): 0 when the specific
Gaussian's one-sigma box lies inside the general one's.

Protocols:

* `classification` -- held-out edge classification (Vendrov et al., 2016):
  one score threshold chosen on the validation pairs, applied to the test pairs
  (accuracy; F1 with its own validation threshold as Ganea et al., 2018; AUC).
* `reconstruction` -- mean rank and MAP of every node's ancestors
  (Nickel & Kiela, 2017).
* `word_pair_scores`, `hyperlex_spearman`, `baroni2012` --
  word-level benchmarks, scoring a word pair by its best synset pair.

Example:
    >>> import numpy as np
    >>> from keras_gauss.hierarchy import hierarchy_from_parents
    >>> h = hierarchy_from_parents({"dog": ["animal"], "cat": ["animal"]})
    >>> means, variances = np.zeros((3, 2)), np.ones((3, 2))
    >>> variances[h.node_ids["animal"]] = 4.0
    >>> means[h.node_ids["dog"]], means[h.node_ids["cat"]] = [1.0, 0.0], [-1.0, 0.0]
    >>> reconstruction(h, means, variances)["mean_rank"]
    1.0
"""

from __future__ import annotations

import math
import os
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from keras_gauss import energies
from keras_gauss.fused import scores as _native_scores
from keras_gauss.fused.native import native_available
from keras_gauss.metrics import average_precision, best_f1, roc_auc
from keras_gauss.metrics import threshold_classification, threshold_f1
from keras_gauss.numpy_ops import check_generality
from keras_gauss.numpy_ops import pair_energy

from .benchmark_data import read_entailment, read_hyperlex
from .closure import Hierarchy
from .device_scores import JaxScores
from .device_scores import score_backend

__all__ = [
    "PairScores",
    "SensePairs",
    "average_precision",
    "baroni2012",
    "best_f1",
    "check_generality",
    "classification",
    "depth_scorer",
    "kl_scorer",
    "lookup_scorer",
    "split_classification",
    "edge_scores",
    "hyperlex_scoring",
    "hyperlex_spearman",
    "reconstruction",
    "scored_classification",
    "sense_pairs",
    "threshold_classification",
    "word_pair_scores",
    "word_senses",
]

_ELEMENTS_PER_CHUNK = 1 << 21  # float64 elements of one (rows, d) or (queries, nodes) block: 16 MiB
_CACHE_ELEMENTS = 1 << 18  # float64 elements of the (queries, candidates, d) work buffer: 2 MiB


# --------------------------------------------------------------------------- scores


def _check_tables(means, variances) -> tuple[np.ndarray, np.ndarray]:
    means, variances = np.asarray(means), np.asarray(variances)
    if means.ndim != 2 or means.shape != variances.shape:
        raise ValueError(
            f"means and variances must both be (num_nodes, d) arrays, got {means.shape} and {variances.shape}"
        )
    if not np.all(variances > 0):  # also rejects NaN
        raise ValueError("variances must all be > 0 (and not NaN)")
    return means, variances


def _check_ids(ids, num_nodes: int, name: str) -> np.ndarray:
    ids = np.asarray(ids)
    if ids.size == 0:
        return ids.astype(np.int64).reshape(ids.shape)
    if not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{name} must be integer node ids, got dtype {ids.dtype}")
    ids = ids.astype(np.int64)
    if ids.min() < 0 or ids.max() >= num_nodes:
        raise ValueError(f"{name} ids must lie in [0, {num_nodes})")
    return ids


def check_energy(energy: str, generality: float = 0.0) -> str:
    """`energy` if it is a hierarchy energy of `keras_gauss.energies`, else `ValueError`;
    the generality term applies to the energies that take it (KL) only."""
    spec = energies.get(energy, task="hierarchy", setting="--energy")
    if generality and "generality" not in spec.options:
        takes = [e.name for e in energies.ALL if "generality" in e.options]
        raise ValueError(f"--generality applies to --energy {' or '.join(takes)} only.")
    return energy


def edge_scores(means, variances, specific, general=None, *, chunk_size: int | None = None,
                generality: float = 0.0, energy: str = energies.KL.name,
                backend: str | None = None) -> np.ndarray:
    """Energies `-KL(N_specific || N_general)` of many node pairs at once.

    With `generality = beta > 0` each energy gains the generality term
    `beta * (log det Sigma_general - log det Sigma_specific)` (see the module
    docstring): a broad general side scores higher, the reversed pair lower.

    Args:
        means: `(num_nodes, d)` means.
        variances: `(num_nodes, d)` variances (> 0).
        specific: Integer ids of the specific (child) nodes, any shape; or an
            `(n, 2)` array of `(specific, general)` edges when `general` is `None`.
        general: Integer ids of the general (ancestor) nodes, same shape as `specific`.
        chunk_size: Pairs per vectorised block (default: about 2M floats per block).
        generality: `beta >= 0`, the weight of the generality term (default 0:
            the plain KL energy, bit for bit).
        energy: a hierarchy energy's name (`keras_gauss.energies`): KL (default)
            or containment (see the module docstring).
        backend: `"jax"` (the energies on the JAX device, in float64), or
            `"numpy"`/`"native"` (NumPy); None: `score_backend`'s choice
            (JAX on a GPU with `KERAS_BACKEND=jax`). The same numbers to rounding.

    Returns:
        float64 array shaped like `specific` (`(n,)` for an edge array), all `<= 0`
        when `generality` is 0; higher = more likely "specific is-a general".

    Raises:
        ValueError: On mismatched shapes, ids out of range or non-positive variances.

    Example:
        >>> means, variances = np.array([[0.0], [1.0]]), np.ones((2, 1))
        >>> edge_scores(means, variances, [0, 1], [1, 1]).tolist()  # KL(N(0,1) || N(1,1)) = 0.5
        [-0.5, -0.0]
        >>> edge_scores(means, variances, np.array([[0, 1]])).tolist()
        [-0.5]

        A broader general side, with the generality term (`log det` 2 vs 0):

        >>> variances = np.array([[1.0], [np.e ** 2]])
        >>> edge_scores(means, variances, [0, 1], [1, 0]).round(3).tolist()  # beta 0: KL only
        [-0.635, -2.695]
        >>> edge_scores(means, variances, [0, 1], [1, 0], generality=0.1).round(3).tolist()
        [-0.435, -2.895]
    """
    generality = check_generality(generality)
    check_energy(energy, generality)
    means, variances = _check_tables(means, variances)
    if general is None:
        edges = np.asarray(specific)
        if edges.ndim != 2 or edges.shape[1] != 2:
            raise ValueError(f"without `general`, `specific` must be an (n, 2) edge array, got shape {edges.shape}")
        specific, general = edges[:, 0], edges[:, 1]
    n = means.shape[0]
    specific = _check_ids(specific, n, "specific")
    general = _check_ids(general, n, "general")
    if specific.shape != general.shape:
        raise ValueError(f"specific and general must have the same shape, got {specific.shape} and {general.shape}")
    shape = specific.shape
    specific, general = specific.ravel(), general.ravel()
    if score_backend(backend, native=False) == "jax":
        scorer = JaxScores(means, variances, energy, generality)
        return scorer.pairs(specific, general).reshape(shape)
    d = max(means.shape[1], 1)
    chunk = chunk_size or max(1, _ELEMENTS_PER_CHUNK // d)
    out = np.empty(len(specific), dtype=np.float64)
    for start in range(0, len(specific), chunk):
        s, g = specific[start : start + chunk], general[start : start + chunk]
        out[start : start + chunk] = pair_energy(
            energy, means[s], variances[s], means[g], variances[g], generality=generality)
    return out.reshape(shape)


# --------------------------------------------------------------------------- classification


def classification(val_pos, val_neg, test_pos, test_neg, means, variances, *,
                   generality: float = 0.0, energy: str = energies.KL.name) -> dict:
    """Held-out edge classification: accuracy, F1 and AUC (Vendrov et al., 2016; Ganea et al., 2018).

    Each pair `(specific, general)` is scored by `-KL(N_specific || N_general)`
    and predicted to be an edge iff `score >= threshold`; the threshold is the
    one maximising validation accuracy (see `threshold_classification`),
    so the test pairs never influence it. F1 uses the threshold that
    maximises validation F1 (`f1_threshold`, `threshold_f1`); the
    test AUC needs no threshold.

    Args:
        val_pos: `(n, 2)` int array of positive validation `(specific, general)` pairs
            (e.g. `EdgeSplit.val`).
        val_neg: `(m, 2)` negative validation pairs (`EdgeSplit.val_neg`).
        test_pos: `(k, 2)` positive test pairs (`EdgeSplit.test`).
        test_neg: `(l, 2)` negative test pairs (`EdgeSplit.test_neg`).
        means: `(num_nodes, d)` means.
        variances: `(num_nodes, d)` variances.
        generality: weight `beta` of the generality term (default 0; see `edge_scores`).
        energy: a hierarchy energy's name (see `edge_scores`).

    Returns:
        ``{"threshold", "val_accuracy", "test_accuracy", "f1_threshold",
        "val_f1", "test_f1", "test_precision", "test_recall", "test_auc"}``.

    Example:
        >>> import numpy as np
        >>> from keras_gauss.hierarchy import split_edges
        >>> from keras_gauss.hierarchy.synthetic import synthetic_hierarchy
        >>> h = synthetic_hierarchy()
        >>> s = split_edges(h, val_size=5, test_size=5, seed=0)
        >>> means = np.random.default_rng(0).normal(size=(h.num_nodes, 2))  # untrained
        >>> result = classification(s.val, s.val_neg, s.test, s.test_neg, means,
        ...                         np.ones((h.num_nodes, 2)))
        >>> sorted(result)  # the thresholds are chosen on the validation pairs
        ['f1_threshold', 'test_accuracy', 'test_auc', 'test_f1', 'test_precision', 'test_recall', 'threshold', 'val_accuracy', 'val_f1']
    """

    def scores(edges):
        edges = np.asarray(edges).reshape(-1, 2)
        return edge_scores(means, variances, edges[:, 0], edges[:, 1], generality=generality,
                           energy=energy)

    return scored_classification(scores(val_pos), scores(val_neg), scores(test_pos),
                                 scores(test_neg))


def scored_classification(val_pos, val_neg, test_pos, test_neg) -> dict:
    """`classification`'s figures from the four sets of scores (higher = edge).

    Example:
        >>> r = scored_classification([2.0, 1.0], [0.0], [3.0], [0.5, 1.5])
        >>> r["test_accuracy"], r["test_f1"], r["test_auc"]
        (0.3333333333333333, 0.6666666666666666, 1.0)
    """
    result = threshold_classification(val_pos, val_neg, test_pos, test_neg)
    result.update(threshold_f1(val_pos, val_neg, test_pos, test_neg))
    test_pos, test_neg = np.ravel(test_pos), np.ravel(test_neg)
    result["test_auc"] = roc_auc(np.r_[np.ones(len(test_pos), bool), np.zeros(len(test_neg), bool)],
                                 np.r_[test_pos, test_neg])
    return result


def kl_scorer(means, variances, generality: float = 0.0, energy: str = energies.KL.name):
    """`pairs -> -KL(N_specific || N_general)` (plus the generality term with `generality > 0`;
    or another hierarchy energy by its name, see `edge_scores`): the
    model's score of `(n, 2)` edge arrays."""
    generality = check_generality(generality)
    check_energy(energy, generality)
    return lambda pairs: edge_scores(means, variances, np.asarray(pairs).reshape(-1, 2),
                                     generality=generality, energy=energy)


def lookup_scorer(index):
    """Trivial baseline: 1 if the pair is in `index` (the closure of the training edges), else 0.

    Example:
        >>> from keras_gauss.hierarchy.closure import EdgeIndex
        >>> lookup_scorer(EdgeIndex(np.array([[1, 0]]), 2))(np.array([[1, 0], [0, 1]])).tolist()
        [1.0, 0.0]
    """

    def score(pairs):
        pairs = np.asarray(pairs).reshape(-1, 2)
        return index.contains(pairs[:, 0], pairs[:, 1]).astype(np.float64)

    return score


def depth_scorer(index):
    """Trivial baseline: `depth(specific) - depth(general)`, depth = number of known ancestors.

    `index` is what the model may know (the closure of the training edges), so
    held-out edges change no depth they should not.

    Example:
        >>> from keras_gauss.hierarchy.closure import EdgeIndex
        >>> chain = EdgeIndex(np.array([[1, 0], [2, 0], [2, 1]]), 3)  # 2 is-a 1 is-a 0
        >>> depth_scorer(chain)(np.array([[2, 0], [0, 2]])).tolist()
        [2.0, -2.0]
    """
    depth = np.asarray(index.num_ancestors, dtype=np.float64)

    def score(pairs):
        pairs = np.asarray(pairs).reshape(-1, 2)
        return depth[pairs[:, 0]] - depth[pairs[:, 1]]

    return score


NEGATIVE_KINDS = {"random": "", "reversed": "_reversed", "sibling": "_sibling"}
"""Kinds of negatives of a split (see `keras_gauss.hierarchy.split.EdgeSplit.parts`)."""


def split_classification(parts, score) -> dict:
    """Held-out edge classification for every kind of negatives of a split.

    For each kind (`random`, `reversed`, `sibling`) the threshold is chosen
    on the validation part of that kind and applied to its test part (see
    `threshold_classification`).

    Args:
        parts: `{name: (positives, negatives)}` as `EdgeSplit.parts` returns.
        score: A function from an `(n, 2)` pair array to `n` scores (higher =
            more likely an edge), e.g. `kl_scorer`, `lookup_scorer`.

    Returns:
        ``{kind: {"threshold", "val_accuracy", "test_accuracy", "test_size", and
        the F1 and AUC figures of `classification`}}``.

    Example:
        >>> parts = {"val": (np.array([[1, 0]]), np.array([[0, 1]])),
        ...          "test": (np.array([[1, 0]]), np.array([[0, 1]]))}
        >>> split_classification(parts, lambda p: (p[:, 0] - p[:, 1]).astype(float))["random"]["test_accuracy"]
        1.0
    """
    out = {}
    for kind, suffix in NEGATIVE_KINDS.items():
        if f"val{suffix}" not in parts:
            continue
        (vp, vn), (tp, tn) = parts[f"val{suffix}"], parts[f"test{suffix}"]
        if not len(vp) + len(vn):
            continue
        result = scored_classification(score(vp), score(vn), score(tp), score(tn))
        result["test_size"] = int(len(tp) + len(tn))
        out[kind] = result
    return out


# --------------------------------------------------------------------------- ranking metrics


def _ancestor_pairs(ancestors: Sequence[np.ndarray]):
    """`(k, row, columns)`: each row's ancestor count, and every (row, ancestor) pair."""
    k = np.array([len(a) for a in ancestors], dtype=np.int64)
    return k, np.repeat(np.arange(len(ancestors)), k), np.concatenate(ancestors).astype(np.int64)


def _ancestor_ranking(scores: np.ndarray, ancestors: Sequence[np.ndarray], native: bool = False,
                      counted=None):
    """Ranking statistics of `b` query rows of `scores` (`(b, n)`, self entry `-inf`).

    Row `i`'s relevant entries are `ancestors[i]` (non-empty), its negatives all
    other finite entries. Counting, for every (query, ancestor) pair with score
    `s`, the entries `> s` and `>= s` among all and among the ancestors
    costs `O(#pairs * n)` compares and no sort (in C++ with `native`: the same
    integer counts; `counted`: those counts made elsewhere, `(s, gt_all, ge_all)`
    of `JaxScores.rank_counts`, and no `scores`). Returns per row
    ``(ap, rank_sum, num_ancestors)``, with the conventions of `_ranking_stats`.
    """
    b = len(ancestors)
    k, row, columns = _ancestor_pairs(ancestors)
    if counted is not None:
        s, gt_all, ge_all = counted
        num = len(s)
    elif native:
        s = scores[row, columns]
        num = len(s)
        gt_all, ge_all = _native_scores.ancestor_counts(scores, row, columns)
    else:
        s = scores[row, columns]
        num = len(s)
        gt_all = np.empty(num, np.int64)
        ge_all = np.empty(num, np.int64)
        step = max(1, _ELEMENTS_PER_CHUNK // max(scores.shape[1], 1))
        for i in range(0, num, step):
            rows, t = scores[row[i : i + step]], s[i : i + step, None]
            gt_all[i : i + step] = np.count_nonzero(rows > t, axis=1)
            ge_all[i : i + step] = np.count_nonzero(rows >= t, axis=1)
    # The same counts among each row's ancestors: all (pair, pair of the same row) combinations.
    first = np.repeat(np.cumsum(k) - k, k)  # index of the row's first pair, per pair
    size = k[row]
    i = np.repeat(np.arange(num), size)
    j = np.repeat(first, size) + (np.arange(len(i)) - np.repeat(np.cumsum(size) - size, size))
    gt_rel = np.bincount(i, weights=s[j] > s[i], minlength=num)
    ge_rel = np.bincount(i, weights=s[j] >= s[i], minlength=num)
    neg_gt = gt_all - gt_rel
    neg_tied = (ge_all - gt_all) - (ge_rel - gt_rel)
    ranks = np.bincount(row, weights=1.0 + neg_gt + 0.5 * neg_tied, minlength=b)
    ap = np.bincount(row, weights=ge_rel / ge_all, minlength=b) / np.maximum(k, 1)
    return ap, ranks, k


def _kl_block(mu, var, inv_var, log_det, q, rows, cand, buffer) -> np.ndarray:
    """`(len(q), n)` energies `-KL(N_u || N_v)` of queries `q` against every node `v`."""
    b, (n, d) = len(q), mu.shape
    mu_q, var_q = mu[q], var[q]
    # KL(u || v) = 1/2 [sum_d (var_u + (mu_v - mu_u)^2) / var_v + logdet_v - logdet_u - d], summed
    # element by element in the same order for every v, so identical candidates tie exactly.
    quad = np.empty((b, n))
    for r in range(0, b, rows):
        r_end = min(r + rows, b)
        for c in range(0, n, cand):
            c_end = min(c + cand, n)
            out = buffer[: r_end - r, : c_end - c]
            np.subtract(mu[None, c:c_end], mu_q[r:r_end, None], out=out)
            np.square(out, out=out)
            out += var_q[r:r_end, None]
            quad[r:r_end, c:c_end] = np.einsum("bnd,nd->bn", out, inv_var[c:c_end])
    return -0.5 * (quad + log_det[None, :] - log_det[q][:, None] - d)


def _containment_block(mu, sigma, q, rows, cand, buffer) -> np.ndarray:
    """`(len(q), n)` containment energies of queries `q` (specific) against every node."""
    n = len(mu)
    out = np.empty((len(q), n))
    for r in range(0, len(q), rows):
        r_end = min(r + rows, len(q))
        for c in range(0, n, cand):
            c_end = min(c + cand, n)
            work = buffer[: r_end - r, : c_end - c]
            np.subtract(mu[None, c:c_end], mu[q[r:r_end], None], out=work)
            np.abs(work, out=work)
            work += sigma[q[r:r_end], None]
            work -= sigma[None, c:c_end]
            np.maximum(work, 0.0, out=work)
            out[r:r_end, c:c_end] = -np.einsum("bnd,bnd->bn", work, work)
    return out


def _node_ids(hierarchy: Hierarchy, nodes) -> np.ndarray:
    nodes = list(nodes)
    if nodes and all(isinstance(v, str) for v in nodes):
        return hierarchy.ids(nodes).astype(np.int64)
    return _check_ids(np.asarray(nodes, dtype=np.int64), hierarchy.num_nodes, "nodes")


def reconstruction(
    hierarchy: Hierarchy,
    means,
    variances,
    nodes: Sequence[int] | Sequence[str] | None = None,
    max_nodes: int | None = None,
    seed: int = 0,
    *,
    generality: float = 0.0,
    energy: str = energies.KL.name,
    native_scores: bool = True,
    backend: str | None = None,
) -> dict:
    """Reconstruction mean rank and MAP of the closure (Nickel & Kiela, 2017 protocol).

    For each query node `u` with a non-empty set `A(u)` of ancestors in the
    transitive closure, every other node `v` is scored by
    `-KL(N_u || N_v)` ("u is-a v"), in one vectorised pass per block of queries.

    * Rank: each true ancestor `a` is ranked among `{a}` and the *negatives*
      of `u`, i.e. all nodes that are neither `u` nor an ancestor of `u`
      (descendants and unrelated nodes), so the other true ancestors do not push
      it down: `rank = 1 + #negatives scoring higher + #negatives tied / 2`.
      `mean_rank` averages over all `(u, a)` pairs (1 is perfect).
    * MAP: the average precision of ranking all nodes except `u` by score with
      `A(u)` as the relevant set (tied scores handled as scikit-learn does),
      averaged over the query nodes (1 is perfect).

    Cost: `O(num_nodes * d)` work per query for the scores plus
    `O(|A(u)| * num_nodes)` compares for the ranks (no sort): about 0.3 s for
    the whole 1,182-node mammal subtree at `d = 50`, and roughly 4 ms per
    query on the full 82,115-node WordNet in C++ (15 ms in NumPy; about 5 min
    for every node), hence `max_nodes`.

    Args:
        hierarchy: The `keras_gauss.hierarchy.closure.Hierarchy` (its closure is the truth).
        means: `(num_nodes, d)` means, row `i` = `hierarchy.nodes[i]`.
        variances: `(num_nodes, d)` variances.
        nodes: Optional query nodes (ids or names); default all nodes. Nodes
            without ancestors (the root) are skipped.
        max_nodes: If set and there are more query nodes, evaluate a uniform
            random subset of this many (without replacement, seeded).
        seed: Seed of that subsample.
        generality: weight `beta` of the generality term in the score (default 0;
            see `edge_scores`).
        energy: a hierarchy energy's name (see `edge_scores`).
        native_scores: score the blocks and count the ranks in C++
            (`keras_gauss.fused.scores`, 2 threads) when the native library
            loads here (default True); else, or with False, in NumPy. The
            scores agree to rounding (each sum is taken in order over the
            dimensions: identical nodes tie in both).
        backend: `"jax"`, `"native"` or `"numpy"` (`score_backend`); None
            (default): JAX on a GPU with `KERAS_BACKEND=jax` (the blocks and
            the rank counts on the device, in float64), else as
            `native_scores` says.

    Returns:
        A dict with `mean_rank` and `map` (`nan` if no query has ancestors),
        `num_queries`, `num_pairs` (`(u, a)` pairs ranked), `subsampled`
        (bool) and `nodes`: the sorted int64 ids of the queries evaluated.

    Example:
        >>> import numpy as np
        >>> from keras_gauss.hierarchy.synthetic import synthetic_hierarchy
        >>> h = synthetic_hierarchy()
        >>> means = np.random.default_rng(0).normal(size=(h.num_nodes, 2))  # untrained
        >>> result = reconstruction(h, means, np.ones((h.num_nodes, 2)), max_nodes=10, seed=0)
        >>> result["num_queries"], result["subsampled"], 0 < result["map"] <= 1
        (10, True, True)
    """
    generality = check_generality(generality)
    check_energy(energy, generality)
    means, variances = _check_tables(means, variances)
    n = hierarchy.num_nodes
    if means.shape[0] != n:
        raise ValueError(f"the tables have {means.shape[0]} rows but the hierarchy has {n} nodes")
    index = hierarchy.index
    queries = np.arange(n) if nodes is None else np.unique(_node_ids(hierarchy, nodes))
    queries = queries[index.num_ancestors[queries] > 0]
    subsampled = max_nodes is not None and len(queries) > max_nodes
    if subsampled:
        queries = np.sort(np.random.default_rng(seed).choice(queries, size=int(max_nodes), replace=False))

    mu = means.astype(np.float64)
    var = variances.astype(np.float64)
    inv_var = 1.0 / var
    log_det = np.log(var).sum(axis=1)
    d = mu.shape[1]
    block = max(1, _ELEMENTS_PER_CHUNK // max(n, 1))  # query rows of one (block, n) score matrix
    cand = min(n, max(1, _CACHE_ELEMENTS // max(d, 1)))  # candidates per cache-sized (rows, cand, d) buffer
    rows = max(1, _CACHE_ELEMENTS // (cand * max(d, 1)))
    buffer = np.empty((rows, cand, d))
    box = energies.get(energy) is energies.CONTAINMENT
    sigma = np.sqrt(var) if box else None
    backend = score_backend(backend, native=native_scores)
    native = backend == "native" and native_available()
    device = JaxScores(mu, var, energy, generality) if backend == "jax" else None
    if device is not None:
        block = device.block_rows()
    # per query, summed once at the end: the same figures whatever the block size
    parts = ([], [], [])  # ap, rank sum and ancestors of each query
    for first in range(0, len(queries), block):
        q = queries[first : first + block]
        ancestors = [index.ancestors(u) for u in q]
        if device is not None:  # only the counts leave the device
            _, row, columns = _ancestor_pairs(ancestors)
            stats = _ancestor_ranking(None, ancestors, counted=device.rank_counts(q, row, columns))
        else:
            if native:
                scores = _native_scores.energy_block(mu, var, q, energy, sigma=sigma,
                                                     inv_var=inv_var, log_det=log_det)
            elif box:
                scores = _containment_block(mu, sigma, q, rows, cand, buffer)
            else:
                scores = _kl_block(mu, var, inv_var, log_det, q, rows, cand, buffer)
            if generality:
                scores += generality * (log_det[None, :] - log_det[q][:, None])
            if not np.isfinite(scores).all():
                raise ValueError("non-finite KL scores (overflow?): check the means and variances")
            scores[np.arange(len(q)), q] = -np.inf  # u itself takes no part
            stats = _ancestor_ranking(scores, ancestors, native)
        for part, values in zip(parts, stats):
            part.append(values)
    ap_sum, rank_sum, num_pairs = (np.concatenate(part).sum() if part else 0 for part in parts)
    ap_sum, rank_sum, num_pairs = float(ap_sum), float(rank_sum), int(num_pairs)
    return {
        "mean_rank": rank_sum / num_pairs if num_pairs else math.nan,
        "map": ap_sum / len(queries) if len(queries) else math.nan,
        "num_queries": int(len(queries)),
        "num_pairs": num_pairs,
        "subsampled": bool(subsampled),
        "nodes": queries.astype(np.int64),
    }


def evaluate_split(split, means, variances, generality=0.0, energy=energies.KL.name):
    """Every kind of held-out negatives, scored by the model and the baselines.

    The model's score is `-KL(N_specific || N_general)` plus, with
    `generality > 0`, the generality term, or the containment energy
    (`energy`; `edge_scores`).

    Returns `{"split", "eligible", "sizes", "model", "closure_lookup",
    "depth_difference"}`, each scorer's entry as
    `keras_gauss.hierarchy.evaluate.split_classification` gives it.
    """
    parts = split.parts()
    known = split.train_index
    result = {"split": split.method, "eligible": split.eligible, "energy": energy,
              "sizes": {name: [int(len(pos)), int(len(neg))] for name, (pos, neg) in parts.items()},
              "model": split_classification(
                  parts, kl_scorer(means, variances, generality, energy)),
              "closure_lookup": split_classification(parts, lookup_scorer(known)),
              "depth_difference": split_classification(parts, depth_scorer(known))}
    return result


# --------------------------------------------------------------------------- word-level benchmarks


class PairScores(NamedTuple):
    """Scores of word pairs: `scores` (float64, NaN where not covered) and `covered` (bool)."""

    scores: np.ndarray
    covered: np.ndarray


def _normalise(word: str) -> str:
    return "_".join(word.strip().lower().split())


def word_senses(
    word: str,
    node_ids: Mapping[str, int],
    lemma_nodes: Container[int] = (),
    synsets: Container[int] | None = None,
    lemmas: Mapping[str, Iterable[str]] | None = None,
    data_dir: str | os.PathLike | None = None,
) -> tuple[int, ...]:
    """The rows of a table of WordNet nodes that stand for `word`: its lemma
    node if the table has one, else the node of every noun synset with the
    word among its lemma names (WordNet's `lemma -> synsets`).

    The one rule of `word_pair_scores` and of
    `keras_gauss.pipelines.evaluate.wordnet_senses`.

    Args:
        word: the word as `lemmas` spells it (lowercased, `_` for spaces).
        node_ids: `node name -> row`.
        lemma_nodes: the rows that are lemma nodes (`--lemmas`, e.g. a
            `range`): a word whose own node is one stands for it alone.
        synsets: the rows a synset name may stand at (default: any row).
        lemmas: `word -> synset names`; default WordNet's
            (`keras_gauss.hierarchy.wordnet.read_noun_lemmas`), read only
            for a word without a lemma node.
        data_dir: WordNet data directory for that default.

    Returns:
        The rows, in `lemmas[word]`'s order (names not in the table left
        out); `()` for a word that maps to no row.

    Example:
        >>> ids = {"dog.n.01": 0, "frump.n.01": 1, "puppy": 2}
        >>> lemmas = {"dog": ["frump.n.01", "dog.n.01", "dog.n.99"], "puppy": ["puppy.n.01"]}
        >>> word_senses("dog", ids, {2}, lemmas=lemmas), word_senses("puppy", ids, {2}, lemmas=lemmas)
        ((1, 0), (2,))
    """
    i = node_ids.get(word)
    if i is not None and i in lemma_nodes:
        return (i,)
    if lemmas is None:
        from .wordnet import read_noun_lemmas

        lemmas = read_noun_lemmas(data_dir)
    found = (node_ids.get(name) for name in lemmas.get(word, ()))
    return tuple(i for i in found if i is not None and (synsets is None or i in synsets))


def _word_node_ids(
    word: str, hierarchy: Hierarchy, mode: str, lemmas: Mapping[str, Iterable[str]] | None, data_dir
) -> list[int]:
    """`word_pair_scores`' nodes of `word` by `mode`, in id order."""
    lemma_nodes = range(hierarchy.num_synsets, hierarchy.num_nodes) if mode != "synset" else ()
    senses = word_senses(_normalise(word), hierarchy.node_ids, lemma_nodes,
                         range(hierarchy.num_synsets), {} if mode == "word" else lemmas, data_dir)
    return sorted(set(senses))


def _has_lemma_nodes(hierarchy: Hierarchy) -> bool:
    return hierarchy.num_synsets < hierarchy.num_nodes


def word_pair_scores(
    pairs: Iterable[Sequence[str]],
    hierarchy: Hierarchy,
    means,
    variances,
    reduce: str = "max",
    *,
    mode: str = "auto",
    lemmas: Mapping[str, Iterable[str]] | None = None,
    data_dir: str | os.PathLike | None = None,
    generality: float = 0.0,
    energy: str = energies.KL.name,
    sense_prior: float = 0.0,
) -> PairScores:
    """Score word pairs `(word1, word2)` meaning "word1 is-a word2" with the node embeddings.

    Words are lowercased and spaces become `_` (WordNet's multiword lemmas,
    `'hot_dog'`). A word is mapped to nodes by `mode`:

    * `"word"`: its lemma node, present when the hierarchy was built with
      `build_hierarchy(include_lemmas=True)` (node ids `>= num_synsets`).
    * `"synset"`: every noun synset of the hierarchy that has the word among
      its lemma names (WordNet's `lemma -> synsets`).
    * `"auto"` (default): word1 by its lemma node if there is one, word2 by
      its synsets (by its lemma node only if it has none). A lemma node is a
      leaf below all its word's senses, so it stands for the word as the
      specific side, never as the general one: with lemma nodes on both
      sides, HyperLex's rho was about 0 (.729 this way; `HYPERLEX_SCORING`).

    A pair is scored by `-KL(N_x || N_y)` reduced over all node pairs `x` of
    word1 and `y` of word2: `reduce="max"` takes the *best synset pair*, as
    in the density order embeddings (Athiwaratkun & Wilson, 2018) and HyperLex
    (Vulić et al., 2017) evaluations; `"mean"` averages them. With lemma nodes
    there is one node per word and `"word"` mode, both reductions agree. A pair with a word
    that maps to no node is not covered: its score is NaN (never an error).

    With `sense_prior = lambda > 0` each synset pair's score gains
    `lambda * (log p(x | word1) + log p(y | word2))` before the reduction,
    `p` a word's synsets weighted by WordNet's tagged-sense counts plus one
    (`keras_gauss.hierarchy.wordnet.read_sense_counts`): a rare sense must
    fit much better than the common one to decide the pair.

    Args:
        pairs: `(word1, word2)` pairs (extra items, e.g. a score, are ignored).
        hierarchy: The `keras_gauss.hierarchy.closure.Hierarchy` the table belongs to.
        means: `(num_nodes, d)` means.
        variances: `(num_nodes, d)` variances.
        reduce: `"max"` or `"mean"` over synset pairs.
        mode: `"auto"`, `"word"` or `"synset"` (see above).
        lemmas: Optional mapping `word -> synset names` replacing WordNet's
            (lowercased, `_`-joined words); by default it is read once
            (`keras_gauss.hierarchy.wordnet.read_noun_lemmas`; see `word_senses`).
        data_dir: WordNet data directory for that default.
        generality: weight `beta` of the generality term (default 0; see `edge_scores`).
        energy: a hierarchy energy's name (see `edge_scores`).
        sense_prior: weight `lambda >= 0` of the senses' log frequencies
            (default 0: the scores alone).

    Returns:
        `PairScores` `(scores, covered)`: float64 scores (higher = more
        likely "word1 is-a word2", NaN if not covered) and the boolean coverage mask.

    Example:
        >>> from keras_gauss.hierarchy.synthetic import synthetic_tables
        >>> h, means, variances = synthetic_tables()  # "dog", "animal" (broad), ...
        >>> lemmas = {"dog": ["dog"], "animal": ["animal"]}  # default: WordNet's
        >>> word_pair_scores([("dog", "animal"), ("animal", "dog"), ("dog", "qwzx")],
        ...                  h, means, variances, lemmas=lemmas).scores.round(2)
        array([-0.64, -1.61,   nan])
    """
    if reduce not in ("max", "mean"):
        raise ValueError(f"reduce must be 'max' or 'mean', not {reduce!r}")
    if mode not in ("auto", "word", "synset"):
        raise ValueError(f"mode must be 'auto', 'word' or 'synset', not {mode!r}")
    means, variances = _check_tables(means, variances)
    if means.shape[0] != hierarchy.num_nodes:
        raise ValueError(f"the tables have {means.shape[0]} rows but the hierarchy has {hierarchy.num_nodes} nodes")
    if not (math.isfinite(sense_prior) and sense_prior >= 0):
        raise ValueError(f"sense_prior must be a finite number >= 0, got {sense_prior}")

    def log_probs(word, ids):
        return sense_log_probs(word, [hierarchy.nodes[i] for i in ids], data_dir)

    def general(word):
        return (_word_node_ids(word, hierarchy, "synset", lemmas, data_dir)
                or _word_node_ids(word, hierarchy, "word", lemmas, data_dir))

    senses = sense_pairs(pairs, lambda word: _word_node_ids(word, hierarchy, mode, lemmas, data_dir),
                         log_probs if sense_prior else None,
                         general if mode == "auto" and _has_lemma_nodes(hierarchy) else None)
    scores = np.full(len(senses.counts), np.nan)
    covered = senses.covered
    if covered.any():
        flat = edge_scores(means, variances, senses.left, senses.right,
                           generality=generality, energy=energy)
        if sense_prior:
            flat = flat + sense_prior * senses.log_prior
        scores[covered] = senses.reduce(flat, reduce)
    return PairScores(scores, covered)


class SensePairs(NamedTuple):
    """Word pairs spread over their senses (`sense_pairs`): one block of
    rows a word pair, every (sense of word1, sense of word2).

    Attributes:
        left, right: int64 rows of the sense pairs, the blocks one after
            another.
        log_prior: float64 `log p(left | word1) + log p(right | word2)`
            (zeros without sense weights).
        counts: int64 sense pairs of each word pair (0: not covered).

    Example:
        >>> spread = SensePairs(np.array([0, 1]), np.array([2, 2]), np.zeros(2), np.array([2, 0]))
        >>> spread.covered.tolist(), spread.starts.tolist()
        ([True, False], [0])
        >>> spread.reduce(np.array([-1.0, -3.0]), "mean").tolist()
        [-2.0]
    """

    left: np.ndarray
    right: np.ndarray
    log_prior: np.ndarray
    counts: np.ndarray

    @property
    def covered(self) -> np.ndarray:
        """Boolean mask of the word pairs with at least one sense pair."""
        return self.counts > 0

    @property
    def starts(self) -> np.ndarray:
        """Where each covered word pair's block starts in `left` and `right`."""
        return (np.cumsum(self.counts) - self.counts)[self.covered]

    def reduce(self, scores, how: str = "max") -> np.ndarray:
        """Each covered pair's `"max"` (its best sense pair) or `"mean"` of
        `scores`, the scores of the sense pairs in order."""
        if not len(scores):
            return np.zeros(0)
        if how == "max":
            return np.maximum.reduceat(scores, self.starts)
        return np.add.reduceat(scores, self.starts) / self.counts[self.covered]


def sense_pairs(pairs: Iterable[Sequence[str]], senses, log_probs=None,
                general_senses=None) -> SensePairs:
    """Spreads word pairs over their senses, the blocks that a best-sense-pair
    score reduces (`word_pair_scores`, and
    `keras_gauss.pipelines.evaluate.graded_scores` on a WordNet run).

    Args:
        pairs: `(word1, word2)` pairs (extra items are ignored).
        senses: `word -> rows` (e.g. `word_senses`), asked once a word.
        log_probs: optional `(word, rows) -> log p(row | word)` (e.g.
            `sense_log_probs`), asked once a word; default: no weights
            (`log_prior` all 0).
        general_senses: optional `word -> rows` for word2, the general side
            (a lemma node's word by its synsets); default `senses`.

    Returns:
        `SensePairs`.

    Example:
        >>> rows = {"dog": (0, 1), "animal": (2,)}
        >>> spread = sense_pairs([("dog", "animal"), ("animal", "cat")], lambda w: rows.get(w, ()))
        >>> spread.left.tolist(), spread.right.tolist(), spread.counts.tolist()
        ([0, 1], [2, 2], [2, 0])
        >>> spread.reduce(np.array([-1.5, -0.5])).tolist()  # the best sense pair of dog-animal
        [-0.5]
    """
    cache: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray]] = {}

    def of(word: str, general: bool) -> tuple[np.ndarray, np.ndarray]:
        """The word's rows (as word2 when `general`) and their senses' log probabilities."""
        if (word, general) not in cache:
            rows = np.asarray((general_senses if general else senses)(word), np.int64)
            cache[word, general] = rows, (np.zeros(len(rows)) if log_probs is None
                                          else np.asarray(log_probs(word, rows), np.float64))
        return cache[word, general]

    general = general_senses is not None
    firsts, seconds, priors, counts = [], [], [], []
    for pair in pairs:
        (a, log_a), (b, log_b) = of(pair[0], False), of(pair[1], general)
        firsts.append(np.repeat(a, len(b)))
        seconds.append(np.tile(b, len(a)))
        priors.append(np.repeat(log_a, len(b)) + np.tile(log_b, len(a)))
        counts.append(len(a) * len(b))
    if not counts:
        firsts = seconds = [np.zeros(0, np.int64)]
        priors = [np.zeros(0)]
    return SensePairs(np.concatenate(firsts), np.concatenate(seconds), np.concatenate(priors),
                      np.asarray(counts, dtype=np.int64))


def sense_log_probs(word: str, names: Sequence[str], data_dir=None) -> np.ndarray:
    """`log p(sense | word)` over the nodes `names` that stand for `word`:
    WordNet's tagged-sense counts of `(word, name)` plus one, normalised over
    `names` (`word_pair_scores`' sense prior; a single node: 0).

    Example:
        >>> sense_log_probs("dog", ["dog.n.01", "frump.n.01"]).round(3).tolist()  # 42 tags, 0
        [-0.023, -3.784]
    """
    if len(names) < 2:
        return np.zeros(len(names))
    from .wordnet import read_sense_counts

    counts = read_sense_counts(data_dir)
    key = _normalise(word)
    weights = np.array([counts.get((key, name), 0) + 1.0 for name in names])
    return np.log(weights / weights.sum())


def _spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    from scipy.stats import spearmanr

    if x.min() == x.max() or y.min() == y.max():
        return math.nan, math.nan  # undefined: nothing to rank (no scipy warning)
    result = spearmanr(x, y)
    return float(result.statistic), float(result.pvalue)


HYPERLEX_SCORING = {energies.KL.name: {"generality": 0.75, "sense_prior": 4.0}}
"""`hyperlex_spearman`'s default `word_pair_scores` settings by energy, for
tables of synsets (KL: the generality term 0.75 and the sense prior 4,
chosen on HyperLex's upstream random training + dev nouns,
`research/hyperlex_scores.py`; other energies: the best synset pair's
energy alone)."""

HYPERLEX_LEMMA_SCORING = {energies.KL.name: {"generality": 0.3}}
"""The same for tables with lemma nodes (`--lemmas`, the main job: word1's
own node against word2's synsets): KL with the generality term 0.3 and no
sense prior, chosen alike (`research/hyperlex_scores.py` on the main job's
run, seed 0: training + dev .735; 0.1 .726, KL alone .714)."""


def hyperlex_scoring(energy: str, lemma_nodes: bool = False) -> dict:
    """`HYPERLEX_SCORING`'s (`HYPERLEX_LEMMA_SCORING`'s) `word_pair_scores`
    settings for `energy` (a new dict; `{}` for an energy without settings): how HyperLex is scored by
    `hyperlex_spearman`, `keras-gauss train-wordnet --hyperlex` and
    `keras-gauss evaluate --hyperlex`.

    Args:
        energy: a hierarchy energy's name (`"kl"`, `"containment"`).
        lemma_nodes: whether the table has lemma nodes.

    Example:
        >>> hyperlex_scoring("kl"), hyperlex_scoring("containment"), hyperlex_scoring("kl", True)
        ({'generality': 0.75, 'sense_prior': 4.0}, {}, {'generality': 0.3})
    """
    return dict((HYPERLEX_LEMMA_SCORING if lemma_nodes else HYPERLEX_SCORING).get(energy, {}))


def check_scorable(flag: str, path, rows, hierarchy: Hierarchy) -> None:
    """Raises `ValueError` when no pair of a benchmark file has both words in
    `hierarchy` (`word_pair_scores`'s words to nodes), before any training:
    `train-wordnet --entailment FILE` scores it after training, and a file
    that covers nothing would leave its figures out without a word.

    Args:
        flag: the option that named the file (`--entailment`).
        path: the file.
        rows: its pairs (`read_entailment`, `read_hyperlex`).
        hierarchy: the hierarchy the run embeds.

    Example:
        >>> from keras_gauss.hierarchy.closure import hierarchy_from_parents
        >>> h = hierarchy_from_parents({"dog.n.01": ["animal.n.01"]})
        >>> check_scorable("--entailment", "pairs.tsv", [("piano", "music", True)], h)
        Traceback (most recent call last):
        ...
        ValueError: --entailment pairs.tsv: none of its 1 pairs has both words in the hierarchy (2 nodes); nothing to score.
    """
    n = hierarchy.num_nodes
    covered = word_pair_scores(rows, hierarchy, np.zeros((n, 1), np.float32),
                               np.ones((n, 1), np.float32)).covered
    if not covered.any():
        raise ValueError(f"{flag} {path}: none of its {len(rows):,} pairs has both words in the "
                         f"hierarchy ({n:,} nodes); nothing to score.")


def hyperlex_spearman(
    path: str | os.PathLike,
    hierarchy: Hierarchy,
    means,
    variances,
    **scoring,
) -> dict:
    """Spearman correlation with the HyperLex noun scores (Vulić et al., 2017).

    Each pair `(word1, word2)` ("to what degree is word1 a type of word2") is
    scored with `word_pair_scores` (best synset pair; with KL, graded by
    `hyperlex_scoring`'s generality term and sense prior unless given) and
    `scipy.stats.spearmanr` is taken over the *covered* pairs only; pairs with
    a word missing from the hierarchy are left out and reported via `coverage`.

    Args:
        path: The HyperLex noun file (see `keras_gauss.hierarchy.benchmark_data.read_hyperlex`).
        hierarchy, means, variances: The hierarchy and its `(num_nodes, d)` tables.
        **scoring: `word_pair_scores`'s keyword arguments (`reduce`, `mode`,
            `lemmas`, `data_dir`, `generality`, `energy`, `sense_prior`);
            its defaults, but `hyperlex_scoring(energy)`'s.

    Returns:
        `{"spearman", "pvalue", "coverage", "n_pairs", "n_covered", "undefined"}`:
        `coverage` is `n_covered / n_pairs`; `spearman` is `nan` when it is
        undefined (fewer than 2 covered pairs, equal human or model scores), and
        `undefined` says why (else `None`).

    Example:
        >>> from keras_gauss.hierarchy.synthetic import synthetic_tables
        >>> h, means, variances = synthetic_tables()  # "dog", "animal" (broad), ...
        >>> lemmas = {"dog": ["dog"], "animal": ["animal"]}  # default: WordNet's
        >>> lemmas["cat"] = ["cat"]
        >>> means[h.nodes.index("cat")] = [3.0, 0.0]  # far from dog
        >>> with open("hyperlex.txt", "w") as f:  # WORD1 WORD2 POS TYPE AVG_SCORE ...
        ...     _ = f.write("dog animal N hyp-1 5.5 9.2 0.4\\n"
        ...                 "animal dog N rhyp-1 0.5 0.8 0.3\\n"
        ...                 "cat dog N cohyp 0.2 0.3 0.5\\n")
        >>> result = hyperlex_spearman("hyperlex.txt", h, means, variances, lemmas=lemmas)
        >>> round(result["spearman"], 2), result["n_covered"]
        (1.0, 3)
    """
    rows = read_hyperlex(path)
    scoring = {**hyperlex_scoring(scoring.get("energy", energies.KL.name),
                                  _has_lemma_nodes(hierarchy)), **scoring}
    scores, covered = word_pair_scores(rows, hierarchy, means, variances, **scoring)
    gold = np.array([score for _, _, score in rows], dtype=np.float64)
    n_covered = int(covered.sum())
    rho, p = _spearman(scores[covered], gold[covered]) if n_covered >= 2 else (math.nan, math.nan)
    undefined = None
    if n_covered < 2:
        undefined = f"only {n_covered} covered pair(s): a rank correlation needs 2"
    elif gold[covered].min() == gold[covered].max():
        undefined = (f"the human scores of the {n_covered} covered pairs are all equal "
                     f"({gold[covered][0]:g}): nothing to rank")
    elif scores[covered].min() == scores[covered].max():
        undefined = f"the model gives all {n_covered} covered pairs the same score"
    return {
        "spearman": rho,
        "pvalue": p,
        "coverage": n_covered / len(rows) if rows else math.nan,
        "n_pairs": len(rows),
        "n_covered": n_covered,
        "undefined": undefined,
    }


def baroni2012(
    path: str | os.PathLike,
    hierarchy: Hierarchy,
    means,
    variances,
    **scoring,
) -> dict:
    """Lexical entailment detection on Baroni et al. (2012): average precision and best F1.

    Each pair `(word1, word2, entails)` is scored with `word_pair_scores`
    ("word1 is-a word2", best synset pair by default). Pairs with a word missing
    from the hierarchy are dropped (reported via `coverage`); AP (see
    `average_precision`) and the best F1 over thresholds (`best_f1`)
    are computed on the covered pairs. `positive_rate` (the fraction of
    entailing pairs among them) is the AP of a random ranking.

    Args:
        path: The entailment file (see `keras_gauss.hierarchy.benchmark_data.read_entailment`).
        hierarchy, means, variances: The hierarchy and its `(num_nodes, d)` tables.
        **scoring: `word_pair_scores`'s keyword arguments, as for `hyperlex_spearman`.

    Returns:
        `{"ap", "best_f1", "f1_threshold", "positive_rate", "coverage", "n_pairs", "n_covered"}`
        (`nan` metrics if no covered pair is positive).

    Example:
        >>> from keras_gauss.hierarchy.synthetic import synthetic_tables
        >>> h, means, variances = synthetic_tables()  # "dog", "animal" (broad), ...
        >>> lemmas = {"dog": ["dog"], "animal": ["animal"]}  # default: WordNet's
        >>> with open("baroni2012.tsv", "w") as f:
        ...     _ = f.write("dog\\tanimal\\tTrue\\nanimal\\tdog\\tFalse\\n")
        >>> result = baroni2012("baroni2012.tsv", h, means, variances, lemmas=lemmas)
        >>> result["ap"], result["n_covered"]
        (1.0, 2)
    """
    rows = read_entailment(path)
    scores, covered = word_pair_scores(rows, hierarchy, means, variances, **scoring)
    labels = np.array([label for _, _, label in rows], dtype=bool)
    y, s = labels[covered], scores[covered]
    f1, threshold = best_f1(y, s) if y.any() else (math.nan, math.nan)
    n_covered = int(covered.sum())
    return {
        "ap": average_precision(y, s) if y.any() else math.nan,
        "best_f1": f1,
        "f1_threshold": threshold,
        "positive_rate": float(y.mean()) if n_covered else math.nan,
        "coverage": n_covered / len(rows) if rows else math.nan,
        "n_pairs": len(rows),
        "n_covered": n_covered,
    }
