"""`import keras_gauss` is all `keras.saving.load_model` needs (keras_gauss.keras_setup).

One child Python (a fresh process costs ~7 s, so one for every kind) that
imports only `keras_gauss` and Keras loads: a layer, every serializable
object by its config, the README's quick-start model, and a run's
`model.keras` written without Keras by the native engine's writer.
"""

import importlib.util
import json
import pathlib
import subprocess
import sys

import keras
import numpy as np

import keras_gauss as kg
from keras_gauss.hierarchy.model_file import hierarchy_model_config
from keras_gauss.hierarchy.model_file import write_hierarchy_model
from keras_gauss.hierarchy.train import WordNetConfig

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_readme", ROOT / "benchmarks" / "check_readme.py")
check_readme = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_readme)

CHILD = """
import json, sys
import numpy as np
import keras_gauss
assert "keras" not in sys.modules and "keras_gauss.layers" not in sys.modules
import keras
out, probes = sys.argv[1], np.load(sys.argv[1] + "/probes.npz")
results = {}
for name in ("layer", "quick_start"):
    model = keras.saving.load_model(f"{out}/{name}.keras")
    outputs = model(dict(probes) if name == "quick_start" else probes["word"])
    results[name] = [keras.ops.convert_to_numpy(t).tolist() for t in keras.tree.flatten(outputs)]
run = keras.saving.load_model(f"{out}/run.keras")
results["run"] = [type(run).__name__, type(run.optimizer).__name__,
                  run.get_layer("nodes").variances.numpy().tolist()]
results["objects"] = {}
for name, config in json.load(open(f"{out}/objects.json")).items():
    revived = keras.saving.deserialize_keras_object(config)
    results["objects"][name] = [type(revived).__name__, revived.get_config() == config["config"]]
print(json.dumps(results))
"""


def _serializables():
    """One instance of every class keras_gauss registers, with non-default settings."""
    return [kg.GaussianEmbedding(7, 3, covariance="spherical", max_norm=1.5),
            kg.ELEnergy(include_constant=False), kg.KLEnergy(), kg.ContainmentEnergy(),
            kg.MaxMarginRanking(margin=0.5), kg.ThresholdedDivergence(threshold=2.0, margin=1.0),
            kg.NormClip(1.5), kg.VarianceClip(0.1, 4.0), kg.SparseAdagrad(0.2)]


def test_a_fresh_process_that_imports_keras_gauss_loads_every_saved_kind(tmp_path):
    keras.utils.set_random_seed(0)
    probes = {"word": np.array([0, 1, 2], "int32"), "context": np.array([3, 4, 5], "int32"),
              "negatives": np.array([[6], [7], [8]], "int32")}
    np.savez(tmp_path / "probes.npz", **probes)
    expected = {}

    word = keras.Input((), dtype="int32")
    layer_model = keras.Model(word, kg.GaussianEmbedding(10, 4, name="words")(word))
    layer_model.save(tmp_path / "layer.keras")
    expected["layer"] = layer_model(probes["word"])  # a call: predict would trace a step

    namespace = {"__name__": "readme"}
    quick_start = check_readme.blocks_by_id("test")["quick-start"]
    exec(compile("".join(b.text for b in quick_start if b.lang == "python"), "README.md", "exec"),
         namespace)
    namespace["model"].save(tmp_path / "quick_start.keras")
    expected["quick_start"] = namespace["model"](probes)

    config = hierarchy_model_config(WordNetConfig(dim=2).resolved(), 3, 1, 10)
    write_hierarchy_model(tmp_path / "run.keras", config,
                          [np.zeros((3, 2)), np.full((3, 2), 0.5)] * 2)

    objects = {type(o).__name__: keras.saving.serialize_keras_object(o) for o in _serializables()}
    (tmp_path / "objects.json").write_text(json.dumps(objects))

    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.splitlines()[-1])
    for name in ("layer", "quick_start"):
        flat = keras.tree.flatten(expected[name])
        assert len(flat) == len(results[name]) > 0
        for want, got in zip(flat, results[name]):
            np.testing.assert_array_equal(keras.ops.convert_to_numpy(want),
                                          np.asarray(got, np.float32))
    assert results["run"] == ["GaussianModel", "SparseAdagrad", [[0.5, 0.5]] * 3]
    assert results["objects"] == {name: [name, True] for name in objects}


def test_every_module_with_a_registered_class_is_registered_at_import():
    """A new module with `@register_keras_serializable` must sit under `SERIALIZABLE_MODULES`."""
    from keras_gauss.keras_setup import SERIALIZABLE_MODULES

    decorated = {".".join(("keras_gauss", *path.relative_to(ROOT / "keras_gauss")
                                                  .with_suffix("").parts))
                 for path in (ROOT / "keras_gauss").rglob("*.py")
                 if "@keras.saving.register_keras_serializable" in path.read_text()}
    assert decorated and not {module for module in decorated
                              if not module.startswith(SERIALIZABLE_MODULES)}
