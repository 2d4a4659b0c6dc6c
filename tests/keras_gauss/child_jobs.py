"""Runs the tests' jobs on one Keras backend in one child Python: the
backend, Keras and TensorFlow start once for all of them (`conftest.py`'s
`child_jobs`), one child for JAX and one for torch.

    XLA_FLAGS=--xla_force_host_platform_device_count=2 KERAS_BACKEND=jax \
        python child_jobs.py JOBS.json STATUS.json

JOBS.json is a list of `[name, target, args, env]`, run in that order. A
target `FILE.py` runs as `python FILE.py args...` would (`runpy`, as
`__main__`, its folder first on `sys.path`); `FILE.py::NAME` calls the
function NAME of that file with `args` (imported by path, its folder on
`sys.path`). Each job runs after `keras.backend.clear_session()` (the layer
names of a fresh process) with the variables of `env` set (`null`: unset),
and `os.environ`, `sys.argv` and `sys.path` are put back after it
(`lowered_steps.py` sets `KERAS_GAUSS_KERNELS=reference`). A job that fails
does not stop the others: STATUS.json maps each name to `{"status": "ok" or
the traceback, "result": what a function returned (JSON), "seconds": its
wall time, "cpu": its CPU seconds (this process's threads)}`.
"""

import gc
import importlib.util
import json
import os
import runpy
import sys
import time
import traceback
from pathlib import Path

# Backend -> {the tests (a file or test id under tests/keras_gauss) -> their
# job (`conftest.py`'s `_job` makes it)}, run in this order; `tests/conftest.py`
# keeps each backend's tests one unit of work, so its child starts once.
CHILD_JOBS = {
    "jax": {
        # first: before any job imports TensorFlow (it hides TensorFlow anyway)
        "test_hierarchy_without_tensorflow.py": "without_tensorflow",
        "models/test_fusion_barrier.py": "lowered",
        "models/test_backend_interop.py": "interop",
        "models/test_data_parallel.py": "data_parallel",
        "test_distribution.py::test_model_parallel": "model_parallel",
        "test_distribution.py::test_hierarchy_data_parallel": "model_parallel",
        "layers/test_skipgram_sampler.py": "sampler",
        "optimizers/test_sparse_adagrad.py": "schedules",
        "kernels/test_kernels.py": "kernels",
        "test_backends.py::test_the_unit_tests_pass_on[jax]": "unit_tests",
        "models/test_gaussian_model.py": "training",  # last: it patches SparseAdagrad
    },
    "torch": {
        "models/test_torch_backend.py": "torch_models",
        "test_backends.py::test_the_unit_tests_pass_on[torch]": "unit_tests",
    },
}


def run(target, args):
    """Runs one job's `target` with `args`; returns a function's result (else None)."""
    path, _, function = target.partition("::")
    sys.path[:0] = [str(Path(path).parent), str(Path(__file__).parent)]  # (and `backends`)
    if not function:
        sys.argv = [path, *args]
        runpy.run_path(path, run_name="__main__")
        return None
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, function)(*args)


def main(jobs_file, status_file):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras

    status = {}
    for name, target, args, env in json.loads(Path(jobs_file).read_text()):
        environ, argv, path = dict(os.environ), sys.argv, list(sys.path)
        for key, value in env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        keras.backend.clear_session()
        # What is alive now (Keras, the backends, TensorFlow: half a million
        # objects, never garbage) is left out of the collections to come: the
        # child's collections took 10.6 CPU-s, 3.6 with it.
        gc.freeze()
        start, cpu = time.perf_counter(), time.process_time()
        try:
            status[name] = {"status": "ok", "result": run(target, args)}
        except BaseException:  # noqa: B036 - a script's sys.exit too
            status[name] = {"status": traceback.format_exc(), "result": None}
        finally:
            status[name]["seconds"] = round(time.perf_counter() - start, 1)
            status[name]["cpu"] = round(time.process_time() - cpu, 1)
            sys.argv, sys.path[:] = argv, path
            os.environ.clear()
            os.environ.update(environ)
    Path(status_file).write_text(json.dumps(status))


if __name__ == "__main__":
    main(*sys.argv[1:])
