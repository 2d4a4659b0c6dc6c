"""`research/combined_score.py`: its thresholds, cross-validation, choice rule and terms."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from keras_gauss.hierarchy.evaluate import edge_scores, threshold_classification

_PATH = Path(__file__).resolve().parent / "combined_score.py"
_spec = importlib.util.spec_from_file_location("combined_score", _PATH)
combined = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(combined)


def test_threshold_accuracy_matches_the_package_protocol():
    rng = np.random.default_rng(0)
    fit_pos, fit_neg = rng.normal(1, 1, 200), rng.normal(-1, 1, 300)
    pos, neg = rng.normal(1, 1, 100), rng.normal(-1, 1, 150)
    expected = threshold_classification(fit_pos, fit_neg, pos, neg)["test_accuracy"]
    assert combined.threshold_accuracy(fit_pos, fit_neg, pos, neg) == pytest.approx(expected, abs=1e-3)
    # a perfect split on the fitting half carries over to separable pairs
    assert combined.threshold_accuracy(np.array([2.0, 3.0]), np.array([0.0, 1.0]),
                                       np.array([5.0]), np.array([-5.0])) == 1.0


def test_cross_validation_never_sees_the_scored_half():
    # each half is separable by a threshold the other half gets wrong
    pos = np.array([1.0, 1.0, 3.0, 3.0])
    neg = np.array([0.0, 0.0, 2.0, 2.0])
    half = np.array([True, True, False, False])
    assert combined.cross_validated(pos, neg, half) == 0.5
    assert combined.threshold_accuracy(pos[half], neg[half], pos[half], neg[half]) == 1.0


def test_terms_and_combination():
    rng = np.random.default_rng(1)
    means, variances = rng.normal(size=(30, 4)), rng.uniform(0.5, 2.0, (30, 4))
    train = np.array([[1, 0], [2, 0], [3, 1]])
    tables = combined.Tables(means, variances, train, reference=10)
    pairs = np.array([[3, 1], [1, 3], [5, 7]])
    f = tables.features(pairs)
    c, g = pairs[:, 0], pairs[:, 1]  # KL(N_c || N_g), written out independently
    expected = 0.5 * (np.sum(variances[c] / variances[g] + (means[c] - means[g]) ** 2 / variances[g]
                             + np.log(variances[g]) - np.log(variances[c]), axis=1) - 4)
    assert np.allclose(f["kl"], expected)
    assert np.allclose(-f["kl"], edge_scores(means, variances, pairs))
    assert np.allclose(f["gen"], np.log(variances[pairs[:, 1]]).sum(1) - np.log(variances[pairs[:, 0]]).sum(1))
    assert np.allclose(f["breadth"], [np.log(2), -np.log(2), 0.0])  # node 1 has one training descendant
    assert np.allclose(combined.combine(f, "gen", 0.1, 9.0), -f["kl"] + 0.1 * f["gen"])  # gamma unused
    assert np.allclose(combined.combine(f, "gen+dist", 0.0, 0.5), -f["kl"] - 0.5 * f["dist"])
    assert np.allclose(combined.combine(f, "gen+breadth", 0.0, 2.0), -f["kl"] + 2.0 * f["breadth"])
    assert np.isfinite(f["z"]).all()


def test_choice_keeps_random_accuracy_and_reports_the_best_random():
    cv = {key: (0.90, 0.5, 0.5) for family, grid in combined.GRIDS.items()
          for key in [(family, *bg) for bg in grid]}
    cv[("gen", 0.1, 0.0)] = (0.85, 0.99, 0.99)  # best mean, but costs random negatives
    cv[("gen", 0.05, 0.0)] = (0.899, 0.7, 0.7)
    cv[("gen+z", 0.0, 5.0)] = (0.93, 0.5, 0.5)
    chosen = combined.choose(cv)
    assert chosen["gen"] == (0.05, 0.0)
    assert chosen["best random: gen+z"] == (0.0, 5.0)
