import keras
import numpy as np
import pytest

from keras_gauss import NormClip
from keras_gauss import RowConstraint


def _rows(seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(40, 6)).astype("float32")
    w = w * rng.uniform(0.1, 3.0, (40, 1)) / np.linalg.norm(w, axis=-1, keepdims=True)
    return w.astype("float32")


def test_short_rows_bit_identical_long_rows_on_sphere():
    w = _rows()
    out = keras.ops.convert_to_numpy(NormClip(1.5)(w))
    norms = np.linalg.norm(w, axis=-1)
    short, long = norms <= 1.5, norms > 1.5
    assert short.any() and long.any()
    np.testing.assert_array_equal(out[short], w[short])
    np.testing.assert_allclose(np.linalg.norm(out[long], axis=-1), 1.5, rtol=1e-6)
    # same direction
    np.testing.assert_allclose(
        out[long] / 1.5, w[long] / norms[long, None], rtol=1e-5, atol=1e-7)


def test_zero_row_and_dtype():
    # (JAX computes in float32 unless `jax_enable_x64` is set)
    dtype = "float32" if keras.backend.backend() == "jax" else "float64"
    w = np.zeros((2, 3), dtype)
    w[1] = [3.0, 4.0, 0.0]
    out = NormClip(1.0)(w)
    assert keras.backend.standardize_dtype(out.dtype) == dtype
    np.testing.assert_allclose(keras.ops.convert_to_numpy(out),
                               [[0, 0, 0], [0.6, 0.8, 0.0]],
                               rtol=1e-12 if dtype == "float64" else 1e-6)


def test_rowwise():
    constraint = NormClip(1.0)
    assert isinstance(constraint, RowConstraint) and constraint.rowwise is True
    w = _rows(1)
    full = keras.ops.convert_to_numpy(constraint(w))
    rows = [3, 17, 17, 0]
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(constraint(w[rows])), full[rows])


@pytest.mark.parametrize("bad", [0, 0.0, -1.0])
def test_bound_must_be_positive(bad):
    with pytest.raises(ValueError, match="max_norm"):
        NormClip(bad)


@pytest.mark.parametrize("bad", ["2", None, True, [2.0]])
def test_bound_must_be_a_number(bad):
    with pytest.raises(TypeError, match="max_norm"):
        NormClip(bad)


def test_config_round_trip():
    constraint = NormClip(3)
    config = constraint.get_config()
    assert config == {"max_norm": 3.0}
    assert NormClip.from_config(config).get_config() == config
    revived = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(constraint))
    assert isinstance(revived, NormClip) and revived.max_norm == 3.0


def test_a_numpy_bound_is_taken():
    assert NormClip(np.float32(1.5)).get_config() == {"max_norm": 1.5}
