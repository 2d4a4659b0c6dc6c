"""Shared pytest setup: quiet TensorFlow logs, seed every test, and group the
tests for `pytest -n 2 --dist loadgroup` (pytest-xdist, the README's command).

Each test file runs whole on one worker (its module fixtures, such as a JAX
child shared by its tests, start once), unless its tests name an
`xdist_group` of their own: the multi-process jobs (`JOBS`) run one at a time,
never beside each other. The groups known to take longest are handed out
first, so that no long one starts last.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

# The group of the tests that start several processes of one job (ports,
# timeouts): `@pytest.mark.xdist_group("jobs")` (test_distribution.py, the
# scale-out block of test_readme.py).
JOBS = "jobs"
# Started first (longest first): they take a minute or more on 2 cores.
FIRST = (JOBS, "tests/test_readme.py",
         "tests/keras_gauss/kernels/test_kernels.py",
         "tests/keras_gauss/optimizers/test_sparse_adagrad.py",
         "tests/pipelines/test_pipelines_sources.py")


def _group(item):
    marks = [m for m in item.iter_markers("xdist_group")]
    if marks:
        return marks[0].args[0] if marks[0].args else marks[0].kwargs.get("name", "default")
    return item.nodeid.split("::")[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Gives every test without an `xdist_group` its file's, and puts the
    groups of `FIRST` first (the order within a group is kept)."""
    for item in items:
        if not any(item.iter_markers("xdist_group")):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(_group(item), len(FIRST)))  # stable


@pytest.fixture(autouse=True)
def _seed():
    import keras

    keras.utils.set_random_seed(1234)
    np.random.seed(1234)
