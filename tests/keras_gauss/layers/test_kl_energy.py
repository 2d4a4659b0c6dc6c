import keras
import numpy as np
from layer_test_case import run_layer_test

from keras_gauss import GaussianEmbedding
from keras_gauss import KLEnergy
from keras_gauss import ops as gauss_ops


def _gaussians(shape, seed=0):
    rng = np.random.default_rng(seed)
    mean_i, mean_j = rng.normal(size=(2,) + shape).astype("float32")
    var_i, var_j = rng.uniform(0.1, 2.0, size=(2,) + shape).astype("float32")
    return mean_i, var_i, mean_j, var_j


def test_layer():
    run_layer_test(
        KLEnergy,
        {},
        _gaussians((3, 4, 5)),
        expected_output_shape=(3, 4),
        expected_output_dtype="float32",
    )


def test_is_minus_kl_of_specific_from_general():
    general_mean, general_var, specific_mean, specific_var = _gaussians((6, 5))
    energy = np.asarray(
        KLEnergy()(general_mean, general_var, specific_mean, specific_var)
    )
    kl = np.asarray(
        gauss_ops.kl_divergence(specific_mean, specific_var, general_mean, general_var)
    )
    np.testing.assert_allclose(energy, -kl, rtol=1e-6)
    assert np.all(energy <= 0)


def test_general_broad_around_specific_scores_higher():
    animal = (np.zeros((1, 2), "float32"), np.full((1, 2), 4.0, "float32"))
    dog = (np.full((1, 2), 0.5, "float32"), np.full((1, 2), 0.5, "float32"))
    layer = KLEnergy()
    assert float(layer(*animal, *dog)[0]) > float(layer(*dog, *animal)[0])


def test_float32_under_mixed_precision(mixed_float16):
    table = GaussianEmbedding(4, 50, min_variance=1e-3, max_variance=5.0)
    mean, var = table(np.array([0, 1, 2, 3]))
    assert keras.backend.standardize_dtype(mean.dtype) == "float16"
    energy = KLEnergy()(mean[:2], var[:2], mean[2:], var[2:])
    assert keras.backend.standardize_dtype(energy.dtype) == "float32"
    assert np.all(np.isfinite(keras.ops.convert_to_numpy(energy)))
