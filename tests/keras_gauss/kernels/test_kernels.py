"""The layers' kernels (keras_gauss.kernels) against the reference keras.ops
code: values, gradients, finite differences, training, constraints after
every step, mixed precision, on TensorFlow (in this process) and JAX (in a
subprocess); selection, fallback, saving and exports."""

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import kernel_checks
import keras_gauss as kg
from keras_gauss import kernels
from keras_gauss.fused import build as fused_build

SCRIPT = Path(__file__).with_name("kernel_checks.py")


@pytest.fixture(scope="module")
def jax_results(tmp_path_factory):
    pytest.importorskip("jax")
    out = tmp_path_factory.mktemp("jax_kernels") / "results.json"
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("KERAS_GAUSS_KERNELS", None)
    done = subprocess.run([sys.executable, str(SCRIPT), str(out)], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("check", sorted(kernel_checks.CHECKS))
def test_tensorflow(check):
    kernel_checks.CHECKS[check]()


@pytest.mark.parametrize("check", sorted(kernel_checks.CHECKS))
def test_jax(jax_results, check):
    assert jax_results[check] == "ok", jax_results[check]


def test_kernels_are_in_the_train_step_and_the_env_var_removes_them(monkeypatch):
    x, y = kernel_checks.corpus_data(60, 64, 1, 0)
    model = kernel_checks.quick_start_model(60, 8, 1)
    model.compile(optimizer=kg.SparseAdagrad(0.1), loss=kg.MaxMarginRanking())
    types = _graph_op_types(model, x, y)
    assert {"KerasGaussEnergy", "KerasGaussEnergyGrad", "KerasGaussSparseAdagrad"} <= types
    monkeypatch.setenv("KERAS_GAUSS_KERNELS", "reference")
    model = kernel_checks.quick_start_model(60, 8, 1)
    model.compile(optimizer=kg.SparseAdagrad(0.1), loss=kg.MaxMarginRanking())
    assert not {t for t in _graph_op_types(model, x, y) if t.startswith("KerasGauss")}


def test_the_train_steps_gather_checks_the_ids_with_the_layers_message():
    # The compiled gather checks the range: no assertions in the step, and an
    # id outside the table still fails it with the layer's own words.
    x, y = kernel_checks.corpus_data(60, 64, 1, 0)
    model = kernel_checks.quick_start_model(60, 8, 1)
    model.compile(optimizer=kg.SparseAdagrad(0.1), loss=kg.MaxMarginRanking())
    assert "Assert" not in _graph_op_types(model, x, y)
    for bad in (60, -1):
        x["context"][5] = bad
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"GaussianEmbedding 'contexts': ids must lie in "
                                 rf"\[0, input_dim=60\) \(.*id {bad} outside \[0, 60\)"):
            model.train_on_batch(x, y)


def _graph_op_types(model, x, y):
    """The op types in the graph of the model's train step (the function
    `fit` traces), nested functions included."""
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)  # builds the optimizer
    data = (tf.nest.map_structure(tf.constant, x), tf.constant(y))
    return _op_types(tf.function(model.train_step).get_concrete_function(data).graph)


def _op_types(graph):
    types, graphs, seen = set(), [graph], set()
    while graphs:
        graph = graphs.pop()
        if id(graph) in seen:
            continue
        seen.add(id(graph))
        types.update(op.type for op in graph.get_operations())
        graphs.extend(f.graph for f in graph._functions.values() if hasattr(f, "graph"))
    return types


def test_falls_back_to_the_reference_with_one_warning(monkeypatch, caplog, tmp_path):
    """No C++ compiler and an empty op cache (TensorFlow, in this process; JAX:
    `test_without_a_compiler_training_says_why_once_and_runs`): one warning,
    then the layers train with their keras.ops code."""
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("KERAS_GAUSS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(kernels, "_warned", [])
    fused_build._reset()
    try:
        with caplog.at_level(logging.WARNING, logger="keras_gauss"):
            assert kernels.get() is None
            assert kernels.get() is None
            tables, losses, _ = kernel_checks.train("quick_start", steps=2)
        said = [r.getMessage() for r in caplog.records if r.name.startswith("keras_gauss")]
        assert len(said) == 1, said
        assert "no-such-compiler" in said[0] and "not found" in said[0]
        assert "layers' kernels" in said[0]
        assert np.all(np.isfinite(losses))
    finally:
        monkeypatch.undo()
        fused_build._reset()
    assert kernels.get() is not None


def test_disabled_library_is_silent(monkeypatch, caplog):
    monkeypatch.setenv("KERAS_GAUSS_DISABLE_FUSED", "1")
    monkeypatch.setattr(kernels, "_warned", [])
    fused_build._reset()
    try:
        with caplog.at_level(logging.WARNING, logger="keras_gauss.kernels"):
            assert kernels.get() is None
        assert not [r for r in caplog.records if r.name == "keras_gauss.kernels"]
    finally:
        monkeypatch.undo()
        fused_build._reset()


def test_saved_model_export_and_keras_file_hold_no_kernel(tmp_path):
    """A model trained with the kernels saves and reloads (.keras) with the same
    outputs, and its SavedModel export holds only standard ops."""
    tables, _, model = kernel_checks.train("quick_start", steps=3)
    x, _ = kernel_checks.corpus_data(60, 16, 1, 4)
    expected = model.predict(x, verbose=0)
    model.save(tmp_path / "m.keras")
    again = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(again.predict(x, verbose=0), expected)
    model.export(str(tmp_path / "serve"), verbose=False)
    saved = tf.saved_model.load(str(tmp_path / "serve"))
    types = set()
    for function in saved.signatures.values():
        types |= _op_types(function.graph)
    assert types and not {t for t in types if t.startswith("KerasGauss")}
    served = saved.signatures["serving_default"](
        **{k: tf.constant(v) for k, v in x.items()})
    np.testing.assert_allclose(next(iter(served.values())).numpy(), expected, rtol=1e-6)


def test_inside_xla_the_layers_use_the_reference():
    """XLA (`jit_compile=True`) cannot compile the ops: inside an XLA function
    the energy layers run their keras.ops code, also in training."""
    inputs = kernel_checks._gaussians(kernel_checks.SHAPES[0], 0)

    @tf.function(jit_compile=True)
    def energies(*args):
        return kg.ELEnergy()(*args, training=True), kg.KLEnergy()(*args, training=True)

    el, kl = energies(*inputs)
    np.testing.assert_allclose(el.numpy(), kg.ops.el_energy(*inputs).numpy(), rtol=1e-6)
    np.testing.assert_allclose(kl.numpy(), kg.ops.kl_energy(*inputs).numpy(), rtol=1e-6)
    assert not {t for t in _op_types(energies.get_concrete_function(*inputs).graph)
                if t.startswith("KerasGauss")}


def test_without_a_compiler_training_says_why_once_and_runs(tmp_path):
    """JAX, in a child: no C++ compiler (and an empty op cache): one warning,
    then the layers train with their keras.ops code (TensorFlow:
    `test_falls_back_to_the_reference_with_one_warning`)."""
    backend = "jax"
    pytest.importorskip("jax")
    code = ("import kernel_checks, numpy as np; "
            "_, losses, _ = kernel_checks.train('quick_start', steps=3); "
            "assert np.all(np.isfinite(losses)); print('trained')")
    env = dict(os.environ, KERAS_BACKEND=backend, CXX=str(tmp_path / "no-such-compiler"),
               KERAS_GAUSS_CACHE=str(tmp_path / "cache"), TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=str(SCRIPT.parent))
    env.pop("KERAS_GAUSS_KERNELS", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "trained" in done.stdout
    said = [line for line in done.stderr.splitlines() if "unavailable" in line]
    assert len(said) == 1 and "no-such-compiler" in said[0], done.stderr[-3000:]
