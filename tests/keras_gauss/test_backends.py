"""The unit tests of the layers, losses, constraints, energies and
`SparseAdagrad` pass on JAX and torch too, not only on TensorFlow.

`unit_tests` runs the test files of `FILES` with pytest inside the child
Python of each backend (`KERAS_BACKEND=jax` or `torch`: the `unit_tests`
job of `child_jobs.py`); this test passes when they do, and shows the
child's failures and skips otherwise. Tests that only make sense on
TensorFlow skip there with their reason (`backends.only_on_tensorflow`).
Files whose own jobs already run on JAX (`NOT_ON`) are not run again there.
torch skips where it is not installed (`.ci/run` installs its CPU wheel).
"""

import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
FILES = sorted(str(path.relative_to(ROOT)) for folder in
               ("layers", "losses", "constraints", "energies", "optimizers")
               for path in (HERE / folder).glob("test_*.py")) + [
    "tests/keras_gauss/callbacks/test_project_constraints.py"]
# The sampler's JAX batch is compared with TensorFlow's, bit for bit, by its
# own JAX job (test_tensorflow_and_jax_draw_the_same_batch).
NOT_ON = {"jax": {"tests/keras_gauss/layers/test_skipgram_sampler.py"}}


class _Outcomes:
    """A pytest plugin that keeps each test's outcome (`summary()`)."""

    def __init__(self):
        self.passed, self.failed, self.skipped = 0, [], []

    def pytest_collectreport(self, report):
        if report.failed:
            self.failed.append(f"{report.nodeid} (collecting):\n{report.longreprtext[-2000:]}")

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed.append(f"{report.nodeid} ({report.when}):\n{report.longreprtext[-2000:]}")
        elif report.skipped:
            self.skipped.append(f"{report.nodeid}: {report.longrepr[-1]}")
        elif report.when == "call":
            self.passed += 1

    def summary(self):
        return {"passed": self.passed, "failed": self.failed, "skipped": self.skipped}


def unit_tests():
    """Runs `FILES` (less this backend's `NOT_ON`) with pytest in this process,
    on its Keras backend; returns pytest's exit code and the outcomes."""
    import keras

    import keras_gauss  # noqa: F401 - the package, not the namespace `tests/keras_gauss`
    #                     that pytest's `sys.path` entry `tests/` would give a fresh import
    backend = keras.backend.backend()
    files = [str(ROOT / f) for f in FILES if f not in NOT_ON.get(backend, ())]
    outcomes = _Outcomes()
    code = pytest.main(["-o", "addopts=", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
                        "--rootdir", str(ROOT), "-W", "ignore::UserWarning", *files],
                       plugins=[outcomes])
    return {"code": int(code), **outcomes.summary()}


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_unit_tests_pass_on(backend, request):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    _, result = request.getfixturevalue(f"{backend}_job")("unit_tests")
    report = "\n".join([*result["failed"], *result["skipped"]])[-6000:]
    assert result["code"] == 0 and not result["failed"], f"KERAS_BACKEND={backend}:\n{report}"
    assert result["passed"] > 0, report
