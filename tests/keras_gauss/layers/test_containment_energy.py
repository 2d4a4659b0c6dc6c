import keras
import numpy as np
import pytest
from backends import gradients

from keras_gauss.layers import ContainmentEnergy
from keras_gauss.numpy_ops import pair_energy


def test_layer_matches_the_numpy_energy_of_runs():
    rng = np.random.default_rng(0)
    mg, ms = rng.normal(size=(2, 5, 4, 3)).astype("float32")
    vg, vs = np.exp(rng.normal(size=(2, 5, 4, 3))).astype("float32")
    got = keras.ops.convert_to_numpy(ContainmentEnergy()(mg, vg, ms, vs))
    want = pair_energy("containment", ms, vs, mg, vg)  # numpy: (specific, general)
    assert got.shape == (5, 4)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert (got <= 0).all()


def test_gradient_pulls_a_sticking_out_child_inside():
    mg, vg = np.array([[0.0]], "float32"), np.array([[1.0]], "float32")
    # [0.5, 1.5] sticks out of [-1, 1]
    ms, vs = keras.Variable([[1.0]]), keras.Variable([[0.25]])
    d_mean, d_var = gradients(
        lambda: keras.ops.sum(ContainmentEnergy()(mg, vg, ms.value, vs.value)), [ms, vs])
    # dE/dmu = -2 * 0.5, dE/dvar = -2 * 0.5 / (2 sigma): moving in and shrinking raise E.
    np.testing.assert_allclose([float(d_mean[0, 0]), float(d_var[0, 0])], [-1.0, -1.0])


def test_serializes():
    layer = ContainmentEnergy(name="box")
    again = ContainmentEnergy.from_config(layer.get_config())
    assert again.name == "box" and again.dtype_policy.name == "float32"


@pytest.mark.parametrize("energy", ["kl", "containment"])
def test_hierarchy_model_saves_and_loads_with_its_energy(tmp_path, energy):
    from keras_gauss.hierarchy.model import build_kl_model

    model = build_kl_model(5, dim=2, negatives=1, energy=energy)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert loaded.get_layer(f"{energy}_energy").__class__.__name__ == (
        "KLEnergy" if energy == "kl" else "ContainmentEnergy")
