"""Fixtures for the keras_gauss tests.

The test directories have no `__init__.py` (a `tests/keras_gauss` package
would shadow the library's own `keras_gauss`), so this directory is put on
`sys.path` for the shared helpers (`layer_test_case`, `recording`).

`jax_job`: the tests' JAX scripts and functions (`JAX_JOBS`) run in one
child Python (`jax_jobs.py`), started once a session.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from jax_jobs import JAX_JOBS  # noqa: E402


@pytest.fixture
def mixed_float16():
    """Runs a test under the `mixed_float16` policy and always restores it."""
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy("float32")


# -- the tests' JAX jobs, in one child Python -----------------------------

HERE = Path(__file__).parent
def _jax_job(name, out):
    """`(target, args, env)` of job `name` (see `jax_jobs.py`), writing into `out`."""
    if name == "lowered":
        return "models/lowered_steps.py", [out], {}
    if name == "interop":
        corpus = _interop_corpus(out)
        _train_tf_run(corpus, out / "tf_run")
        return "models/backend_run.py", ["train", corpus, out / "jax_run", out / "jax.npz", "--",
                                         "load", out / "tf_run", out / "tf_on_jax.npz",
                                         out / "retrained.keras"], {}
    if name == "data_parallel":
        return "models/data_parallel_run.py", [out / "out.npz"], {}
    if name == "sampler":
        return "layers/test_skipgram_sampler.py::draw_on_jax", [out / "jax.npz"], {}
    if name == "schedules":
        return ("optimizers/test_sparse_adagrad.py::_schedule_fits",
                [["nan", "inf", "-1", "0"]], {})
    if name == "kernels":
        return "kernels/kernel_checks.py", [out / "results.json"], {"KERAS_GAUSS_KERNELS": None}
    return "models/backend_training.py", [out / "jax.npz"], {}


def _interop_corpus(folder):
    """The tiny topic corpus of the interop runs (`test_pipelines_train.topic_corpus`)."""
    sys.path.insert(0, str(HERE.parent / "pipelines"))
    from test_pipelines_train import topic_corpus

    return topic_corpus(folder / "corpus.txt")


def _train_tf_run(corpus, run_dir):
    """The run `test_backend_interop` loads on JAX: trained here, on TensorFlow."""
    from keras_gauss.pipelines.train import CorpusConfig
    from keras_gauss.pipelines.train import train_corpus

    config = CorpusConfig(dim=8, epochs=2, window=3, min_count=1, sample=0.0,
                          batch_size=256, learning_rate=0.1, seed=0, engine="keras")
    train_corpus(config, corpus, run_dir, verbose=0)


@pytest.fixture(scope="session")
def jax_scripts(request, tmp_path_factory):
    """Runs the JAX jobs (`JAX_JOBS`) of the collected test files in one child
    (`jax_jobs.py`: JAX, Keras and TensorFlow start once, not once a file);
    returns `(folder, status)`: `folder / NAME` holds job NAME's outputs,
    `status` its `{"status", "result"}`. `tests/conftest.py` keeps these
    files on one pytest-xdist worker (`JAX_TESTS`), so the child runs once a
    session; one file alone runs its own job only.

    The child has two host devices (XLA_FLAGS, for `data_parallel_run.py`);
    the other jobs use the first, as a process with one."""
    pytest.importorskip("jax")
    collected = {str(Path(str(item.fspath)).relative_to(HERE)) for item in request.session.items
                 if Path(str(item.fspath)).is_relative_to(HERE)}
    folder = tmp_path_factory.mktemp("jax_jobs")
    jobs = []
    for test_file, name in JAX_JOBS.items():
        if test_file in collected:
            (folder / name).mkdir()
            target, args, env = _jax_job(name, folder / name)
            args = [a if isinstance(a, list) else str(a) for a in args]
            jobs.append([name, str(HERE / target), args, env])
    (folder / "jobs.json").write_text(json.dumps(jobs))
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    done = subprocess.run([sys.executable, str(HERE / "jax_jobs.py"), str(folder / "jobs.json"),
                           str(folder / "status.json")], env=env, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder, json.loads((folder / "status.json").read_text())


@pytest.fixture(scope="session")
def jax_job(jax_scripts):
    """`jax_job(NAME)`: `(folder, result)` of job NAME (`jax_scripts`);
    fails with the job's traceback if it failed."""
    folder, status = jax_scripts

    def job(name):
        said = status.get(name, {"status": f"{name} did not run"})
        assert said["status"] == "ok", said["status"]
        return folder / name, said["result"]

    return job
