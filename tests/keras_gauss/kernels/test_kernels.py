"""The layers' kernels (keras_gauss.kernels) against the reference keras.ops
code: values, gradients, finite differences, training, constraints after
every step, mixed precision, on TensorFlow (in this process) and JAX (in a
subprocess); selection, fallback, saving and exports."""

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import kernel_checks
import keras_gauss as kg
from kernel_checks import zipf_ids
from keras_gauss import kernels
from keras_gauss.fused import build as fused_build
from keras_gauss.hierarchy.model import build_kl_model
from keras_gauss.kernels import tensorflow_kernels

SCRIPT = Path(__file__).with_name("kernel_checks.py")


@pytest.fixture(scope="module")
def jax_results(jax_job):
    """`kernel_checks.py` on JAX, without `KERAS_GAUSS_KERNELS` (in the tests'
    one JAX child, `jax_job`)."""
    return json.loads((jax_job("kernels")[0] / "results.json").read_text())


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
    # The energy of the lookups' rows read from the tables, its gradient
    # summed by table row.
    assert {"KerasGaussGather", "KerasGaussTableEnergy", "KerasGaussTableEnergyGrad",
            "KerasGaussSparseAdagrad"} <= types
    assert not {"KerasGaussEnergyGrad", "KerasGaussLookupEnergy"} & types
    monkeypatch.setattr(tensorflow_kernels, "TABLE_READS", False)
    model = kernel_checks.quick_start_model(60, 8, 1)
    model.compile(optimizer=kg.SparseAdagrad(0.1), loss=kg.MaxMarginRanking())
    types = _graph_op_types(model, x, y)
    assert {"KerasGaussLookupEnergy", "KerasGaussLookupEnergyGrad"} <= types
    assert "KerasGaussTableEnergy" not in types
    monkeypatch.setattr(tensorflow_kernels, "LOOKUP_GRADIENTS", False)
    model = kernel_checks.quick_start_model(60, 8, 1)
    model.compile(optimizer=kg.SparseAdagrad(0.1), loss=kg.MaxMarginRanking())
    types = _graph_op_types(model, x, y)
    assert {"KerasGaussEnergy", "KerasGaussEnergyGrad", "KerasGaussSparseAdagrad"} <= types
    assert "KerasGaussLookupEnergy" not in types
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


def test_the_train_steps_energy_reads_the_tables_and_its_gathers_only_check_the_ids():
    """The quick start's energy op takes the tables and the ids, no rows; in
    the graph TensorFlow runs, nothing reads the gathers' rows (the gathers
    still run, TensorFlow runs every read of a variable, but only check the
    ids); TABLE_READS = False reads them again."""
    from tensorflow.python.eager import context

    x, y = kernel_checks.corpus_data(60, 64, 1, 0)
    data = (tf.nest.map_structure(tf.constant, x), tf.constant(y))
    for table_reads in (True, False):
        model = kernel_checks.quick_start_model(60, 8, 1)
        model.compile(optimizer=kg.SparseAdagrad(0.1), loss=kg.MaxMarginRanking())
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)  # builds the optimizer
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(tensorflow_kernels, "TABLE_READS", table_reads)
            step = tf.function(model.train_step)
            graph = step.get_concrete_function(data).graph
            energies = [op for op in graph.get_operations()
                        if op.type in ("KerasGaussTableEnergy", "KerasGaussLookupEnergy")]
            assert [op.type for op in energies] == [
                "KerasGaussTableEnergy" if table_reads else "KerasGaussLookupEnergy"]
            inputs = [t.dtype for t in energies[0].inputs]
            assert (tf.float32 not in inputs) == table_reads, inputs
            ctx = context.context()
            ctx.enable_graph_collection()
            ctx.enable_run_metadata()
            try:
                step(data)
                ran = context.export_run_metadata()
            finally:
                ctx.disable_run_metadata()
                ctx.disable_graph_collection()
        nodes = [node for function in ran.function_graphs
                 for node in function.post_optimization_graph.node]
        gathers = {node.name for node in nodes if node.op == "KerasGaussGather"}
        assert len(gathers) == 4
        rows_read = {i.split(":")[0] for node in nodes for i in node.input
                     if not i.startswith("^")} & gathers
        assert rows_read == (set() if table_reads else gathers)


def test_the_table_energy_names_an_id_outside_a_table_with_its_message():
    """Called past the gathers, an id outside a table fails the energy op
    with that table's message (the gather's), or its own words without one;
    its gradient op takes only slots in range, each occurring."""
    library = fused_build.load()
    tables = [tf.Variable(np.ones((5, 4), "float32")) for _ in range(4)]
    handles = [t.handle for t in tables]
    messages = ["words a", "words a var", "contexts b", "contexts b var"]
    for ids_a, ids_b, expected in (
            ([[0], [7]], [[0, 1], [2, 3]], r"(^|\} )words a \(.*id 7 outside \[0, 5\)\)"),
            ([[0], [1]], [[0, 1], [2, -1]], r"(^|\} )contexts b \(.*id -1 outside \[0, 5\)\)")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=expected):
            library.keras_gauss_table_energy(*handles, np.array(ids_a, "int32"),
                                             np.array(ids_b, "int32"), messages=messages)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=re.escape("KerasGaussTableEnergy: id 5 outside [0, 5)")):
        library.keras_gauss_table_energy(*handles, np.array([[5]], "int64"),
                                         np.array([[0, 1]], "int64"))
    out = library.keras_gauss_table_energy(*handles, np.array([[0], [3]], "int32"),
                                           np.array([[3, 3], [0, 1]], "int32"))
    assert out[0].shape == (2, 2)
    np.testing.assert_array_equal(out[5], [0, 3])
    np.testing.assert_array_equal(out[6], [3, 0, 1])
    np.testing.assert_array_equal(out[8], [[0, 0], [1, 2]])
    rows = out[1:5]
    grad = np.ones((2, 2), "float32")
    for slots_a, slots_b, expected in (([[0], [2]], [[0, 0], [1, 2]],
                                        "slots of side 0 must lie in [0, 2) and each occur"),
                                       ([[0], [1]], [[0, 0], [1, 1]],
                                        "slots of side 1 must lie in [0, 3) and each occur"),
                                       ([[0, 1]], [[0, 0], [1, 2]], "(n, k_a) and (n, k_b)")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(expected)):
            library.keras_gauss_table_energy_grad(grad, *rows, np.array(slots_a, "int32"),
                                                  np.array(slots_b, "int32"))


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


# -- KerasGaussLookupEnergy: the energies of the lookups' rows, the gradient
#    summed by table row ---------------------------------------------------

def _lookup_energies(kind, tables, ids_a, ids_b, use_kernels):
    """Energies of the rows `tables[0:2][ids_a]` against `tables[2:4][ids_b]`
    (the kernels' lookup and energy, or tf.gather and the keras.ops
    reference) in a tf.function, the gradients of sum(energies * w) for the
    four tables, and the function's op types."""
    variables = [tf.Variable(t) for t in tables]
    module = kernels.get()

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            rows = [module.lookup(v, ids) if use_kernels else tf.gather(v, ids)
                    for v, ids in zip(variables, (ids_a, ids_a, ids_b, ids_b))]
            if use_kernels:
                energies = module.energy(kind, *rows, include_constant=True)
            else:
                energies = kernel_checks._reference_energy(kind, *rows)
            weights = tf.cos(tf.reshape(tf.range(tf.size(energies), dtype=tf.float32),
                                        tf.shape(energies))) + 1.5
            total = tf.reduce_sum(energies * weights)
        return energies, tape.gradient(total, variables)

    energies, grads = step()
    return energies.numpy(), grads, _op_types(step.get_concrete_function().graph)


def _dense(grad):
    return tf.convert_to_tensor(grad).numpy()


@pytest.mark.parametrize("table_reads", [True, False])
@pytest.mark.parametrize("kind, n, ka, kb, dv_a, dv_b, dtypes", [
    ("el", 9, 1, 4, 8, 8, ("int32", "int32")),      # the quick start's grid
    ("kl", 7, 3, 3, 1, 8, ("int64", "int64")),      # a side per pair, spherical a
    ("kl", 6, 4, 1, 8, 1, ("int32", "int64")),      # b broadcast, spherical b, mixed ids
    ("el", 4096, 1, 2, 8, 8, ("int32", "int32")),   # large: split over the threads
])
def test_lookup_energy_values_and_gradients_match_the_reference(kind, n, ka, kb, dv_a,
                                                                 dv_b, dtypes, table_reads,
                                                                 monkeypatch):
    monkeypatch.setattr(tensorflow_kernels, "TABLE_READS", table_reads)
    rng = np.random.default_rng(n + ka)
    vocab, d = 13, 8  # few rows: every row repeats
    tables = [rng.normal(size=(vocab, d)).astype("float32"),
              rng.uniform(0.3, 2.0, (vocab, dv_a)).astype("float32"),
              rng.normal(size=(vocab, d)).astype("float32"),
              rng.uniform(0.3, 2.0, (vocab, dv_b)).astype("float32")]
    ids_a = tf.constant(zipf_ids(rng, vocab, n * ka).reshape(n, ka), dtypes[0])
    ids_b = tf.constant(zipf_ids(rng, vocab, n * kb).reshape(n, kb), dtypes[1])
    with kernel_checks.counting() as calls:
        value, grads, types = _lookup_energies(kind, tables, ids_a, ids_b, True)
    assert calls.get("lookup_energy") == 1, calls
    kind_of_op = "KerasGaussTableEnergy" if table_reads else "KerasGaussLookupEnergy"
    assert {kind_of_op, kind_of_op + "Grad"} <= types
    ref_value, ref_grads, _ = _lookup_energies(kind, tables, ids_a, ids_b, False)
    np.testing.assert_allclose(value, ref_value, rtol=1e-5, atol=1e-5)
    for name, grad, ref, ids in zip(("mean_a", "var_a", "mean_b", "var_b"), grads, ref_grads,
                                    (ids_a, ids_a, ids_b, ids_b)):
        # one row per table row, in order of first appearance
        assert isinstance(grad, tf.IndexedSlices), name
        _, first = np.unique(ids.numpy().ravel(), return_index=True)
        np.testing.assert_array_equal(grad.indices.numpy(), ids.numpy().ravel()[np.sort(first)])
        np.testing.assert_allclose(_dense(grad), _dense(ref), rtol=1e-4, atol=1e-5,
                                   err_msg=name)


@pytest.mark.parametrize("kind, n, ka, kb, dv_a, dv_b", [
    ("el", 9, 1, 4, 8, 8), ("kl", 7, 3, 3, 1, 8), ("kl", 6, 4, 1, 8, 1), ("el", 700, 1, 2, 8, 1),
    ("kl", 4096, 2, 2, 8, 8),
])
def test_the_table_reads_change_no_bit(kind, n, ka, kb, dv_a, dv_b, monkeypatch):
    """KerasGaussTableEnergy and its gradient (slot by slot) give the floats
    of KerasGaussLookupEnergy on the gathered rows (pair by pair)."""
    rng = np.random.default_rng(n + kb)
    vocab, d = 50, 8
    tables = [rng.normal(size=(vocab, d)).astype("float32"),
              rng.uniform(0.3, 2.0, (vocab, dv_a)).astype("float32"),
              rng.normal(size=(vocab, d)).astype("float32"),
              rng.uniform(0.3, 2.0, (vocab, dv_b)).astype("float32")]
    ids_a = tf.constant(zipf_ids(rng, vocab, n * ka).reshape(n, ka), "int32")
    ids_b = tf.constant(zipf_ids(rng, vocab, n * kb).reshape(n, kb), "int32")
    results = []
    for table_reads in (True, False):
        monkeypatch.setattr(tensorflow_kernels, "TABLE_READS", table_reads)
        value, grads, types = _lookup_energies(kind, tables, ids_a, ids_b, True)
        assert ("KerasGaussTableEnergy" in types) == table_reads
        results.append((value, [(g.indices.numpy(), g.values.numpy()) for g in grads]))
    (value, grads), (expected, expected_grads) = results
    np.testing.assert_array_equal(value, expected)
    for (indices, values), (expected_indices, expected_values) in zip(grads, expected_grads):
        np.testing.assert_array_equal(indices, expected_indices)
        np.testing.assert_array_equal(values, expected_values)


def test_lookup_energy_covers_only_distinct_tables_of_unchanged_rows():
    """A shared table, a spherical variance broadcast by the layer, rows
    that are not the lookup's: the per-row gradient (KerasGaussEnergyGrad)."""
    x, y = kernel_checks.hierarchy_data(60, 64, 3, 0)
    model = build_kl_model(60, 8, negatives=3)
    model.compile(optimizer=kg.SparseAdagrad(0.1), loss=kg.MaxMarginRanking())
    types = _graph_op_types(model, x, y)
    assert "KerasGaussEnergyGrad" in types and "KerasGaussLookupEnergy" not in types
    x, y = kernel_checks.corpus_data(60, 64, 2, 0)
    model = kernel_checks.quick_start_model(60, 8, 2, covariance="spherical")
    model.compile(optimizer=kg.SparseAdagrad(0.1), loss=kg.MaxMarginRanking())
    types = _graph_op_types(model, x, y)
    assert "KerasGaussEnergyGrad" in types and "KerasGaussLookupEnergy" not in types
    table = tf.Variable(np.ones((5, 4), "float32"))
    module = kernels.get()

    @tf.function
    def scaled(ids):  # rows times 2: not the table's rows
        rows = module.lookup(table, ids) * 2.0
        return module.energy("el", rows, rows + 1.0, rows, rows + 1.0)

    assert "KerasGaussLookupEnergy" not in _op_types(
        scaled.get_concrete_function(tf.TensorSpec([3, 1], tf.int32)).graph)


def _train_quick_start(vocab, negatives, energy, batch, steps, lookup, monkeypatch,
                       table_reads=True, **bounds):
    monkeypatch.setattr(tensorflow_kernels, "LOOKUP_GRADIENTS", lookup)
    monkeypatch.setattr(tensorflow_kernels, "TABLE_READS", table_reads)
    keras.utils.set_random_seed(0)
    model = kernel_checks.quick_start_model(vocab, 8, negatives, energy, **bounds)
    kernel_checks._start(model, 7)
    model.compile(optimizer=kg.SparseAdagrad(0.5), loss=kg.MaxMarginRanking())
    x, y = kernel_checks.corpus_data(vocab, batch * steps, negatives, 1)
    with kernel_checks.counting() as calls:
        model.fit(x, y, batch_size=batch, shuffle=False, verbose=0,
                  callbacks=[kernel_checks.ConstraintsHold()])
    assert bool(calls.get("lookup_energy")) == lookup, calls
    return [np.asarray(v) for v in model.trainable_variables]


@pytest.mark.parametrize("vocab, negatives, energy, batch", [
    (60, 2, "el", 32),
    (300, 5, "kl", 4096),  # 4096 x 6 x 8: split over the threads
])
def test_training_with_the_lookup_energy_changes_no_bit(monkeypatch, vocab, negatives, energy,
                                                        batch):
    """The tables after training with the lookup energy (gradients summed by
    table row; reading the tables or the gathered rows) are those of the
    per-occurrence gradients, bit for bit; the bounds were active and hold
    after every step (ConstraintsHold)."""
    bounds = {"max_norm": 0.6, "min_variance": 0.5, "max_variance": 1.5}
    summed = _train_quick_start(vocab, negatives, energy, batch, 3, True, monkeypatch,
                                **bounds)
    gathered = _train_quick_start(vocab, negatives, energy, batch, 3, True, monkeypatch,
                                  table_reads=False, **bounds)
    rows = _train_quick_start(vocab, negatives, energy, batch, 3, False, monkeypatch,
                              **bounds)
    for table, from_rows, expected in zip(summed, gathered, rows):
        np.testing.assert_array_equal(table, expected)
        np.testing.assert_array_equal(from_rows, expected)
    means, variances = summed[0], summed[1]
    assert np.isclose(np.linalg.norm(means, axis=-1), 0.6, rtol=1e-5).sum() >= 5
    assert (variances == 0.5).sum() >= 5 and (variances == 1.5).sum() >= 5


def test_the_lookup_energy_gradient_names_an_id_outside_the_table():
    """Called past the Python wrapper, an id outside its table or a count of
    ids that does not match the rows is an error, never a read outside."""
    library = fused_build.load()
    rows = [np.ones((2, 1, 4), "float32"), np.ones((2, 1, 4), "float32"),
            np.ones((2, 3, 4), "float32"), np.ones((2, 3, 4), "float32")]
    grad = np.ones((2, 3), "float32")
    for ids_a, ids_b, message in (([0, 7], [0, 1, 2, 3, 4, 0], "id 7 outside [0, 5)"),
                                  ([0, 1], [0, 1, 2, 3, 4, -1], "id -1 outside [0, 5)"),
                                  ([0, 1], [0, 1, 2], "6 ids expected")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(message)):
            library.keras_gauss_lookup_energy_grad(
                grad, *rows, np.array(ids_a, "int32"), np.array(ids_b, "int32"),
                np.int64(5), np.int64(5))
