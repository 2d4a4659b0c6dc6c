"""keras_gauss.metrics: hand-checked values, ties, and scikit-learn's definition of AP."""

import math

import numpy as np
import pytest

from keras_gauss.metrics import average_precision, average_ranks, best_f1, threshold_classification


def test_threshold_classification_hand_checked():
    # Sorted val scores 0(neg) 1(pos) 2(neg) 3(pos): cuts at 0.5 and 2.5 both reach 3/4;
    # the smaller one wins. Test: pos 1.0 >= 0.5 right, pos 0.2 wrong, neg 0.7 wrong, neg 0.1 right.
    result = threshold_classification([3.0, 1.0], [2.0, 0.0], [1.0, 0.2], [0.7, 0.1])
    assert result == {"threshold": 0.5, "val_accuracy": 0.75, "test_accuracy": 0.5}


def test_threshold_uses_validation_only_and_respects_ties():
    val = ([5.0, 4.0], [1.0, 0.0])
    a = threshold_classification(*val, [4.5], [0.5])
    b = threshold_classification(*val, [-10.0], [10.0])
    assert a["threshold"] == b["threshold"] == 2.5
    assert (a["test_accuracy"], b["test_accuracy"]) == (1.0, 0.0)
    # A tie between a positive and a negative score cannot be split: both sides of it together.
    tied = threshold_classification([1.0, 1.0], [1.0, 0.0], [], [])
    assert tied["threshold"] == 0.5 and tied["val_accuracy"] == 0.75
    assert math.isnan(tied["test_accuracy"])
    # Everything positive is best: threshold -inf.
    assert threshold_classification([0.0, 1.0], [], [], [-5.0])["threshold"] == -math.inf
    with pytest.raises(ValueError, match="NaN"):
        threshold_classification([np.nan], [0.0], [], [])


def test_average_precision_and_best_f1_hand_checked():
    assert average_precision([1, 0, 1], [0.9, 0.8, 0.7]) == pytest.approx((1 + 2 / 3) / 2)
    assert average_precision([0, 1, 1], [3.0, 2.0, 1.0]) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert average_precision([1, 0], [0.5, 0.5]) == 0.5  # a tie shares the precision at its end
    assert math.isnan(average_precision([0, 0], [1.0, 2.0]))
    assert best_f1([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]) == (pytest.approx(0.8), 0.7)
    # Cuts {2.0}: F1 = 2/3; {2.0, 1.0, 1.0} (the tie goes together): F1 = 2*2 / (3 + 2) = 0.8.
    assert best_f1([1, 1, 0], [2.0, 1.0, 1.0]) == (pytest.approx(0.8), 1.0)


def test_average_precision_matches_a_direct_computation():
    # AP = sum over distinct thresholds of (R_k - R_{k-1}) * P_k, with ties grouped.
    rng = np.random.default_rng(0)
    labels = rng.random(300) < 0.3
    scores = rng.integers(0, 40, 300).astype(float)  # many ties
    expected = 0.0
    for t in np.unique(scores)[::-1]:
        chosen = scores >= t
        recall_gain = (labels & (scores == t)).sum() / labels.sum()
        expected += recall_gain * (labels & chosen).sum() / chosen.sum()
    assert average_precision(labels, scores) == pytest.approx(expected)


def test_average_ranks_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    values = np.random.default_rng(0).integers(0, 5, 50).astype(float)
    np.testing.assert_array_equal(average_ranks(values), stats.rankdata(values))
