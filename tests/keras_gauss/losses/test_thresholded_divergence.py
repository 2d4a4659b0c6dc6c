import keras
import numpy as np
import pytest
from backends import gradients

from keras_gauss.losses import ThresholdedDivergence
from keras_gauss.losses.thresholded_divergence import thresholded_divergence


def test_matches_the_formula_item_by_item():
    rng = np.random.default_rng(0)
    energies = -rng.exponential(2.0, size=(6, 4))
    labels = np.zeros((6, 4))
    labels[:, 0] = 1.0
    gamma, m = 0.7, 1.5
    d = -energies
    want = np.maximum(d[:, 0] - gamma, 0) + np.maximum(gamma + m - d[:, 1:], 0).sum(axis=1)
    got = thresholded_divergence(labels, energies, threshold=gamma, margin=m)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    # Where every negative lies beyond the threshold it is the paper's form.
    far = d[:, 1:] >= gamma
    paper = np.maximum(m - np.maximum(d[:, 1:] - gamma, 0), 0)
    np.testing.assert_allclose(np.maximum(gamma + m - d[:, 1:], 0)[far], paper[far])


def test_negatives_inside_the_tolerance_still_get_a_gradient():
    # All Gaussians alike (every divergence 0 < threshold): the paper's form is
    # flat there and training stays collapsed; this loss pushes the negatives out.
    energies = keras.Variable(np.zeros((3, 4), np.float32))
    labels = np.array([[1.0, 0.0, 0.0, 0.0]] * 3, np.float32)
    loss = ThresholdedDivergence(threshold=1.0, margin=2.0)
    grad, = gradients(lambda: keras.ops.sum(loss(labels, energies.value)), [energies])
    assert (grad[:, 1:] > 0).all()  # lower the negatives' energies: raise their divergence
    assert (grad[:, 0] == 0).all()  # the positive is within its tolerance


@pytest.mark.parametrize("threshold, margin", [(-0.1, 1.0), (0.0, 0.0)])
def test_bad_arguments(threshold, margin):
    with pytest.raises(ValueError):
        ThresholdedDivergence(threshold, margin)


@pytest.mark.parametrize("threshold, margin, argument", [
    (float("nan"), 1.0, "threshold"), (float("inf"), 1.0, "threshold"),
    (0.0, float("inf"), "margin")])
def test_a_nan_or_infinite_setting_is_an_error(threshold, margin, argument):
    # a NaN threshold passed `threshold < 0` and made every loss NaN
    with pytest.raises(ValueError, match=argument):
        ThresholdedDivergence(threshold, margin)


def test_numpy_settings_are_taken():
    loss = ThresholdedDivergence(np.float64(1.0), np.float32(2.0))
    assert (loss.threshold, loss.margin) == (1.0, 2.0)
