"""Shared pytest setup: quiet TensorFlow logs, seed every test, and share the
tests out for `pytest -n 2 --dist loadfile` (pytest-xdist, the README's command).

Each test file runs whole on one worker (its module fixtures, such as a JAX
child shared by its tests, start once); the tests that start the several
processes of one job (`JOB_TESTS`: ports, timeouts) form one unit of their
own, so they run one at a time, never beside each other; the tests whose
jobs share one child Python a backend (`CHILD_TESTS`, `jax_job` and
`torch_job` of `tests/keras_gauss/conftest.py`) form one unit a backend, so
each child starts once.
The units known to take longest (`FIRST`) are handed out first, so that no
long one starts last.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# XLA's LLVM backend without its optimisation passes, and XLA's CPU code
# generator of before its fusion emitters, in this process and the processes
# it starts: the tests' programs are tiny and compiled by the hundred, so
# compiling is most of their time (the JAX unit tests: 42 CPU-s, 32 with the
# first; a train step 1.3 -> 0.55 CPU-s with the second). XLA's own passes
# (fusion, the barriers the tests read from the lowered steps) are unchanged;
# the benchmarks and users compile as usual.
TEST_XLA_FLAGS = ("--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true "
                  "--xla_cpu_use_fusion_emitters=false")
os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {TEST_XLA_FLAGS}".strip()

import numpy as np  # noqa: E402
import pytest  # noqa: E402

JOBS = "jobs"
JOB_TESTS = ("tests/keras_gauss/test_distribution.py",
             "tests/test_readme.py::test_readme_block[scale-out]")
_spec = importlib.util.spec_from_file_location(
    "child_jobs", os.path.join(os.path.dirname(__file__), "keras_gauss", "child_jobs.py"))
_child_jobs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_child_jobs)
# Backend -> the tests (files or test ids) of its child's jobs.
CHILD_TESTS = {backend: tuple(f"tests/keras_gauss/{tests}" for tests in jobs)
               for backend, jobs in _child_jobs.CHILD_JOBS.items()}
# Started first, longest first: a minute or more each on 2 cores.
FIRST = ("jax", JOBS, "torch", "tests/test_readme.py")


# The compiled libraries (`keras_gauss.fused.build`), built in the background
# at the start of a run on a machine whose cache holds none (a fresh machine,
# as CI's: about 60 CPU-s of g++), so that they compile beside the workers'
# collection rather than while workers and children wait on a build's lock
# (a clean clone's test command: 374 s warm; cold, 490 s before this, 404 s
# with it). Two processes: the TensorFlow ops, which the in-process tests
# need first; the JAX kernels (the JAX child starts first), then the native
# trainers. The same builds, flags and cache as the tests' own.
PREBUILDS = ("from keras_gauss.fused import build; build.load()",
             "import importlib.util\n"
             "from keras_gauss.fused import build\n"
             "if importlib.util.find_spec('jax'): build.load_jax()\n"
             "build.load_native()")


def _cold_cache():
    """Whether the kernel cache holds no verified library (a fresh machine).
    (With `KERAS_GAUSS_DISABLE_FUSED` the builds' `load` returns at once.)"""
    from keras_gauss.fused import build

    return not list(Path(build.cache_dir()).glob("*/*.so.json"))


def pytest_configure(config):
    """Starts `PREBUILDS` on a cold cache, once a run (not in xdist's workers)."""
    if hasattr(config, "workerinput") or not _cold_cache():
        return
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    config._prebuilds = [subprocess.Popen([sys.executable, "-c", code], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                         for code in PREBUILDS]


def pytest_unconfigure(config):
    """Waits for the builds of `pytest_configure` (a build killed half-way would
    leave its temporary file in the cache)."""
    for process in getattr(config, "_prebuilds", ()):
        process.wait()


def unit(nodeid):
    """The unit of work (`JOBS`, a backend of `CHILD_TESTS` or the test's file)
    of the test `nodeid`."""
    for backend, tests in CHILD_TESTS.items():
        if nodeid.startswith(tests):
            return backend
    if nodeid.startswith(JOB_TESTS):
        return JOBS
    return nodeid.split("::")[0]


def pytest_collection_modifyitems(config, items):
    """Puts the units of `FIRST` first (the order within a unit is kept)."""
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(unit(item.nodeid), len(FIRST)))  # stable


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` with the units of `unit` (the job tests one, the
    tests of each backend's child one), in the collection's order (not xdist's
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
