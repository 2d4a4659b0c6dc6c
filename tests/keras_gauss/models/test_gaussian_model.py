"""The Keras path on JAX against TensorFlow, and GaussianModel's row step."""

from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).with_name("backend_training.py")


def _train_here(out):
    """`backend_training.py` in this process (TensorFlow, the tests' backend)."""
    import importlib.util

    import keras

    spec = importlib.util.spec_from_file_location("backend_training", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    keras.backend.clear_session()  # the layer names (variable paths) of a fresh process
    module.main(str(out))
    return dict(np.load(out))


@pytest.fixture(scope="module")
def both_backends(jax_job, tmp_path_factory):
    """The script's results on TensorFlow (here) and on JAX (the tests' one
    JAX child, `jax_job`)."""
    import keras

    jax_results = dict(np.load(jax_job("training")[0] / "jax.npz"))
    assert keras.backend.backend() == "tensorflow"
    return _train_here(tmp_path_factory.mktemp("backends") / "tf.npz"), jax_results


def test_jax_trains_like_tensorflow(both_backends):
    tf_results, jax_results = both_backends
    keys = sorted(k for k in tf_results if not k.startswith("jax/"))
    assert keys == sorted(k for k in jax_results if not k.startswith("jax/"))
    # corpus EL/KL, spherical, Keras Adagrad, ProjectConstraints, hierarchy
    # with both losses: tables and losses after 12 steps
    assert len(keys) > 20
    for key in keys:
        if key.startswith("corpus_el_keras_adagrad/"):
            # Keras's own Adagrad differs between its backends: on TensorFlow
            # it squares the rows of a sparse gradient before summing
            # repeated ids (on JAX after); only its loss is checked (below).
            continue
        np.testing.assert_allclose(jax_results[key], tf_results[key], rtol=1e-5,
                                   atol=1e-5, err_msg=key)
    # the runs learned something (the loss fell) and the callback's bound held
    for case in {key.split("/")[0] for key in keys}:
        loss = tf_results[f"{case}/loss"]
        assert loss[-1] < loss[0], case
    norms = np.linalg.norm(jax_results["corpus_el_project/words/means"], axis=-1)
    assert norms.max() <= 0.3 + 1e-6


def test_jax_step_updates_rows_only(both_backends):
    _, jax_results = both_backends
    # every table of the SparseAdagrad cases took the row update ...
    assert int(jax_results["jax/row_updates"]) >= 16
    # ... and in the traced step no operation but a row scatter (or the row
    # update kernel) makes an array of a table's shape (no dense gradient, no
    # dense update)
    assert set(jax_results["jax/table_makers"]) <= {
        "scatter", "stop_gradient", "ffi_call:keras_gauss_adagrad_rows"}


def test_jax_runs_the_steps_of_a_call_in_one_scan_with_the_same_results(both_backends):
    tf_results, jax_results = both_backends
    # 3 steps a call: one compiled lax.scan (then a call of 1), as 4 single steps
    assert "scanned_steps" in str(jax_results["jax/train_function"])
    for key in tf_results:
        if key.startswith("corpus_el/"):
            other = key.replace("corpus_el/", "corpus_el_3_steps_a_call/")
            np.testing.assert_allclose(jax_results[other], jax_results[key], rtol=1e-6,
                                       atol=1e-7, err_msg=other)
    # the device-pairs trainer: 4 steps a call (4 + 4 + 2) as 10 single steps
    ones = sorted(k for k in jax_results if k.startswith("jax/device_pairs_1/"))
    assert len(ones) == 4
    for key in ones:
        np.testing.assert_allclose(jax_results[key.replace("_1/", "_4/")], jax_results[key],
                                   rtol=1e-6, atol=1e-7, err_msg=key)
