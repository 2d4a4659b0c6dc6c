"""One model file, any backend: a run trained on JAX loads, scores and
exports on TensorFlow, and a TensorFlow run loads, trains, saves and exports
for TF Serving on JAX."""

import numpy as np
import pytest

@pytest.fixture(scope="module")
def both_ways(jax_job):
    """A run trained here (TensorFlow, `tf_run`), then, in the tests' one JAX
    child (`jax_job`), `backend_run.py` trains a run (`jax_run`, its
    scores `jax.npz`) and loads, scores, exports and retrains `tf_run`
    (`tf_on_jax.npz`, `serve_on_jax/1`, `retrained.keras`)."""
    return jax_job("interop")[0]


def test_jax_run_scores_and_serves_on_tensorflow(both_ways, tmp_path):
    import tensorflow as tf

    from keras_gauss import ops as gauss_ops
    from keras_gauss.export.serving import export_run
    from keras_gauss.runs import load_run

    on_jax = np.load(both_ways / "jax.npz")
    assert str(on_jax["backend"]) == "jax"
    assert str(on_jax["model_class"]) == "GaussianModel"

    import backend_run  # the same fixed examples

    run = load_run(both_ways / "jax_run")
    x, _ = backend_run.examples(run.table.input_dim)
    np.testing.assert_allclose(run.model.predict(x, verbose=0), on_jax["energies"],
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(run.table.means.numpy(), on_jax["means"])

    version = export_run(both_ways / "jax_run", tmp_path / "serve")
    served = tf.saved_model.load(str(version))
    words = list(run.words)
    out = served.signatures["serving_default"](query=tf.constant(words[:2]),
                                               candidate=tf.constant(words[2:4]))
    means, variances = on_jax["means"], on_jax["variances"]
    expected = gauss_ops.el_energy(means[:2], variances[:2], means[2:4], variances[2:4])
    np.testing.assert_allclose(out["energy"].numpy(), np.asarray(expected), rtol=1e-5, atol=1e-5)


def test_tensorflow_run_loads_trains_and_saves_on_jax(both_ways):
    import keras

    import backend_run
    from keras_gauss.runs import load_run

    run = load_run(both_ways / "tf_run")
    x, y = backend_run.examples(run.table.input_dim)
    on_jax = np.load(both_ways / "tf_on_jax.npz")
    np.testing.assert_allclose(on_jax["energies"], run.model.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-5)

    # ... and back: the model JAX trained one more epoch loads here and
    # equals the same epoch trained here.
    back = keras.saving.load_model(both_ways / "retrained.keras")
    run.model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    for name in ("words", "contexts"):
        for mine, theirs in zip(run.model.get_layer(name).weights,
                                back.get_layer(name).weights):
            np.testing.assert_allclose(theirs.numpy(), mine.numpy(), rtol=1e-5, atol=1e-5)


def test_tensorflow_run_exports_for_serving_on_jax(both_ways):
    """The serving graph is TensorFlow's whatever Keras's backend: on JAX it fed
    TensorFlow tensors to keras.ops code, a NotImplementedError traceback."""
    import tensorflow as tf

    from keras_gauss.runs import load_run

    run = load_run(both_ways / "tf_run")
    served = tf.saved_model.load(str(both_ways / "serve_on_jax" / "1"))
    words = list(run.words)
    out = served.signatures["serving_default"](query=tf.constant(words),
                                               candidate=tf.constant(words[::-1]))
    np.testing.assert_allclose(out["energy"].numpy(), run.energy(words, words[::-1]),
                               rtol=1e-6, atol=1e-6)
