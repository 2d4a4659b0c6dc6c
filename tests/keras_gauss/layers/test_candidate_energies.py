import keras
import numpy as np
import pytest

from keras_gauss import ops as gauss_ops
from keras_gauss.layers import ENERGIES
from keras_gauss.layers import ENERGY_LAYERS
from keras_gauss.layers import GaussianEmbedding
from keras_gauss.layers import candidate_energies


@pytest.mark.parametrize("energy", ENERGIES)
def test_positive_first_then_negatives_against_the_word(energy):
    words = GaussianEmbedding(10, 4, mean_initializer="random_normal",
                              variance_initializer="random_uniform", name="words")
    contexts = GaussianEmbedding(10, 4, mean_initializer="random_normal",
                                 variance_initializer="random_uniform", name="contexts")
    word, context, negatives = np.array([1, 7]), np.array([2, 3]), np.array([[4, 5], [6, 6]])
    got = keras.ops.convert_to_numpy(candidate_energies(ENERGY_LAYERS[energy](), words, contexts,
                                        word, context, negatives))
    assert got.shape == (2, 3)
    mean_w, var_w = words.means.numpy(), words.variances.numpy()
    mean_c, var_c = contexts.means.numpy(), contexts.variances.numpy()
    reference = gauss_ops.el_energy if energy == "el" else gauss_ops.kl_energy  # word general
    for b in range(2):
        for j, c in enumerate([context[b], *negatives[b]]):
            want = float(reference(mean_w[word[b]], var_w[word[b]], mean_c[c], var_c[c]))
            np.testing.assert_allclose(got[b, j], want, rtol=1e-5)
