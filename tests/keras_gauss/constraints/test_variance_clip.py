import keras
import numpy as np
import pytest

from keras_gauss import RowConstraint
from keras_gauss import VarianceClip


def test_clips_elementwise():
    out = VarianceClip(0.5, 2.0)(np.array([[0.1, 1.0, 9.0], [-3.0, 0.5, 2.0]]))
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(out), [[0.5, 1.0, 2.0], [0.5, 0.5, 2.0]])


def test_inside_values_bit_identical():
    w = np.random.default_rng(0).uniform(0.05, 5.0, (30, 4)).astype("float32")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(VarianceClip()(w)), w)


def test_rowwise():
    constraint = VarianceClip(0.2, 1.0)
    assert isinstance(constraint, RowConstraint) and constraint.rowwise is True


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"min_value": 0.0}, "min_value"),
        ({"min_value": -1.0}, "min_value"),
        ({"min_value": 2.0, "max_value": 1.0}, "must not exceed"),
    ],
)
def test_bad_bounds(kwargs, match):
    with pytest.raises(ValueError, match=match):
        VarianceClip(**kwargs)


@pytest.mark.parametrize(
    "kwargs, name",
    [({"min_value": "0.1"}, "min_value"), ({"max_value": None}, "max_value"),
     ({"min_value": False}, "min_value")],
)
def test_bounds_must_be_numbers(kwargs, name):
    with pytest.raises(TypeError, match=name):
        VarianceClip(**kwargs)


def test_equal_bounds():
    out = VarianceClip(1, 1)(np.array([0.0, 3.0]))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(out), [1.0, 1.0])


def test_config_round_trip():
    constraint = VarianceClip(0.1, 4)
    config = constraint.get_config()
    assert config == {"min_value": 0.1, "max_value": 4.0}
    assert VarianceClip.from_config(config).get_config() == config
    revived = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(constraint))
    assert isinstance(revived, VarianceClip) and revived.get_config() == config


def test_numpy_bounds_are_taken():
    config = VarianceClip(np.float32(0.25), np.int64(4)).get_config()
    assert config == {"min_value": 0.25, "max_value": 4.0}
    assert all(type(value) is float for value in config.values())
