"""`keras_gauss.run_format`: `run.json` written and read back, and a bad
generality weight in it named in one line."""

import json

import numpy as np
import pytest

from keras_gauss.run_format import DamagedRunError
from keras_gauss.run_format import generality_of
from keras_gauss.run_format import jsonable
from keras_gauss.run_format import read_json
from keras_gauss.run_format import write_run_info


def test_run_info_round_trips_with_its_generality(tmp_path):
    write_run_info(tmp_path, kind="hierarchy", energy="kl", table="nodes",
                   vocabulary="nodes.tsv", generality=0.5)
    info = read_json(tmp_path / "run.json")
    assert info == {"kind": "hierarchy", "energy": "kl", "table": "nodes",
                    "vocabulary": "nodes.tsv", "format": 1, "generality": 0.5}
    assert generality_of(info) == 0.5
    assert generality_of({}) == generality_of({"generality": None}) == 0.0  # no entry: 0
    with pytest.raises(ValueError, match="energy must be one of"):
        write_run_info(tmp_path, kind="corpus", energy="cosine", table="t", vocabulary="v")


@pytest.mark.parametrize("value", [-1.0, "0.5", True, float("inf")])
def test_a_bad_generality_in_run_json_names_the_file(tmp_path, value):
    write_run_info(tmp_path, kind="hierarchy", energy="kl", table="nodes",
                   vocabulary="nodes.tsv", generality=value)
    path = tmp_path / "run.json"
    with pytest.raises(DamagedRunError,
                       match=f"{path}: 'generality' must be a finite number >= 0"):
        generality_of(read_json(path), path)


def test_jsonable_converts_numpy_scalars_nan_and_infinities():
    # a threshold below every score is -inf: metrics.json held `-Infinity`, not JSON
    value = {"a": [np.float32(0.5), np.int64(3)], "b": (np.float64("nan"), "x"),
             "c": {"threshold": -np.inf, "top": float("inf")}}
    assert jsonable(value) == {"a": [0.5, 3], "b": [None, "x"],
                               "c": {"threshold": None, "top": None}}
    json.dumps(jsonable(value), allow_nan=False)
