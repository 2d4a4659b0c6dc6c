"""`.keras` save and reload of small models built from keras_gauss parts."""

import keras
import numpy as np

from keras_gauss import GaussianEmbedding
from keras_gauss import MaxMarginRanking
from keras_gauss import NormClip
from keras_gauss import SparseAdagrad
from keras_gauss import VarianceClip
from ranking_models import VOCAB, el_two_tables, kl_shared_table, ranking_data


def _check_round_trip(model, tmp_path):
    x, y = ranking_data(n=16)
    model.compile(optimizer=SparseAdagrad(0.1), loss=MaxMarginRanking(margin=0.5))
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    path = tmp_path / "model.keras"
    model.save(path)
    revived = keras.saving.load_model(path)

    probe, _ = ranking_data(seed=1, n=16)
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
    revived = _check_round_trip(keras.Model(*el_two_tables()), tmp_path)
    assert revived.get_layer("contexts").covariance == "spherical"
    assert revived.get_layer("contexts").variances.shape == (VOCAB, 1)


def test_kl_model_with_shared_table(tmp_path):
    revived = _check_round_trip(keras.Model(*kl_shared_table()), tmp_path)
    assert len(revived.trainable_weights) == 2
    table = revived.get_layer("nodes")
    assert (table.max_norm, table.min_variance, table.max_variance) == (1.5, 0.2, 3.0)


def test_a_model_saved_on_jax_loads_here_without_the_jit_compile_warning(tmp_path):
    # Keras saves the resolved `jit_compile`: True for a GaussianModel
    # compiled on JAX. TensorFlow cannot compile the layers' kernels with
    # XLA, and Keras warned at every load of such a run.
    import warnings

    from keras_gauss.models import GaussianModel

    model = GaussianModel(*el_two_tables())
    model.compile(optimizer=SparseAdagrad(0.1), loss=MaxMarginRanking(margin=0.5))
    model._compile_config.config["jit_compile"] = True  # as JAX resolves "auto"
    model.save(tmp_path / "model.keras")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*jit_compile")
        revived = keras.saving.load_model(tmp_path / "model.keras")
    assert revived.jit_compile is False
    assert isinstance(revived.optimizer, SparseAdagrad)
