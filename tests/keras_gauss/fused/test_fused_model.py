"""FusedRankingModel: fit, steps_per_execution, saving, continuing in Keras."""

import keras
import numpy as np
import pytest
from keras import ops

import keras_gauss as kg
from keras_gauss.fused import FusedRankingModel

TOL = dict(rtol=1e-5, atol=1e-5)


def _data(vocab=30, batch=16, steps=4, negatives=2, seed=0):
    rng = np.random.default_rng(seed)
    n = batch * steps
    x = {
        "word": rng.integers(0, vocab, n).astype("int32"),
        "context": rng.integers(0, vocab, n).astype("int32"),
        "negatives": rng.integers(0, vocab, (n, negatives)).astype("int32"),
    }
    y = np.zeros((n, 1 + negatives), "float32")
    y[:, 0] = 1.0
    return x, y


def _weights(model):
    return [v.numpy() for v in model._tables()]


@pytest.mark.parametrize("use_fused", [True, False])
def test_steps_per_execution_matches_single_steps(use_fused):
    x, y = _data()
    models = []
    for steps_per_execution in (1, 4):
        keras.utils.set_random_seed(5)
        model = FusedRankingModel(30, 4, use_fused=use_fused)
        model.compile(optimizer=kg.SparseAdagrad(0.2),
                      steps_per_execution=steps_per_execution)
        history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        assert np.all(np.isfinite(history.history["loss"]))
        assert int(model.optimizer.iterations) == 8
        models.append(model)
    for a, b in zip(_weights(models[0]), _weights(models[1])):
        np.testing.assert_allclose(a, b, **TOL)


@pytest.mark.parametrize("energy", ["el", "kl"])
def test_shared_table_fused_equals_tf_step(energy):
    x, y = _data(vocab=10)
    results = []
    for use_fused in (True, False):
        keras.utils.set_random_seed(9)
        model = FusedRankingModel(10, 3, energy=energy, shared_table=True,
                                  covariance="spherical", use_fused=use_fused)
        # A starting accumulator of 0.1 keeps AdaGrad well conditioned: with
        # the default 1e-6, float rounding in a tiny gradient is amplified
        # ~1000x by the first step and compounds over the 4 steps.
        model.compile(optimizer=kg.SparseAdagrad(0.5, initial_accumulator_value=0.1))
        model.fit(x, y, batch_size=16, shuffle=False, verbose=0)
        assert len(model.trainable_variables) == 2
        results.append(_weights(model))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, **TOL)


def test_save_and_load_keeps_predictions_and_optimizer(tmp_path):
    x, y = _data()
    model = FusedRankingModel(30, 4, energy="kl", covariance="spherical",
                              max_norm=1.5, min_variance=0.2, max_variance=3.0)
    model.compile(optimizer=kg.SparseAdagrad(0.1))
    model.fit(x, y, batch_size=16, verbose=0)
    path = str(tmp_path / "fused.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, FusedRankingModel)
    assert loaded.get_config() == model.get_config()
    np.testing.assert_array_equal(model.predict(x, verbose=0),
                                  loaded.predict(x, verbose=0))
    assert model.predict(x, verbose=0).shape == (64, 3)
    # Training continues from the saved accumulators.
    assert int(loaded.optimizer.iterations) == int(model.optimizer.iterations)
    for a, b in zip(model._accumulators(model._tables()),
                    loaded._accumulators(loaded._tables())):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    loaded.fit(x, y, batch_size=16, verbose=0)
    assert loaded.evaluate(x, y, batch_size=16, verbose=0) >= 0


def test_plain_keras_training_continues_from_fused_state():
    x, y = _data(vocab=12, batch=32, steps=1)
    twin = []
    for _ in range(2):
        keras.utils.set_random_seed(3)
        model = FusedRankingModel(12, 4, use_fused=True)
        model.compile(optimizer=kg.SparseAdagrad(0.3))
        model.fit(x, y, batch_size=32, verbose=0)  # step 1: fused
        twin.append(model)
    fused_model, keras_twin = twin
    fused_model.fit(x, y, batch_size=32, verbose=0)  # step 2: fused

    # Step 2 through the ordinary Keras graph, same tables and optimizer.
    word = keras.Input((), dtype="int32", name="word")
    context = keras.Input((), dtype="int32", name="context")
    negative = keras.Input((2,), dtype="int32", name="negatives")
    mean_w, var_w = keras_twin.words(word)
    candidates = ops.concatenate([ops.expand_dims(context, -1), negative], -1)
    mean_c, var_c = keras_twin.contexts(candidates)
    energies = kg.ELEnergy()(ops.expand_dims(mean_w, 1), ops.expand_dims(var_w, 1),
                             mean_c, var_c)
    plain = keras.Model({"word": word, "context": context, "negatives": negative},
                        energies)
    plain.compile(optimizer=keras_twin.optimizer, loss=kg.MaxMarginRanking())
    plain.fit(x, y, batch_size=32, shuffle=False, verbose=0)
    for a, b in zip(_weights(fused_model), _weights(keras_twin)):
        np.testing.assert_allclose(a, b, **TOL)


def test_rejects_other_optimizers():
    model = FusedRankingModel(10, 2)
    with pytest.raises(TypeError, match="AdaGrad"):
        model.compile(optimizer="adam")
