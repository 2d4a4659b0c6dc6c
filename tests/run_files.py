"""What run directories hold, compared: `assert_same_run` (the tables bit
for bit and chosen `metrics.json` entries: a resumed or repeated run against
the reference), `run_tables` and `weights_tree` (the weights file of a
`.keras` archive)."""

import json
import zipfile

import numpy as np

from keras_gauss.runs import load_run


def run_tables(run):
    """The weights of the model of the run directory `run`, NumPy arrays in
    the model's order.

    Example:

    >>> [w.shape for w in run_tables("runs/mammals")]  # doctest: +SKIP
    [(1182, 50), (1182, 50)]
    """
    return [w.numpy() for w in load_run(run).model.weights]


def assert_same_run(first, second, keys=()):
    """Asserts that the run directories `first` and `second` hold the same
    tables, bit for bit, and the same `metrics.json` entries `keys`.

    Returns:
        The two runs' metrics, `(first's, second's)`.

    Example:

    >>> assert_same_run(tmp_path / "a", out, keys=("final_loss", "config"))  # doctest: +SKIP
    """
    for a, b in zip(run_tables(first), run_tables(second)):
        np.testing.assert_array_equal(a, b)
    a, b = (json.loads((run / "metrics.json").read_text()) for run in (first, second))
    for key in keys:
        assert a[key] == b[key], key
    return a, b


def weights_tree(path):
    """The weights file of the `.keras` archive `path`: `[(name, attributes,
    shape or None)]` of its HDF5 groups and datasets, in visiting order.

    Example:

    >>> weights_tree(tmp_path / "ours.keras") == weights_tree(tmp_path / "keras.keras")  # doctest: +SKIP
    True
    """
    import h5py

    with zipfile.ZipFile(path) as archive, archive.open("model.weights.h5") as f, \
            h5py.File(f) as h5:
        items = []
        h5.visititems(lambda key, obj: items.append(
            (key, dict(obj.attrs), getattr(obj, "shape", None))))
        return items
