"""Shared pytest setup: quiet TensorFlow logs, seed every test, and share the
tests out for `pytest -n 2 --dist loadfile` (pytest-xdist, the README's command).

Each test file runs whole on one worker (its module fixtures, such as a JAX
child shared by its tests, start once); the tests that start the several
processes of one job (`JOB_TESTS`: ports, timeouts) form one unit of their
own, so they run one at a time, never beside each other; the files whose
JAX jobs share one child (`JAX_TESTS`, `jax_job` of
`tests/keras_gauss/conftest.py`) form one unit, so it starts once.
The units known to take longest (`FIRST`) are handed out first, so that no
long one starts last.
"""

import importlib.util
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

JOBS = "jobs"
JOB_TESTS = ("tests/keras_gauss/test_distribution.py",
             "tests/test_readme.py::test_readme_block[scale-out]")
JAX = "jax"
_spec = importlib.util.spec_from_file_location(
    "jax_jobs", os.path.join(os.path.dirname(__file__), "keras_gauss", "jax_jobs.py"))
_jax_jobs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_jax_jobs)
JAX_TESTS = tuple(f"tests/keras_gauss/{name}" for name in _jax_jobs.JAX_JOBS)
# Started first, longest first: a minute or more each on 2 cores.
FIRST = (JAX, JOBS, "tests/test_readme.py", "tests/keras_gauss/test_backends.py")


def unit(nodeid):
    """The unit of work (`JOBS`, `JAX` or the test's file) of the test `nodeid`."""
    if nodeid.startswith(JOB_TESTS):
        return JOBS
    if nodeid.startswith(JAX_TESTS):
        return JAX
    return nodeid.split("::")[0]


def pytest_collection_modifyitems(config, items):
    """Puts the units of `FIRST` first (the order within a unit is kept)."""
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(unit(item.nodeid), len(FIRST)))  # stable


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` with the units of `unit` (the job tests one, the
    files of the JAX child one), in the collection's order (not xdist's
    largest-file-first)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Units(LoadFileScheduling):
        def _split_scope(self, nodeid):
            return unit(nodeid)

    config.option.loadscopereorder = False
    return Units(config, log)


@pytest.fixture(autouse=True)
def _seed():
    import keras

    keras.utils.set_random_seed(1234)
    np.random.seed(1234)
