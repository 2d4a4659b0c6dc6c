"""The unit tests of the layers, losses, constraints, energies and
`SparseAdagrad` pass on JAX and torch too, not only on TensorFlow.

One child Python per backend (`KERAS_BACKEND=jax` or `torch`) runs the test
files of `FILES` with pytest; this test passes when the child's do, and
shows the child's failures and skips otherwise. Tests that only make sense
on TensorFlow skip there with their reason
(`backends.only_on_tensorflow`). Files whose own children already run on
JAX (`NOT_ON`) are not run again there. torch skips where it is not
installed (`.ci/run` installs its CPU wheel).
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
FILES = sorted(str(path.relative_to(ROOT)) for folder in
               ("layers", "losses", "constraints", "energies", "optimizers")
               for path in (HERE / folder).glob("test_*.py")) + [
    "tests/keras_gauss/callbacks/test_project_constraints.py"]
# The sampler's JAX batch is compared with TensorFlow's, bit for bit, by its
# own JAX child (test_tensorflow_and_jax_draw_the_same_batch).
NOT_ON = {"jax": {"tests/keras_gauss/layers/test_skipgram_sampler.py"}}


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_unit_tests_pass_on(backend):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    files = [f for f in FILES if f not in NOT_ON.get(backend, ())]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:xdist", "-p", "no:cacheprovider",
         "-q", "-rfEs", "--durations=5", "-W", "ignore::UserWarning", *files],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    report = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, f"KERAS_BACKEND={backend}:\n{report}"
    assert " passed" in done.stdout and " failed" not in done.stdout, report
