import keras
import numpy as np
import pytest
from backends import float64_loss_available
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


def test_energies_of_single_pairs_get_a_loss_each():
    # `(batch,)` energies (a model scoring one pair per example): each pair
    # its own loss, as `(batch, 1)` lists; summed, the batch's "mean" was
    # its sum and sample weights were lost
    energies = -np.array([0.5, 3.0, 0.2, 5.0], np.float32)
    labels = np.array([1.0, 1.0, 0.0, 0.0], np.float32)
    loss = ThresholdedDivergence(threshold=1.0, margin=2.0)
    np.testing.assert_allclose(float(loss(labels, energies)),
                               float(loss(labels[:, None], energies[:, None])), rtol=1e-6)
    weights = np.array([0.0, 1.0, 0.0, 0.0], np.float32)
    np.testing.assert_allclose(float(loss(labels, energies, sample_weight=weights)),
                               2.0 / 4, rtol=1e-6)  # (3 - 1) for the second pair only


@pytest.mark.parametrize("labels_shape", [(4,), (4, 1), (4, 2)])
def test_labels_that_do_not_fit_the_lists_are_one_clear_error(labels_shape):
    # (4, 1) labels broadcast over (4, 3) lists labelled every item alike
    with pytest.raises(ValueError, match=r"ThresholdedDivergence: `y_true` shape .* does not"):
        thresholded_divergence(np.ones(labels_shape, np.float32), -np.ones((4, 3), np.float32))


def test_labels_shared_by_every_list_are_taken():
    energies = -np.random.default_rng(0).exponential(2.0, size=(5, 3)).astype(np.float32)
    shared = np.array([[1.0, 0.0, 0.0]], np.float32)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(thresholded_divergence(shared, energies)),
        keras.ops.convert_to_numpy(thresholded_divergence(np.repeat(shared, 5, 0), energies)))


def test_dtype_float64_computes_in_float64():
    # dtype="float64" gave a float64 loss computed in float32 (0.9 came out
    # 0.9000000357627869)
    if not float64_loss_available():
        pytest.skip("float64 losses come out float32 here (JAX without jax_enable_x64; "
                    "torch: Keras 3.15's mean over the batch)")
    y_true, y_pred = np.array([[1.0, 0.0]]), np.array([[-0.1, -0.2]])
    loss = ThresholdedDivergence(threshold=0.0, margin=1.0, dtype="float64")(y_true, y_pred)
    assert keras.backend.standardize_dtype(loss.dtype) == "float64"
    assert float(loss) == pytest.approx(0.1 + 0.8, abs=1e-15)  # max(0, 0.1), max(0, 1 - 0.2)


def test_a_nan_label_makes_its_lists_loss_nan_not_a_silent_partial_sum():
    labels = np.array([[1.0, 0.0], [1.0, np.nan]], "float32")
    losses = np.asarray(thresholded_divergence(labels, np.zeros((2, 2), "float32"), margin=1.0))
    assert losses[0] == 1.0 and np.isnan(losses[1])  # the negative's max(0, 0 + 1 - 0)
    single = np.asarray(thresholded_divergence(np.array([1.0, np.nan], "float32"),
                                               np.zeros(2, "float32"), margin=1.0))
    assert single[0] == 0.0 and np.isnan(single[1])
