"""Fixtures for the keras_gauss tests.

The test directories have no `__init__.py` (a `tests/keras_gauss` package
would shadow the library's own `keras_gauss`), so this directory is put on
`sys.path` for the shared helpers (`layer_test_case`, `recording`).

`jax_job`, `torch_job`: the tests' scripts and functions for the JAX and
torch backends (`CHILD_JOBS`) run in one child Python a backend
(`child_jobs.py`), started once a session.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from backends import forced_host_devices  # noqa: E402
from child_jobs import CHILD_JOBS  # noqa: E402


@pytest.fixture
def mixed_float16():
    """Runs a test under the `mixed_float16` policy and always restores it."""
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy("float32")


# -- the tests' jobs on JAX and torch, in one child Python a backend -------

HERE = Path(__file__).parent


def _job(name, out):
    """`(target, args, env)` of job `name` (see `child_jobs.py`), writing into `out`."""
    if name == "unit_tests":
        return "test_backends.py::unit_tests", [], {}
    if name == "torch_models":
        return "models/torch_run.py", [_torch_start_weights(out)], {}
    if name == "lowered":
        return "models/lowered_steps.py", [out], {}
    if name == "interop":
        corpus = _interop_corpus(out)
        _train_tf_run(corpus, out / "tf_run")
        return "models/backend_run.py", ["train", corpus, out / "jax_run", out / "jax.npz", "--",
                                         "load", out / "tf_run", out / "tf_on_jax.npz",
                                         out / "retrained.keras", out / "serve_on_jax"], {}
    if name == "model_parallel":
        # A root, 16 children, one grandchild each: 16 + 2 * 16 = 48 closure edges.
        lines = [f"c{i}\tr" for i in range(16)] + [f"g{i}\tc{i}" for i in range(16)]
        (out / "edges.tsv").write_text("\n".join(lines) + "\n")
        # As `test_distribution.jax_env`: the layers' keras.ops code on both sides.
        return ("model_parallel_run.py", [out / "out.npz", out / "edges.tsv", out / "runs"],
                {"KERAS_GAUSS_KERNELS": "reference"})
    if name == "without_tensorflow":
        return "test_hierarchy_without_tensorflow.py::without_tensorflow", [out], {}
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


def _torch_start_weights(folder):
    """`folder`, where the start weights of `torch_run.MODELS` are written
    (`test_torch_backend` trains the same models from them on TensorFlow)."""
    import numpy as np

    sys.path.insert(0, str(HERE / "models"))
    import torch_run

    keras.utils.set_random_seed(0)
    for name, build in torch_run.MODELS.items():
        np.savez(folder / f"{name}.start.npz",
                 **{f"w{i}": w for i, w in enumerate(build().get_weights())})
    return folder


def _train_tf_run(corpus, run_dir):
    """The run `test_backend_interop` loads on JAX: trained here, on TensorFlow."""
    from keras_gauss.pipelines.train import CorpusConfig
    from keras_gauss.pipelines.train import train_corpus

    config = CorpusConfig(dim=8, epochs=2, window=3, min_count=1, sample=0.0,
                          batch_size=256, learning_rate=0.1, seed=0, engine="keras")
    train_corpus(config, corpus, run_dir, verbose=0)


def _child_jobs(backend, request, tmp_path_factory):
    """Runs the jobs of `CHILD_JOBS[backend]` whose tests were collected in one
    child (`child_jobs.py`: the backend, Keras and TensorFlow start once, not
    once a file); returns `job(NAME)`: `(folder, result)` of job NAME (its
    outputs, what its function returned), failing with the job's traceback
    if it failed. `tests/conftest.py` keeps a backend's tests on one
    pytest-xdist worker, so its child runs once a session; one file alone
    runs its own jobs only.

    The JAX child has two host devices (XLA_FLAGS, for
    `data_parallel_run.py`); the other jobs use the first, as a process with one."""
    pytest.importorskip(backend)
    collected = [item.nodeid for item in request.session.items]
    folder = tmp_path_factory.mktemp(f"{backend}_jobs")
    jobs = []
    for name in dict.fromkeys(CHILD_JOBS[backend].values()):  # in order, once each
        if any(nodeid.startswith(f"tests/keras_gauss/{tests}") for nodeid in collected
               for tests, job in CHILD_JOBS[backend].items() if job == name):
            (folder / name).mkdir()
            target, args, env = _job(name, folder / name)
            args = [a if isinstance(a, list) else str(a) for a in args]
            jobs.append([name, str(HERE / target), args, env])
    (folder / "jobs.json").write_text(json.dumps(jobs))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
               XLA_FLAGS=forced_host_devices(2))
    done = subprocess.run([sys.executable, str(HERE / "child_jobs.py"), str(folder / "jobs.json"),
                           str(folder / "status.json")], env=env, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    status = json.loads((folder / "status.json").read_text())

    def job(name):
        said = status.get(name, {"status": f"{name} did not run"})
        assert said["status"] == "ok", said["status"]
        return folder / name, said["result"]

    return job


@pytest.fixture(scope="session")
def jax_job(request, tmp_path_factory):
    """`jax_job(NAME)`: `(folder, result)` of the JAX job NAME (`_child_jobs`)."""
    return _child_jobs("jax", request, tmp_path_factory)


@pytest.fixture(scope="session")
def torch_job(request, tmp_path_factory):
    """`torch_job(NAME)`: `(folder, result)` of the torch job NAME (`_child_jobs`)."""
    return _child_jobs("torch", request, tmp_path_factory)
