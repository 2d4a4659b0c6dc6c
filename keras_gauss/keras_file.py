"""Writes a `.keras` model file without importing Keras.

The native engines end with tables in NumPy; importing Keras (and TensorFlow
with it) only to save them would cost more than an epoch. A `.keras` file is
a zip of `metadata.json`, `config.json` (the model's serialized config) and
`model.weights.h5` (each layer's variables under `layers/<group>/vars`, the
optimizer's under `optimizer/vars`, in Keras's order). `write_keras_file`
writes one from the config dict and the arrays; the callers
(`keras_gauss.pipelines.model_file`, `keras_gauss.hierarchy.model_file`)
hold what their model's config is, and their tests compare the file with the
one Keras writes.

Example: a file with one layer of one variable and no optimizer.

>>> write_keras_file("tiny.keras", {"class_name": "Functional", "config": {}},
...                  [("dense", "dense", [np.zeros((2, 3))])], ("adam", []), "tiny")
>>> import zipfile
>>> sorted(zipfile.ZipFile("tiny.keras").namelist())
['config.json', 'metadata.json', 'model.weights.h5']
"""

import copy
import json
import os
import time
import zipfile

import numpy as np


def _keras_version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("keras")
    except PackageNotFoundError:  # pragma: no cover
        return "3"


def write_keras_file(path, config, layers, optimizer, name):
    """Writes the model file `path`.

    Args:
        path: the file to write.
        config: the model's serialized config (`config.json`).
        layers: `[(group, layer name, [arrays])]`: each layer's h5 group
            (`gaussian_embedding`, `input_layer_1`, ...), its name and its
            variables in order (none for a layer without variables).
        optimizer: `(name, [arrays])`: the optimizer's variables in order
            (its step count first).
        name: the model's name.
    """
    import h5py

    metadata = {"keras_version": _keras_version(),
                "date_saved": time.strftime("%Y-%m-%d@%H:%M:%S")}
    weights = f"{path}.weights.h5"
    try:
        with h5py.File(weights, "w") as f:
            groups = f.create_group("layers")
            for group, layer, arrays in layers:
                holder = groups.create_group(group).create_group("vars")
                holder.attrs["name"] = layer
                for index, array in enumerate(arrays):
                    holder.create_dataset(str(index), data=np.asarray(array))
            holder = f.create_group("optimizer").create_group("vars")
            holder.attrs["name"] = optimizer[0]
            for index, array in enumerate(optimizer[1]):
                holder.create_dataset(str(index), data=np.asarray(array))
            f.create_group("vars").attrs["name"] = name
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("metadata.json", json.dumps(metadata))
            archive.writestr("config.json", json.dumps(copy.deepcopy(config)))
            archive.write(weights, "model.weights.h5")
    finally:
        if os.path.exists(weights):
            os.remove(weights)
