"""keras_gauss.metrics against scikit-learn's, on random data with ties.

The package keeps its own NumPy metrics: the reconstruction ranks every
query row of an `(n_queries, n_nodes)` score block at once (`_ranking_stats`
through `average_precision`), and the installed package needs no
scikit-learn. This file holds them to `sklearn.metrics`, the reference.
"""

import numpy as np
import pytest

from keras_gauss.metrics import average_precision
from keras_gauss.metrics import best_f1
from keras_gauss.metrics import roc_auc
from keras_gauss.metrics import threshold_classification
from keras_gauss.metrics import threshold_f1

metrics = pytest.importorskip("sklearn.metrics")

SEEDS = range(20)


def _data(seed, n=200):
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < rng.uniform(0.1, 0.9)
    labels[:2] = [True, False]  # both classes
    # rounded: many ties, as between equal energies
    scores = np.round(rng.normal(size=n) + labels * rng.uniform(0, 2), rng.integers(0, 3))
    return labels, scores


@pytest.mark.parametrize("seed", SEEDS)
def test_average_precision_and_auc_equal_scikit_learns(seed):
    labels, scores = _data(seed)
    assert average_precision(labels, scores) == pytest.approx(
        metrics.average_precision_score(labels, scores), abs=1e-12)
    assert roc_auc(labels, scores) == pytest.approx(
        metrics.roc_auc_score(labels, scores), abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_best_f1_is_scikit_learns_best_over_the_curve(seed):
    labels, scores = _data(seed)
    precision, recall, _ = metrics.precision_recall_curve(labels, scores)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.nan_to_num(2 * precision * recall / (precision + recall))
    best, threshold = best_f1(labels, scores)
    assert best == pytest.approx(f1.max(), abs=1e-12)
    assert metrics.f1_score(labels, scores >= threshold) == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_thresholds_chosen_on_validation_score_test_as_scikit_learn_does(seed):
    labels, scores = _data(seed)
    test_labels, test_scores = _data(seed + 100)
    val = (scores[labels], scores[~labels])
    test = (test_scores[test_labels], test_scores[~test_labels])
    chosen = threshold_classification(*val, *test)
    assert chosen["val_accuracy"] == pytest.approx(
        metrics.accuracy_score(labels, scores >= chosen["threshold"]), abs=1e-12)
    assert chosen["test_accuracy"] == pytest.approx(
        metrics.accuracy_score(test_labels, test_scores >= chosen["threshold"]), abs=1e-12)
    # no threshold scikit-learn's accuracy would prefer on validation
    candidates = np.r_[np.unique(scores), np.inf]
    assert chosen["val_accuracy"] == pytest.approx(
        max(metrics.accuracy_score(labels, scores >= t) for t in candidates), abs=1e-12)
    f1 = threshold_f1(*val, *test)
    predicted = test_scores >= f1["f1_threshold"]
    assert f1["test_f1"] == pytest.approx(metrics.f1_score(test_labels, predicted), abs=1e-12)
    assert f1["test_precision"] == pytest.approx(
        metrics.precision_score(test_labels, predicted), abs=1e-12)
    assert f1["test_recall"] == pytest.approx(
        metrics.recall_score(test_labels, predicted), abs=1e-12)
