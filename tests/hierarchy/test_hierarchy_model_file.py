"""`keras_gauss.hierarchy.model_file` writes the `model.keras` that Keras
writes for the compiled hierarchy model (`hierarchy_model`), without Keras."""

import itertools
import json

import numpy as np
import pytest

from keras_gauss.hierarchy.model_file import hierarchy_model_config
from keras_gauss.hierarchy.model_file import write_hierarchy_model
from keras_gauss.hierarchy.train import WordNetConfig
from run_files import weights_tree


@pytest.mark.parametrize("energy, covariance, loss, schedule", [
    (e, c, loss, s) for (e, c), (loss, s) in itertools.product(
        itertools.product(("kl", "containment"), ("diagonal", "spherical")),
        (("ranking", "linear"), ("threshold", "constant"), ("threshold", "cosine")))])
def test_model_file_equals_what_keras_writes(tmp_path, energy, covariance, loss, schedule):
    import keras

    from keras_gauss.hierarchy.engines import hierarchy_model

    rows, dim, k, steps = 7, 5, 3, 40
    config = WordNetConfig(dim=dim, energy=energy, covariance=covariance, loss=loss,
                           learning_rate_schedule=schedule, seed=3, margin=0.5,
                           threshold=0.1, learning_rate=0.2, max_norm=2.0,
                           min_variance=0.1, max_variance=4.0).resolved()
    keras.backend.clear_session()  # the layer names of a fresh process
    model = hierarchy_model(config, rows, k, steps)
    model.optimizer.build(model.trainable_variables)
    want = json.loads(json.dumps(keras.saving.serialize_keras_object(model)))
    assert hierarchy_model_config(config, rows, k, steps) == want

    rng = np.random.default_rng(0)
    dv = 1 if covariance == "spherical" else dim
    arrays = [rng.random(s).astype("float32") + 0.1 for s in [(rows, dim), (rows, dv)] * 2]
    path = tmp_path / "model.keras"
    write_hierarchy_model(path, hierarchy_model_config(config, rows, k, steps), arrays,
                          iterations=17)
    loaded = keras.saving.load_model(path)
    table = loaded.get_layer("nodes")
    np.testing.assert_array_equal(table.means.numpy(), arrays[0])
    np.testing.assert_array_equal(table.variances.numpy(), arrays[1])
    optimizer = loaded.optimizer
    assert int(optimizer.iterations.numpy()) == 17
    for variable, accumulator in zip(loaded.trainable_variables, arrays[2:]):
        slot = optimizer._accumulators[optimizer._get_variable_index(variable)]
        np.testing.assert_array_equal(slot.numpy(), accumulator)
    model.save(tmp_path / "keras.keras")  # Keras's own file: the same weight paths
    assert weights_tree(path) == weights_tree(tmp_path / "keras.keras")
