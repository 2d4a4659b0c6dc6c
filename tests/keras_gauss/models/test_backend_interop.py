"""One model file, any backend: a run trained on JAX loads, scores and
exports on TensorFlow, and a TensorFlow run loads, trains and saves on JAX."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).with_name("backend_run.py")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "pipelines"))


def _on_jax(*args):
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from test_pipelines_train import topic_corpus

    return topic_corpus(tmp_path_factory.mktemp("interop") / "corpus.txt")


@pytest.fixture(scope="module")
def both_ways(corpus, tmp_path_factory):
    """A run trained here (TensorFlow, `tf_run`), then one JAX child that trains
    a run (`jax_run`, its scores `jax.npz`) and loads, scores and retrains
    `tf_run` (`tf_on_jax.npz`, `retrained.keras`)."""
    pytest.importorskip("jax")
    from keras_gauss.pipelines.train import CorpusConfig
    from keras_gauss.pipelines.train import train_corpus

    tmp = tmp_path_factory.mktemp("both_ways")
    config = CorpusConfig(dim=8, epochs=2, window=3, min_count=1, sample=0.0,
                          batch_size=256, learning_rate=0.1, seed=0, engine="keras")
    train_corpus(config, corpus, tmp / "tf_run", verbose=0)
    _on_jax("train", corpus, tmp / "jax_run", tmp / "jax.npz",
            "--", "load", tmp / "tf_run", tmp / "tf_on_jax.npz", tmp / "retrained.keras")
    return tmp


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
