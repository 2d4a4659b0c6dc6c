"""`KERAS_BACKEND=torch`: the layers, losses, constraints and `SparseAdagrad` train with
`model.fit` to the tables TensorFlow trains, the tables' gradients are sparse rows
(`GaussianModel`'s train step), and the saved models load on TensorFlow.

The torch child of the tests (`torch_job`: its `torch_models` job runs
`torch_run.py`) trains the three models of `torch_run.MODELS` from start
weights this process writes; this process trains the same models from the
same weights on TensorFlow and compares.
Skipped where torch is not installed (`pip install torch`, the CPU wheel
is enough).
"""

import importlib.util
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

SCRIPT = Path(__file__).with_name("torch_run.py")
sys.path.insert(0, str(SCRIPT.parent))

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="torch is not installed")


@pytest.fixture(scope="module")
def runs(torch_job):
    import torch_run

    out, _ = torch_job("torch_models")
    return out, {name: torch_run.train(name, str(out))[1] for name in torch_run.MODELS}


@pytest.mark.parametrize("name", ["el", "kl", "containment"])
def test_torch_trains_the_tables_tensorflow_trains(runs, name):
    out, on_tensorflow = runs
    on_torch = np.load(out / f"{name}.torch.npz")
    assert bool(on_torch["sparse"]), "the tables' gradients on torch are dense"
    expected = on_tensorflow[name]
    np.testing.assert_allclose(on_torch["loss"], expected["loss"], rtol=1e-4, atol=1e-5)
    weights = sorted(k for k in expected if k.startswith("w"))
    assert weights and all(k in on_torch for k in weights)
    for key in weights:
        np.testing.assert_allclose(on_torch[key], expected[key], rtol=1e-4, atol=1e-5,
                                   err_msg=f"{name}: weight {key}")
    np.testing.assert_allclose(on_torch["predictions"], expected["predictions"],
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["el", "kl", "containment"])
def test_a_model_saved_on_torch_loads_and_predicts_on_tensorflow(runs, name):
    import torch_run

    out, _ = runs
    model = keras.saving.load_model(out / f"{name}.torch.keras")
    probe, _ = torch_run.ranking_data(seed=1)
    np.testing.assert_allclose(model.predict(probe, verbose=0),
                               np.load(out / f"{name}.torch.npz")["predictions"],
                               rtol=1e-5, atol=1e-5)
