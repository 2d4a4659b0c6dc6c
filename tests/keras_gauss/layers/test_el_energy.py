import keras
import numpy as np
import pytest
from layer_test_case import run_layer_test

from keras_gauss import ELEnergy
from keras_gauss import GaussianEmbedding
from keras_gauss import ops as gauss_ops

LOG_2PI = np.log(2 * np.pi)


def _gaussians(shape, seed=0):
    rng = np.random.default_rng(seed)
    mean_i, mean_j = rng.normal(size=(2,) + shape).astype("float32")
    var_i, var_j = rng.uniform(0.1, 2.0, size=(2,) + shape).astype("float32")
    return mean_i, var_i, mean_j, var_j


@pytest.mark.parametrize("include_constant", [True, False])
def test_layer(include_constant):
    run_layer_test(
        ELEnergy,
        {"include_constant": include_constant},
        _gaussians((3, 4, 5)),
        expected_output_shape=(3, 4),
        expected_output_dtype="float32",
    )


def test_matches_ops_and_constant():
    inputs = _gaussians((6, 5), seed=1)
    with_constant = keras.ops.convert_to_numpy(ELEnergy()(*inputs))
    without = keras.ops.convert_to_numpy(ELEnergy(include_constant=False)(*inputs))
    np.testing.assert_allclose(
        with_constant,
        keras.ops.convert_to_numpy(gauss_ops.el_energy(*inputs)),
        rtol=1e-6,
    )
    np.testing.assert_allclose(with_constant, without - 2.5 * LOG_2PI, rtol=1e-5)


def test_broadcasts_one_word_against_a_list():
    mean_i, var_i, mean_j, var_j = _gaussians((2, 4, 3), seed=2)
    out = ELEnergy()(mean_i[:, :1], var_i[:, :1], mean_j, var_j)
    assert tuple(out.shape) == (2, 4)
    expected = ELEnergy()(
        np.repeat(mean_i[:, :1], 4, axis=1), np.repeat(var_i[:, :1], 4, axis=1),
        mean_j, var_j,
    )
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected), rtol=1e-6)


def test_float32_under_mixed_precision(mixed_float16):
    table = GaussianEmbedding(4, 50, min_variance=1e-3, max_variance=5.0)
    mean, var = table(np.array([0, 1, 2, 3]))
    assert keras.backend.standardize_dtype(mean.dtype) == "float16"
    energy = ELEnergy()(mean[:2], var[:2], mean[2:], var[2:])
    assert keras.backend.standardize_dtype(energy.dtype) == "float32"
    assert np.all(np.isfinite(keras.ops.convert_to_numpy(energy)))


@pytest.mark.parametrize("value", ["False", "no", None, 0.0])
def test_include_constant_must_be_a_bool(value):
    # bool("False") is True: a string from a settings file kept the constant
    with pytest.raises(TypeError, match="include_constant"):
        ELEnergy(include_constant=value)


def test_include_constant_takes_a_numpy_bool():
    assert ELEnergy(include_constant=np.bool_(False)).get_config()["include_constant"] is False
