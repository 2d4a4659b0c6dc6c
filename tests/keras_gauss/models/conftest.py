"""`jax_scripts`: the JAX scripts of this folder's tests, in one child Python.

Each of `test_backend_interop.py`, `test_data_parallel.py`,
`test_fusion_barrier.py` and `test_gaussian_model.py` checks what a script
writes on JAX. Their scripts run in one child (`jax_jobs.py`: JAX, Keras
and TensorFlow start once, not four times), the first time one of them asks;
`tests/conftest.py` keeps the four files on one pytest-xdist worker, so the
child runs once a test session. Only the scripts of the files collected
run (one file alone starts the child for its script only).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
# test file -> (job name, script)
SCRIPTS = {
    "test_fusion_barrier.py": ("lowered", "lowered_steps.py"),
    "test_backend_interop.py": ("interop", "backend_run.py"),
    "test_data_parallel.py": ("data_parallel", "data_parallel_run.py"),
    "test_gaussian_model.py": ("training", "backend_training.py"),  # last: it patches SparseAdagrad
}


def interop_corpus(folder):
    """The tiny topic corpus of the interop runs (`test_pipelines_train.topic_corpus`)."""
    sys.path.insert(0, str(HERE.parents[1] / "pipelines"))
    from test_pipelines_train import topic_corpus

    return topic_corpus(folder / "corpus.txt")


def train_tf_run(corpus, run_dir):
    """The run `test_backend_interop` loads on JAX: trained here, on TensorFlow."""
    from keras_gauss.pipelines.train import CorpusConfig
    from keras_gauss.pipelines.train import train_corpus

    config = CorpusConfig(dim=8, epochs=2, window=3, min_count=1, sample=0.0,
                          batch_size=256, learning_rate=0.1, seed=0, engine="keras")
    train_corpus(config, corpus, run_dir, verbose=0)


@pytest.fixture(scope="session")
def jax_scripts(request, tmp_path_factory):
    """Runs the JAX scripts of the collected files in one child; returns
    `(folder, status)`: `folder / NAME` holds job NAME's outputs, `status`
    maps NAME to `"ok"` or the script's traceback (`jax_jobs.py`).

    The jobs: `lowered` (`lowered_steps.py lowered/`), `interop`
    (`backend_run.py`: train a run on JAX, load `tf_run` trained here),
    `data_parallel` (`data_parallel_run.py`, two host devices: XLA_FLAGS),
    `training` (`backend_training.py training/jax.npz`)."""
    pytest.importorskip("jax")
    collected = {Path(str(item.fspath)).name for item in request.session.items}
    folder = tmp_path_factory.mktemp("jax_scripts")
    jobs = []
    for test_file, (name, script) in SCRIPTS.items():
        if test_file not in collected:
            continue
        out = folder / name
        out.mkdir()
        if name == "lowered":
            args = [out]
        elif name == "interop":
            corpus = interop_corpus(out)
            train_tf_run(corpus, out / "tf_run")
            args = ["train", corpus, out / "jax_run", out / "jax.npz", "--",
                    "load", out / "tf_run", out / "tf_on_jax.npz", out / "retrained.keras"]
        elif name == "data_parallel":
            args = [out / "out.npz"]
        else:
            args = [out / "jax.npz"]
        jobs.append([name, str(HERE / script), [str(a) for a in args]])
    (folder / "jobs.json").write_text(json.dumps(jobs))
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    done = subprocess.run([sys.executable, str(HERE / "jax_jobs.py"), str(folder / "jobs.json"),
                           str(folder / "status.json")], env=env, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder, json.loads((folder / "status.json").read_text())


@pytest.fixture(scope="session")
def jax_job(jax_scripts):
    """`jax_job(NAME)`: job NAME's output folder (`jax_scripts`); fails with
    the script's traceback if it failed."""
    folder, status = jax_scripts

    def job(name):
        assert status.get(name) == "ok", status.get(name, f"{name} did not run")
        return folder / name

    return job
