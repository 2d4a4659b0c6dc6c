"""DataParallel over two forced host devices trains the corpus model like one device."""

import numpy as np


def test_data_parallel_on_two_host_devices_matches_one(jax_job):
    """`data_parallel_run.py` on JAX with two host devices (XLA_FLAGS, in the
    tests' one JAX child, `jax_job`)."""
    results = np.load(jax_job("data_parallel")[0] / "out.npz")
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
