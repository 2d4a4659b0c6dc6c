"""Runs several of this folder's JAX scripts in one Python: JAX, Keras and
TensorFlow start once for all of them (`conftest.py`'s `jax_scripts`).

    XLA_FLAGS=--xla_force_host_platform_device_count=2 KERAS_BACKEND=jax \
        python jax_jobs.py JOBS.json STATUS.json

JOBS.json is a list of `[name, script, args]`; each script runs as
`python script args...` would (`runpy`, as `__main__`), in that order, after
`keras.backend.clear_session()` (the layer names of a fresh process), with
`os.environ` put back after it (`lowered_steps.py` sets
`KERAS_GAUSS_KERNELS=reference`). A script that fails does not stop the
others: STATUS.json maps each name to `"ok"` or its traceback.
"""

import json
import os
import runpy
import sys
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402


def main(jobs_file, status_file):
    status = {}
    for name, script, args in json.loads(open(jobs_file).read()):
        environ, argv = dict(os.environ), sys.argv
        sys.argv = [script, *map(str, args)]
        keras.backend.clear_session()
        try:
            runpy.run_path(script, run_name="__main__")
            status[name] = "ok"
        except BaseException:  # noqa: B036 - a script's sys.exit too
            status[name] = traceback.format_exc()
        finally:
            sys.argv = argv
            os.environ.clear()
            os.environ.update(environ)
    with open(status_file, "w") as out:
        json.dump(status, out)


if __name__ == "__main__":
    main(*sys.argv[1:])
