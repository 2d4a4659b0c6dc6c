"""`.keras` save and reload of small models built from keras_gauss parts."""

import keras
import numpy as np

from keras_gauss import ELEnergy
from keras_gauss import GaussianEmbedding
from keras_gauss import KLEnergy
from keras_gauss import MaxMarginRanking
from keras_gauss import NormClip
from keras_gauss import SparseAdagrad
from keras_gauss import VarianceClip

VOCAB, DIM, NEGATIVES = 25, 6, 3


def _data(seed=0, n=16):
    rng = np.random.default_rng(seed)
    x = [rng.integers(0, VOCAB, (n, 1)).astype("int32"),
         rng.integers(0, VOCAB, (n, 1 + NEGATIVES)).astype("int32")]
    y = np.tile(np.eye(1, 1 + NEGATIVES, dtype="float32"), (n, 1))
    return x, y


def _check_round_trip(model, tmp_path):
    x, y = _data()
    model.compile(optimizer=SparseAdagrad(0.1), loss=MaxMarginRanking(margin=0.5))
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    path = tmp_path / "model.keras"
    model.save(path)
    revived = keras.saving.load_model(path)

    probe, _ = _data(seed=1)
    np.testing.assert_array_equal(
        model.predict(probe, verbose=0), revived.predict(probe, verbose=0))
    assert isinstance(revived.optimizer, SparseAdagrad)
    for a, b in zip(model.optimizer.variables, revived.optimizer.variables):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert isinstance(revived.loss, MaxMarginRanking)
    assert revived.loss.margin == 0.5
    # the tables keep their constraints
    for layer in revived.layers:
        if isinstance(layer, GaussianEmbedding):
            assert isinstance(layer.means.constraint, NormClip)
            assert isinstance(layer.variances.constraint, VarianceClip)
    # and training goes on identically
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    revived.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    np.testing.assert_allclose(
        model.predict(probe, verbose=0), revived.predict(probe, verbose=0),
        rtol=1e-6, atol=1e-6)
    return revived


def test_el_model_with_two_tables(tmp_path):
    words = GaussianEmbedding(VOCAB, DIM, name="words")
    contexts = GaussianEmbedding(VOCAB, DIM, covariance="spherical", name="contexts")
    word = keras.Input((1,), dtype="int32", name="word")
    context = keras.Input((1 + NEGATIVES,), dtype="int32", name="context")
    energies = ELEnergy(include_constant=False)(*words(word), *contexts(context))
    model = keras.Model([word, context], energies)
    revived = _check_round_trip(model, tmp_path)
    assert revived.get_layer("contexts").covariance == "spherical"
    assert revived.get_layer("contexts").variances.shape == (VOCAB, 1)


def test_kl_model_with_shared_table(tmp_path):
    nodes = GaussianEmbedding(VOCAB, DIM, name="nodes", max_norm=1.5,
                              min_variance=0.2, max_variance=3.0)
    general = keras.Input((1,), dtype="int32", name="general")
    specific = keras.Input((1 + NEGATIVES,), dtype="int32", name="specific")
    energies = KLEnergy()(*nodes(general), *nodes(specific))
    model = keras.Model([general, specific], energies)
    revived = _check_round_trip(model, tmp_path)
    assert len(revived.trainable_weights) == 2
    table = revived.get_layer("nodes")
    assert (table.max_norm, table.min_variance, table.max_variance) == (1.5, 0.2, 3.0)
