"""Writes the hierarchy model's `model.keras` without importing Keras.

The native engine (`keras_gauss.hierarchy.native_training`) ends with the
table in NumPy; `write_hierarchy_model` writes the file Keras writes for
`keras_gauss.hierarchy.engines.hierarchy_model(config, ...)` (the model of
`build_kl_model`, compiled with its loss and `SparseAdagrad`): `config.json`
(`hierarchy_model_config`: the serialized model, with the config's energy,
covariance, negatives, bounds, seed, loss and learning rate or schedule),
`metadata.json` and `model.weights.h5` (the table, the optimizer's step
count, its learning rate unless a schedule sets it, and the two
accumulators). `tests/hierarchy/test_hierarchy_model_file.py` checks the
file against the one Keras writes for each energy, covariance, loss and
schedule, so a Keras release that changes the format fails there.

Example: see `write_hierarchy_model`.
"""

import numpy as np

from keras_gauss import energies
from keras_gauss.keras_file import write_keras_file
from keras_gauss.optimizers.adagrad_floor import EPSILON
from keras_gauss.optimizers.adagrad_floor import INITIAL_ACCUMULATOR

_LOSSES = {"ranking": ("MaxMarginRanking", "keras_gauss.losses.max_margin_ranking",
                       "max_margin_ranking"),
           "threshold": ("ThresholdedDivergence", "keras_gauss.losses.thresholded_divergence",
                         "thresholded_divergence")}
_FLOAT32 = {"class_name": "DTypePolicy", "config": {"name": "float32"}, "module": "keras",
            "registered_name": None}


def _tensor(history, shape, dtype="int32"):
    return {"class_name": "__keras_tensor__",
            "config": {"dtype": dtype, "keras_history": history, "shape": shape}}


def _node(*args):
    return {"args": list(args), "kwargs": {}}


def _input(name, shape):
    return {"class_name": "InputLayer", "config": {"batch_shape": shape, "dtype": "int32",
                                                   "name": name, "optional": False,
                                                   "ragged": False, "sparse": False},
            "inbound_nodes": [], "module": "keras.layers", "name": name,
            "registered_name": None}


def _op(kind, name, axis, inbound):
    return {"class_name": kind, "config": {"axis": axis, "name": name},
            "inbound_nodes": [inbound], "module": "keras.src.ops.numpy", "name": name,
            "registered_name": kind}


def _learning_rate(config, total_steps):
    """The optimizer's `learning_rate` entry: a float32 number, or the
    serialized schedule of `learning_rate_schedule`."""
    total_steps = max(int(total_steps), 1)
    if config.learning_rate_schedule == "linear":
        schedule = ("PolynomialDecay", {"initial_learning_rate": config.learning_rate,
                                        "decay_steps": total_steps, "end_learning_rate": 0.0,
                                        "power": 1.0, "cycle": False,
                                        "name": "PolynomialDecay"})
    elif config.learning_rate_schedule == "cosine":
        schedule = ("CosineDecay", {"initial_learning_rate": config.learning_rate,
                                    "decay_steps": total_steps, "alpha": 0.0,
                                    "name": "CosineDecay", "warmup_target": None,
                                    "warmup_steps": 0})
    else:
        return float(np.float32(config.learning_rate))
    return {"module": "keras.optimizers.schedules", "class_name": schedule[0],
            "config": schedule[1], "registered_name": None}


def hierarchy_model_config(config, rows, negatives, total_steps):
    """The `config.json` dict of `hierarchy_model(config, rows, negatives,
    total_steps)` (a resolved `WordNetConfig`).

    Example:

    >>> from keras_gauss.hierarchy.config import WordNetConfig
    >>> model = hierarchy_model_config(WordNetConfig(dim=3).resolved(), 5, 10, 100)
    >>> model["config"]["output_layers"], model["compile_config"]["loss"]["class_name"]
    (['kl_energy', 0, 0], 'ThresholdedDivergence')
    """
    k, d, energy = int(negatives), int(config.dim), config.energy
    layer_module, layer_class = energies.get(energy, task="hierarchy").layer.split(":")
    energy_name = f"{energy}_energy"
    nodes = {
        "build_config": {"input_shape": [None, k + 1]}, "class_name": "GaussianEmbedding",
        "config": {"covariance": config.covariance, "dtype": _FLOAT32, "input_dim": int(rows),
                   "max_norm": None if config.max_norm is None else float(config.max_norm),
                   "max_variance": float(config.max_variance),
                   "mean_initializer": {"class_name": "RandomUniform",
                                        "config": {"maxval": 0.05, "minval": -0.05,
                                                   "seed": int(config.seed)},
                                        "module": "keras.initializers", "registered_name": None},
                   "min_variance": float(config.min_variance), "name": "nodes",
                   "output_dim": d, "trainable": True,
                   "variance_initializer": {"class_name": "Ones", "config": {},
                                            "module": "keras.initializers",
                                            "registered_name": None}},
        "inbound_nodes": [_node(_tensor(["concatenate", 0, 0], [None, k + 1])),
                          _node(_tensor(["concatenate_1", 0, 0], [None, k + 1]))],
        "module": "keras_gauss.layers.gaussian_embedding", "name": "nodes",
        "registered_name": "keras_gauss>GaussianEmbedding"}
    scored = {
        "build_config": {"input_shape": [None, k + 1, d]}, "class_name": layer_class,
        "config": {"dtype": _FLOAT32, "name": energy_name, "trainable": True},
        "inbound_nodes": [_node(_tensor(["nodes", 0, 0], [None, k + 1, d], "float32"),
                                _tensor(["nodes", 0, 1], [None, k + 1, d], "float32"),
                                _tensor(["nodes", 1, 0], [None, k + 1, d], "float32"),
                                _tensor(["nodes", 1, 1], [None, k + 1, d], "float32"))],
        "module": layer_module, "name": energy_name,
        "registered_name": f"keras_gauss>{layer_class}"}
    layers = [
        _input("general", [None]), _input("specific", [None]),
        _op("ExpandDims", "expand_dims", -1, _node(_tensor(["general", 0, 0], [None]))),
        _input("neg_general", [None, k]),
        _op("ExpandDims", "expand_dims_1", -1, _node(_tensor(["specific", 0, 0], [None]))),
        _input("neg_specific", [None, k]),
        _op("Concatenate", "concatenate", -1,
            _node([_tensor(["expand_dims", 0, 0], [None, 1]),
                   _tensor(["neg_general", 0, 0], [None, k])])),
        _op("Concatenate", "concatenate_1", -1,
            _node([_tensor(["expand_dims_1", 0, 0], [None, 1]),
                   _tensor(["neg_specific", 0, 0], [None, k])])),
        nodes, scored]
    loss_class, loss_module, loss_name = _LOSSES[config.loss]
    loss_config = {"name": loss_name, "reduction": "sum_over_batch_size",
                   "margin": float(config.margin)}
    if config.loss == "threshold":
        loss_config["threshold"] = float(config.threshold)
    optimizer = {"clipnorm": None, "clipvalue": None, "ema_momentum": 0.99,
                 "ema_overwrite_frequency": None, "epsilon": EPSILON, "global_clipnorm": None,
                 "gradient_accumulation_steps": None, "initial_accumulator_value": INITIAL_ACCUMULATOR,
                 "learning_rate": _learning_rate(config, total_steps),
                 "loss_scale_factor": None, "name": "sparse_adagrad", "use_ema": False,
                 "weight_decay": None}
    return {
        "build_config": {"input_shape": None}, "class_name": "GaussianModel",
        "compile_config": {
            "jit_compile": False,
            "loss": {"class_name": loss_class, "config": loss_config, "module": loss_module,
                     "registered_name": f"keras_gauss>{loss_class}"},
            "loss_weights": None, "metrics": None,
            "optimizer": {"class_name": "SparseAdagrad", "config": optimizer,
                          "module": "keras_gauss.optimizers.sparse_adagrad",
                          "registered_name": "keras_gauss>SparseAdagrad"},
            "run_eagerly": False, "steps_per_execution": 1, "weighted_metrics": None},
        "config": {"input_layers": {name: [name, 0, 0] for name in
                                    ("general", "neg_general", "neg_specific", "specific")},
                   "layers": layers, "name": "gaussian_hierarchy",
                   "output_layers": [energy_name, 0, 0], "trainable": True},
        "module": "keras_gauss.models.gaussian_model",
        "registered_name": "keras_gauss>GaussianModel"}


def write_hierarchy_model(path, model_config, arrays, iterations=0):
    """Writes `model.keras` for the hierarchy model holding these arrays.

    Args:
        path: the file to write.
        model_config: the `hierarchy_model_config` dict.
        arrays: `(means, variances, mean_accumulator, variance_accumulator)`.
        iterations: the optimizer's step count.

    Example: a 3-node, 2-d model, loaded back with Keras.

    >>> import keras, keras_gauss
    >>> from keras_gauss.hierarchy.config import WordNetConfig
    >>> model_config = hierarchy_model_config(WordNetConfig(dim=2).resolved(), 3, 1, 10)
    >>> write_hierarchy_model("model.keras", model_config,
    ...                       [np.zeros((3, 2)), np.ones((3, 2))] * 2)
    >>> keras.saving.load_model("model.keras").get_layer("nodes").variances.numpy().tolist()
    [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    """
    means, variances, mean_accumulator, variance_accumulator = (
        np.asarray(a, np.float32) for a in arrays)
    energy = model_config["config"]["output_layers"][0]
    layers = [("gaussian_embedding", "nodes", [means, variances]), (energy, energy, [])]
    for index, name in enumerate(("general", "specific", "neg_general", "neg_specific")):
        layers.append(("input_layer" + (f"_{index}" if index else ""), name, []))
    rate = model_config["compile_config"]["optimizer"]["config"]["learning_rate"]
    optimizer = [np.int64(iterations)]
    if not isinstance(rate, dict):  # a schedule has no learning-rate variable
        optimizer.append(np.float32(rate))
    write_keras_file(path, model_config, layers,
                     ("sparse_adagrad", optimizer + [mean_accumulator, variance_accumulator]),
                     model_config["config"]["name"])
