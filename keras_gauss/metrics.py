"""Metrics shared by the hierarchy and corpus evaluations (NumPy only).

* `threshold_classification`: accuracy with one score threshold chosen
  on validation pairs (the held-out edge protocol of Vendrov et al., 2016).
* `threshold_f1`: F1 with the threshold chosen on validation pairs
  (the WordNet protocol of Ganea et al., 2018).
* `average_precision`, `best_f1`, `roc_auc` (with `average_ranks`): ranking metrics of scored,
  labelled items (lexical entailment, Baroni et al., 2012).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["average_precision", "best_f1", "roc_auc", "threshold_classification", "threshold_f1"]


def threshold_classification(val_pos_scores, val_neg_scores, test_pos_scores, test_neg_scores) -> dict:
    """Choose a score threshold on validation pairs and report validation and test accuracy.

    Convention: a pair is predicted positive iff `score >= threshold`. The
    threshold is chosen on the validation scores only: every midpoint between
    two consecutive distinct sorted validation scores is tried, plus `-inf`
    (all positive) and `+inf` (all negative), and the one with the highest
    validation accuracy wins (the smallest such threshold on a tie).

    Args:
        val_pos_scores: Scores of the positive validation pairs.
        val_neg_scores: Scores of the negative validation pairs.
        test_pos_scores: Scores of the positive test pairs.
        test_neg_scores: Scores of the negative test pairs.

    Returns:
        `{"threshold", "val_accuracy", "test_accuracy"}` (accuracy = fraction of
        all pairs, positives and negatives together, classified correctly;
        `nan` for an empty set).

    Raises:
        ValueError: If no validation scores are given or a score is NaN.

    Example:
        >>> r = threshold_classification([3.0, 1.0], [2.0, 0.0], [1.0], [0.7])
        >>> r["threshold"], r["val_accuracy"], r["test_accuracy"]
        (0.5, 0.75, 0.5)
    """
    val_pos, val_neg, test_pos, test_neg = (
        np.asarray(x, dtype=np.float64).ravel()
        for x in (val_pos_scores, val_neg_scores, test_pos_scores, test_neg_scores)
    )
    scores = np.concatenate([val_pos, val_neg])
    if not len(scores):
        raise ValueError("no validation scores to choose a threshold on")
    if np.isnan(scores).any() or np.isnan(test_pos).any() or np.isnan(test_neg).any():
        raise ValueError("scores must not be NaN")
    labels = np.concatenate([np.ones(len(val_pos), bool), np.zeros(len(val_neg), bool)])
    order = np.argsort(scores, kind="stable")
    s, y = scores[order], labels[order]
    m = len(s)
    # Cut k (0..m): the k lowest scores are predicted negative, the rest positive.
    neg_below = np.concatenate([[0], np.cumsum(~y)])
    pos_below = np.concatenate([[0], np.cumsum(y)])
    correct = neg_below + (pos_below[-1] - pos_below)
    valid = np.ones(m + 1, bool)
    valid[1:m] = s[:-1] < s[1:]  # a cut inside a run of equal scores cannot be realised
    k = int(np.argmax(np.where(valid, correct, -1)))
    if k == 0:
        threshold = -math.inf
    elif k == m:
        threshold = math.inf
    else:
        lo, hi = s[k - 1], s[k]
        threshold = lo + (hi - lo) / 2
        if not lo < threshold <= hi:  # adjacent floats
            threshold = hi
        threshold = float(threshold)

    def accuracy(pos, neg):
        total = len(pos) + len(neg)
        return float(((pos >= threshold).sum() + (neg < threshold).sum()) / total) if total else math.nan

    return {
        "threshold": threshold,
        "val_accuracy": accuracy(val_pos, val_neg),
        "test_accuracy": accuracy(test_pos, test_neg),
    }


def _ranking_stats(scores: np.ndarray, relevant: np.ndarray, ignore: np.ndarray):
    """Per-row ranking statistics of `(b, n)` scores.

    `relevant` marks the positives, `ignore` the entries that take no part
    (their scores must already be `-inf`, so that they sort last). Returns
    `(ap, rank_sum, num_relevant)` per row where `ap` is the average
    precision of ranking all non-ignored entries (ties as in scikit-learn: all
    tied entries share the precision at the end of their group) and `rank_sum`
    sums, over the relevant entries, `1 + #negatives scored higher + #negatives
    tied / 2`, the (mid-)rank among itself and the non-relevant entries.
    """
    b, n = scores.shape
    order = np.argsort(-scores, axis=1, kind="stable")
    s = np.take_along_axis(scores, order, axis=1)
    rel = np.take_along_axis(relevant, order, axis=1)
    neg = ~rel & ~np.take_along_axis(ignore, order, axis=1)
    idx = np.broadcast_to(np.arange(n), (b, n))
    differs = s[:, 1:] != s[:, :-1]
    is_end = np.concatenate([differs, np.ones((b, 1), bool)], axis=1)
    is_start = np.concatenate([np.ones((b, 1), bool), differs], axis=1)
    end = np.minimum.accumulate(np.where(is_end, idx, n)[:, ::-1], axis=1)[:, ::-1]
    start = np.maximum.accumulate(np.where(is_start, idx, 0), axis=1)
    cum_rel = np.cumsum(rel, axis=1)
    cum_neg = np.cumsum(neg, axis=1)
    num_rel = cum_rel[:, -1]
    precision_at_end = np.take_along_axis(cum_rel, end, axis=1) / (end + 1.0)
    ap = np.where(rel, precision_at_end, 0.0).sum(axis=1) / np.maximum(num_rel, 1)
    neg_before = np.take_along_axis(cum_neg - neg, start, axis=1)
    neg_tied = np.take_along_axis(cum_neg, end, axis=1) - neg_before
    rank_sum = np.where(rel, 1.0 + neg_before + 0.5 * neg_tied, 0.0).sum(axis=1)
    return ap, rank_sum, num_rel


def _labels_and_scores(labels, scores):
    """Flat bool labels and float64 scores of equal length, no NaN score, or `ValueError`."""
    labels = np.asarray(labels, dtype=bool).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if labels.shape != scores.shape:
        raise ValueError("labels and scores must have the same length")
    if np.isnan(scores).any():
        raise ValueError("scores must not be NaN")
    return labels, scores


def average_precision(labels, scores) -> float:
    """Average precision of ranking items by descending score (scikit-learn compatible).

    `AP = sum_k (R_k - R_{k-1}) P_k` over the distinct score thresholds, so
    tied items share the precision at the end of their tie group (the same value
    as `sklearn.metrics.average_precision_score`).

    Args:
        labels: Booleans (or 0/1), `True` for the relevant items.
        scores: Scores, higher = more likely relevant; no NaN.

    Returns:
        The AP, or `nan` if there is no relevant item.

    Example:
        >>> average_precision([1, 0, 1], [0.9, 0.8, 0.7])  # (1/1 + 2/3) / 2
        0.8333333333333333
    """
    labels, scores = _labels_and_scores(labels, scores)
    if not labels.any():
        return math.nan
    ap, _, _ = _ranking_stats(scores[None, :], labels[None, :], np.zeros((1, len(labels)), bool))
    return float(ap[0])


def best_f1(labels, scores) -> tuple[float, float]:
    """The best F1 over all thresholds "positive iff score >= t".

    Args:
        labels: Booleans, `True` for the positives.
        scores: Scores, higher = more likely positive; no NaN.

    Returns:
        `(f1, threshold)`: the highest F1 and the threshold `t` reaching it (a
        score; on a tie the highest such one); items with `score >= t` are
        predicted positive. `(nan, nan)` without positives.

    Example:
        >>> best_f1([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1])  # threshold 0.7: P = 2/3, R = 1
        (0.8, 0.7)
    """
    labels, scores = _labels_and_scores(labels, scores)
    num_pos = int(labels.sum())
    if not num_pos:
        return math.nan, math.nan
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    is_end = np.concatenate([s[1:] != s[:-1], [True]])
    tp = np.cumsum(y)[is_end]
    predicted = (np.flatnonzero(is_end) + 1).astype(np.float64)
    f1 = 2.0 * tp / (predicted + num_pos)  # 2TP / (2TP + FP + FN)
    k = int(np.argmax(f1))  # on a tie, the highest threshold
    return float(f1[k]), float(s[is_end][k])


def threshold_f1(val_pos_scores, val_neg_scores, test_pos_scores, test_neg_scores) -> dict:
    """F1 of the positives with the threshold that maximises validation F1.

    The protocol of Ganea et al. (2018) and order embeddings: the threshold
    is chosen on the validation pairs only (`best_f1`: a pair is
    predicted positive iff `score >= threshold`) and applied to the test
    pairs.

    Args:
        val_pos_scores, val_neg_scores, test_pos_scores, test_neg_scores: as
            in `threshold_classification`.

    Returns:
        `{"f1_threshold", "val_f1", "test_f1", "test_precision", "test_recall"}`
        (`nan` where undefined: no positive, or nothing predicted positive).

    Raises:
        ValueError: If there is no positive validation score or a score is NaN.

    Example:
        >>> r = threshold_f1([3.0, 1.0], [2.0, 0.0], [1.5, 0.5], [1.2, 0.2])
        >>> r["f1_threshold"], r["val_f1"], r["test_f1"]  # 1.0 beats 3.0 on validation
        (1.0, 0.8, 0.5)
    """
    val_pos, val_neg, test_pos, test_neg = (
        np.asarray(x, dtype=np.float64).ravel()
        for x in (val_pos_scores, val_neg_scores, test_pos_scores, test_neg_scores)
    )
    if not len(val_pos):
        raise ValueError("no positive validation scores to choose a threshold on")
    if np.isnan(test_pos).any() or np.isnan(test_neg).any():
        raise ValueError("scores must not be NaN")
    labels = np.concatenate([np.ones(len(val_pos), bool), np.zeros(len(val_neg), bool)])
    val_f1, threshold = best_f1(labels, np.concatenate([val_pos, val_neg]))
    tp = int((test_pos >= threshold).sum())
    predicted = tp + int((test_neg >= threshold).sum())
    precision = tp / predicted if predicted else math.nan
    recall = tp / len(test_pos) if len(test_pos) else math.nan
    f1 = 2.0 * tp / (predicted + len(test_pos)) if predicted + len(test_pos) else math.nan
    return {"f1_threshold": threshold, "val_f1": val_f1, "test_f1": float(f1),
            "test_precision": precision, "test_recall": recall}


def roc_auc(labels, scores) -> float:
    """Area under the ROC curve: the chance that a random positive outscores a random
    negative, ties counted half (the Mann-Whitney statistic, as scikit-learn's
    `roc_auc_score`).

    Args:
        labels: Booleans (or 0/1), `True` for the positives.
        scores: Scores, higher = more likely positive; no NaN.

    Returns:
        The AUC, or `nan` without positives or without negatives.

    Example:
        >>> roc_auc([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1])  # 3 of the 4 pairs ordered
        0.75
    """
    labels, scores = _labels_and_scores(labels, scores)
    num_pos, num_neg = int(labels.sum()), int((~labels).sum())
    if not num_pos or not num_neg:
        return math.nan
    ranks = average_ranks(scores)
    return float((ranks[labels].sum() - num_pos * (num_pos + 1) / 2.0) / (num_pos * num_neg))


def average_ranks(values) -> np.ndarray:
    """1-based ranks of `values`, ties sharing their average rank (as
    `scipy.stats.rankdata`).

    Example:
        >>> average_ranks([0.5, 0.1, 0.5]).tolist()
        [2.5, 1.0, 2.5]
    """
    values = np.asarray(values)
    order = np.argsort(values, kind="stable")
    s = values[order]
    first = np.concatenate([[True], s[1:] != s[:-1]])
    group = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], len(s))
    ranks = np.empty(len(s))
    ranks[order] = ((starts + ends - 1) / 2.0 + 1.0)[group]
    return ranks
