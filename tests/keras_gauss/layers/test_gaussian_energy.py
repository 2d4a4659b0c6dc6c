import keras
import numpy as np
import pytest

from keras_gauss import ContainmentEnergy
from keras_gauss import ELEnergy
from keras_gauss import GaussianEmbedding
from keras_gauss import GaussianEnergy
from keras_gauss import KLEnergy

ENERGIES = [ELEnergy, KLEnergy, ContainmentEnergy]


@pytest.mark.parametrize("energy", ENERGIES)
def test_tables_of_different_dimensions_are_one_clear_error_in_a_functional_model(energy):
    words = GaussianEmbedding(10, 8, name="words")
    contexts = GaussianEmbedding(10, 6, name="contexts")
    ids = keras.Input((), dtype="int32")
    with pytest.raises(ValueError, match="same dimension") as raised:
        energy(name="scores")(*words(ids), *contexts(ids))
    said = str(raised.value)
    assert "'scores'" in said and "first mean (None, 8)" in said and "second mean (None, 6)" in said
    assert "infer the output shape" not in said


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("energy", ENERGIES)
def test_mismatched_dimensions_eagerly_are_one_clear_error(energy, training):
    mean, var = np.zeros((2, 3), "float32"), np.ones((2, 3), "float32")
    with pytest.raises(ValueError, match="same dimension"):
        energy()(mean, var, np.zeros((2, 4), "float32"), np.ones((2, 4), "float32"),
                 training=training)
    with pytest.raises(ValueError, match=r"first variance \(2, 4\)"):  # a variance of the wrong size
        energy()(mean, np.ones((2, 4), "float32"), mean, var, training=training)


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("energy", ENERGIES)
def test_batches_that_do_not_broadcast_are_one_clear_error(energy, training):
    mean, var = np.zeros((4, 3), "float32"), np.ones((4, 3), "float32")
    with pytest.raises(ValueError, match=r"broadcast on their leading axes.*\(5, 3\)"):
        energy()(mean, var, np.zeros((5, 3), "float32"), np.ones((5, 3), "float32"),
                 training=training)
    # ones that do broadcast: one word against a list of candidates
    assert tuple(energy()(mean[:, None], var[:, None], np.zeros((4, 6, 3), "float32"),
                          np.ones((4, 6, 3), "float32"), training=training).shape) == (4, 6)


@pytest.mark.parametrize("training", [False, True])
def test_a_spherical_variance_of_one_column_still_broadcasts(training):
    mean = np.random.default_rng(0).normal(size=(2, 3)).astype("float32")
    one = np.full((2, 1), 0.5, "float32")
    full = np.full((2, 3), 0.5, "float32")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(ELEnergy()(mean, one, mean[::-1], one, training=training)),
        keras.ops.convert_to_numpy(ELEnergy()(mean, full, mean[::-1], full)), rtol=1e-6)


@pytest.mark.parametrize("training", [False, True])
def test_a_subclass_needs_only_compute(training):
    # a user's own energy without a `keras_gauss.energies` descriptor
    # failed with "'NoneType' object has no attribute 'engines'"
    class MeanDistance(GaussianEnergy):
        def compute(self, general_mean, general_var, specific_mean, specific_var):
            return -keras.ops.sum(keras.ops.square(general_mean - specific_mean), axis=-1)

    ones = np.ones((1, 2), "float32")
    energy = MeanDistance()(ones * 0, ones, ones, ones, training=training)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(energy), [-2.0])
