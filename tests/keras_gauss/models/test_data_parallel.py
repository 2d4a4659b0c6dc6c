"""DataParallel over two forced host devices trains the corpus model like one device."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


def test_data_parallel_on_two_host_devices_matches_one(tmp_path):
    pytest.importorskip("jax")
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    script = Path(__file__).with_name("data_parallel_run.py")
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "out.npz")],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = np.load(tmp_path / "out.npz")
    assert int(results["devices"]) == 2
    assert str(results["batch_axis"]) == "batch"  # the batch really was split
    paths = [k.split("/", 1)[1] for k in results.files if k.startswith("one/")]
    assert len(paths) == 4
    # Each device sums its half of the row gradients; the sums of the
    # halves differ from the one-device sum by float rounding only.
    for path in paths:
        np.testing.assert_allclose(results[f"parallel/{path}"], results[f"one/{path}"],
                                   rtol=1e-5, atol=1e-6, err_msg=path)
        assert not np.allclose(results[f"parallel/{path}"], 0.0)
