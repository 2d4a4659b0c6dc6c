"""`train-hierarchy` and `train-wordnet --engine keras` on JAX in a Python
where TensorFlow cannot be imported (a GPU machine has JAX but no
TensorFlow): the job `without_tensorflow` runs them in the JAX child
(`child_jobs.py`), with TensorFlow blocked as `test_cli.NO_TENSORFLOW`
does; the tests compare them with the same runs on TensorFlow here
(`tf.data`), and a run stopped mid-epoch and resumed there with the
uninterrupted one, bit for bit."""

import contextlib
import importlib.abc
import json
import sys
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).parent.parent
SMALL = TESTS / "hierarchy" / "data" / "small_taxonomy.tsv"
# small_taxonomy.tsv: 85 training edges in batches of 11 (8 steps an epoch)
HIERARCHY = ["train-hierarchy", "--edges", str(SMALL), "--dim", "4", "--epochs", "2",
             "--seed", "3", "--quiet", "--engine", "keras", "--reconstruction-nodes", "10"]
# mammal.n.01: 1,182 nodes; 20 steps an epoch
WORDNET = ["train-wordnet", "--root", "mammal.n.01", "--dim", "4", "--epochs", "1",
           "--batch-size", "256", "--seed", "3", "--quiet", "--engine", "keras",
           "--val-size", "100", "--test-size", "100", "--reconstruction-nodes", "10"]
COMMANDS = {"hierarchy": HIERARCHY, "wordnet": WORDNET}
FIGURES = ("final_loss", "test_accuracy", "val_accuracy", "map", "mean_rank")


class _NoTensorFlow(importlib.abc.MetaPathFinder):
    """`import tensorflow` fails, as on an install without it."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "tensorflow":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


@contextlib.contextmanager
def no_tensorflow():
    """Within the block TensorFlow cannot be imported (its modules already
    imported are hidden, and put back after)."""
    hidden = {name: sys.modules.pop(name) for name in list(sys.modules)
              if name.split(".")[0] == "tensorflow"}
    finder = _NoTensorFlow()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        sys.modules.update(hidden)


def _tables(run):
    from keras_gauss.runs import load_run

    return {w.path: w.numpy() for w in load_run(run).model.weights}


def _result(run):
    metrics = json.loads((Path(run) / "metrics.json").read_text())
    return {key: metrics[key] for key in FIGURES if key in metrics}


def without_tensorflow(out):
    """The JAX job: each command of `COMMANDS` into `out/NAME` with TensorFlow
    blocked, and `train-hierarchy` stopped after its 11th checkpoint (epoch 1,
    step 3) then resumed into `out/resumed`; returns `{NAME: its figures}`
    and whether TensorFlow got imported. Tables: `out/NAME.npz`."""
    import keras

    from keras_gauss.cli import main

    sys.path.append(str(TESTS))  # cli_process, fault_injection
    from cli_process import interrupted

    assert keras.backend.backend() == "jax"
    out, result = Path(out), {}
    with no_tensorflow():
        for name, argv in COMMANDS.items():
            assert main([*argv, "--out", str(out / name)]) == 0, name
            result[name] = _result(out / name)
        state = interrupted(HIERARCHY, out / "resumed", 11)
        result["stopped_at"] = [state["epoch"], state["step"]]
        assert main([*HIERARCHY, "--resume", str(out / "resumed")]) == 0
        result["resumed"] = _result(out / "resumed")
        result["tensorflow_imported"] = "tensorflow" in sys.modules
    for name in (*COMMANDS, "resumed"):
        np.savez(out / f"{name}.npz", **_tables(out / name))
    return result


@pytest.fixture(scope="module")
def on_jax(jax_job):
    return jax_job("without_tensorflow")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_without_tensorflow_on_jax_trains_the_tables_of_tf_data(on_jax, tmp_path, name):
    pytest.importorskip("tensorflow")
    import keras

    from keras_gauss.cli import main

    if keras.backend.backend() != "tensorflow":
        pytest.skip("compares with the TensorFlow backend's tf.data run")
    folder, result = on_jax
    assert result["tensorflow_imported"] is False
    assert main([*COMMANDS[name], "--out", str(tmp_path / "tf")]) == 0
    on_tf = _tables(tmp_path / "tf")
    with np.load(folder / f"{name}.npz") as on_jax_tables:
        assert sorted(on_jax_tables) == sorted(on_tf)
        for path, table in on_tf.items():
            np.testing.assert_allclose(on_jax_tables[path], table, rtol=1e-4, atol=1e-5,
                                       err_msg=path)
    expected = _result(tmp_path / "tf")
    assert result[name].keys() == expected.keys()
    for key, value in expected.items():
        assert result[name][key] == pytest.approx(value, rel=1e-4, abs=1e-5), key


def test_without_tensorflow_a_resumed_run_equals_the_uninterrupted_bit_for_bit(on_jax):
    folder, result = on_jax
    assert result["stopped_at"] == [1, 3]  # mid-way through the second epoch
    assert result["resumed"] == result["hierarchy"]
    with np.load(folder / "hierarchy.npz") as a, np.load(folder / "resumed.npz") as b:
        assert sorted(a) == sorted(b)
        for path in a:
            np.testing.assert_array_equal(a[path], b[path], err_msg=path)
