"""Compiles and loads the fused C++ op on first use.

The shared library is built from `kernels.cc` and `skipgram.cc` (with
`gauss_math.h`) with the C++ compiler (`$CXX`,
else `g++`) and TensorFlow's own compile and link flags, and cached under
`$KERAS_GAUSS_CACHE/ops/<key>/` (default `~/.cache/keras_gauss/ops/<key>/`),
where the key hashes the source, the TensorFlow version and ABI flags, the
compiler and its flags, and the CPU. The file is written to a temporary name
and renamed, so concurrent processes never load a half-written library.

Set `KERAS_GAUSS_FUSED_NATIVE=0` to compile without `-march=native` (for
example when the cache directory is shared by machines with different CPUs;
the CPU is part of the cache key anyway). Set `KERAS_GAUSS_DISABLE_FUSED=1`
to never build or load it.

If anything fails (no compiler, compile error, ABI mismatch at load), one
warning is logged and `load()` returns None: callers fall back to the pure
TensorFlow implementation.
"""

import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
import threading

logger = logging.getLogger("keras_gauss.fused")

_HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = tuple(os.path.join(_HERE, name) for name in ("kernels.cc", "skipgram.cc"))
HEADERS = (os.path.join(_HERE, "gauss_math.h"),)

_lock = threading.Lock()
_state = {"tried": False, "module": None, "error": None}


def cache_dir():
    """The directory holding compiled ops (`$KERAS_GAUSS_CACHE/ops` or
    `~/.cache/keras_gauss/ops`)."""
    root = os.environ.get("KERAS_GAUSS_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "keras_gauss"
    )
    return os.path.join(root, "ops")


def _cpu_fingerprint():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return line.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def compile_command(sources, output):
    """The compiler command line building `output` from `sources`.

    Args:
        sources: paths of the C++ sources.
        output: path of the shared library to write.

    Returns:
        A list of arguments for `subprocess.run`.
    """
    import tensorflow as tf

    cxx = os.environ.get("CXX") or "g++"
    flags = [
        "-std=c++17",
        "-shared",
        "-fPIC",
        "-O3",
        # Vectorise sqrt and `#pragma omp simd` reductions; no other
        # fast-math licence (the results must match the TensorFlow step).
        "-fno-math-errno",
        "-fopenmp-simd",
        "-Wno-deprecated-declarations",
    ]
    if os.environ.get("KERAS_GAUSS_FUSED_NATIVE", "1") != "0" and platform.machine() in (
        "x86_64",
        "AMD64",
    ):
        flags.append("-march=native")
    # TensorFlow's flags come last so that its `--std` and ABI defines win.
    return (
        [cxx]
        + flags
        + list(sources)
        + ["-o", output]
        + list(tf.sysconfig.get_compile_flags())
        + list(tf.sysconfig.get_link_flags())
    )


def library_path():
    """Where the library for this source, TensorFlow and compiler lives."""
    import tensorflow as tf

    command = compile_command(SOURCES, "OUT")
    digest = hashlib.sha256()
    for name in SOURCES + HEADERS:
        with open(name, "rb") as f:
            digest.update(f.read())
    digest.update(tf.__version__.encode())
    digest.update(" ".join(command).encode())
    cxx = shutil.which(command[0]) or command[0]
    digest.update(cxx.encode())
    if "-march=native" in command:
        digest.update(_cpu_fingerprint().encode())
    return os.path.join(cache_dir(), digest.hexdigest()[:16], "keras_gauss_fused.so")


def build(path=None):
    """Compiles the library to `path` (atomically) unless it is there.

    Args:
        path: target path (default `library_path()`).

    Returns:
        The path of the library.

    Raises:
        RuntimeError: when the compiler is missing or fails.
    """
    path = path or library_path()
    if os.path.exists(path):
        return path
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so.tmp", dir=directory)
    os.close(fd)
    try:
        command = compile_command(SOURCES, tmp)
        if shutil.which(command[0]) is None:
            raise RuntimeError(f"C++ compiler {command[0]!r} not found")
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(
                "compiling the fused op failed:\n" + result.stderr[-4000:]
            )
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def load():
    """Builds (once per process, cached on disk) and loads the op library.

    Returns:
        The module returned by `tf.load_op_library`, or None if the library
        cannot be built or loaded (one warning is logged, with the reason).
    """
    with _lock:
        if _state["tried"]:
            return _state["module"]
        _state["tried"] = True
        if os.environ.get("KERAS_GAUSS_DISABLE_FUSED", "0") not in ("", "0"):
            _state["error"] = "disabled by KERAS_GAUSS_DISABLE_FUSED"
            return None
        try:
            import tensorflow as tf

            _state["module"] = tf.load_op_library(build())
        except Exception as error:  # noqa: BLE001 - any failure means fallback
            _state["error"] = f"{type(error).__name__}: {error}"
            logger.warning(
                "keras_gauss: the fused training op is unavailable (%s); "
                "using the pure TensorFlow step instead.",
                _state["error"],
            )
        return _state["module"]


def error():
    """Why the library is unavailable (a string), or None."""
    return _state["error"]


def _reset():
    """Forgets the load attempt (for tests)."""
    with _lock:
        _state.update(tried=False, module=None, error=None)
