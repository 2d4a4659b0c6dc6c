"""Compiles and loads the C++ libraries on first use: the layers' kernels for
TensorFlow and for JAX, and the native trainer.

The TensorFlow op library (the layers' kernels behind `keras_gauss.kernels`)
is built from `layer_ops.cc` (with `layer_kernels.h` and `gauss_math.h`)
with the C++ compiler (`$CXX`, else `g++`) and TensorFlow's own compile and
link flags, and cached under
`$KERAS_GAUSS_CACHE/ops/<key>/` (default `~/.cache/keras_gauss/ops/<key>/`),
where the key hashes the source, the TensorFlow version and ABI flags, the
compiler and its flags, and the CPU. The file is written to a temporary name,
loaded once in a child process, renamed, and recorded (size and SHA-256 in
`keras_gauss_fused.so.json`); a cached library that no longer matches its
record (truncated, overwritten) is rebuilt instead of loaded. Builds into one
directory take turns (a lock file), so concurrent processes never load a
half-written library.

Trust. Loading a library runs its code as this user, so whoever can change
what is loaded must be no one but this user. A record beside the library
cannot prove who wrote it (whoever can write the library can write its
record), so trust comes from the file system: the cache is used only when
every directory from its root (`$KERAS_GAUSS_CACHE` or
`~/.cache/keras_gauss`) down to the library, the library and its record
belong to this user (owner == euid; files regular, not links) and no one
else can write them (no group or other write bit; a group write bit only
for the user's own private group), and every directory above the root
belongs to this user or root and is not writable by others unless sticky
(`/tmp`). Directories it creates are 0700, libraries 0700, records 0600.
The record (size and SHA-256 of the content, checked before every load) then
guards against accidents only: truncation, an overwritten or half-written
file. A cache that fails the check is never loaded, not even in a child
process: the library is built into a private temporary directory for this
process instead (one line on stderr says why); where no private directory
can be had, the library is unavailable (one warning; the layers use their
`keras.ops` code). Out of scope: root and this user, who can change the package
itself.

Set `KERAS_GAUSS_FUSED_NATIVE=0` to compile without `-march=native` (for
example when the cache directory is shared by machines with different CPUs;
the CPU is part of the cache key anyway). Set `KERAS_GAUSS_DISABLE_FUSED=1`
to never build or load it.

If anything fails (no compiler, compile error, ABI mismatch at load), one
warning is logged and `load()` returns None: the layers fall back to their
`keras.ops` code.

`build_jax()` / `load_jax()` do the same for the JAX backend's kernels
(`jax_ops.cc`: XLA FFI handlers behind `keras_gauss.kernels`), compiled with
the C++ compiler and jaxlib's FFI headers (no TensorFlow) into
`keras_gauss_jax.so`; its key hashes the source, jaxlib's version, the
compiler and its flags, and the CPU.

`build_native()` / `load_native()` do the same for the native trainers
(`native.cc` with `skipgram_core.h`: the skip-gram trainer, `pairs.cc`:
the hierarchy model's step and negatives, and `scores.cc`: the
reconstruction evaluation's score blocks; a plain C ABI, loaded with
`ctypes`), compiled with the C++ compiler alone (no TensorFlow headers, a
few seconds) into `keras_gauss_native.so` under the same cache, with the
same records, checks and lock; its key hashes the source, the compiler and
its flags, and the CPU.
"""

import atexit
import contextlib
import fcntl
import grp
import hashlib
import json
import logging
import os
import platform
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time

from keras_gauss.ownership import file_digest

logger = logging.getLogger("keras_gauss.fused")

_HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = (os.path.join(_HERE, "layer_ops.cc"),)
HEADERS = tuple(os.path.join(_HERE, name)
                for name in ("energies.h", "gauss_math.h", "layer_kernels.h"))
NATIVE_SOURCES = tuple(os.path.join(_HERE, name) for name in ("native.cc", "pairs.cc", "scores.cc"))
NATIVE_HEADERS = tuple(os.path.join(_HERE, name)
                       for name in ("energies.h", "gauss_math.h", "skipgram_core.h",
                                    "layer_kernels.h"))
JAX_SOURCES = (os.path.join(_HERE, "jax_ops.cc"),)
JAX_HEADERS = HEADERS

_lock = threading.Lock()
# The libraries whose compile failed in this process (no compiler, a compile
# error, a library that does not load). The libraries share the compiler and
# its flags: after the first failure, which the caller says in one line, the
# others are not compiled again (`_NotCompiledAgain`) and say nothing.
_failed = []
NOT_COMPILED_AGAIN = "not compiled again"


class _NotCompiledAgain(RuntimeError):
    """An earlier library failed to build in this process with the same compiler."""

_state = {"tried": False, "module": None, "error": None}
_native_state = {"tried": False, "module": None, "error": None}
_jax_state = {"tried": False, "module": None, "error": None}


def cache_root():
    """The cache's root: `$KERAS_GAUSS_CACHE` or `~/.cache/keras_gauss`."""
    return os.environ.get("KERAS_GAUSS_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "keras_gauss"
    )


def cache_dir():
    """The directory holding compiled ops (`$KERAS_GAUSS_CACHE/ops` or
    `~/.cache/keras_gauss/ops`)."""
    return os.path.join(cache_root(), "ops")


def _unsafe(st, kind, what, ours_only):
    """Why a file or directory with stat `st` cannot be trusted, or None."""
    owner_ok = st.st_uid == os.geteuid() or (not ours_only and st.st_uid == 0)
    if not owner_ok:
        return f"{what} belongs to uid {st.st_uid}, not to this user (uid {os.geteuid()})"
    if kind == "dir" and not stat.S_ISDIR(st.st_mode):
        return f"{what} is not a directory"
    if kind == "file" and not stat.S_ISREG(st.st_mode):
        return f"{what} is not a regular file"
    sticky = kind == "dir" and not ours_only and st.st_mode & stat.S_ISVTX
    if st.st_mode & stat.S_IWOTH and not sticky:
        return f"{what} is writable by others"
    if st.st_mode & stat.S_IWGRP and not sticky and not _private_group(st.st_gid):
        return f"{what} is writable by its group (gid {st.st_gid})"
    return None


def _private_group(gid):
    """True for this user's own primary group with no other member (a
    "user private group", as OpenSSH's permission checks allow)."""
    if gid != os.getegid():
        return False
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
        return set(grp.getgrgid(gid).gr_mem) <= {user}
    except KeyError:
        return False


def untrusted(directory, root=None, files=()):
    """Why the library directory `directory` (and `files` in it) cannot be
    trusted, or None (see the module docstring: owner, write bits, links).

    Args:
        directory: the directory holding the library.
        root: the cache's root (default `cache_root()`); from it down,
            everything must be this user's.
        files: names of files in `directory` to check too (those present).

    Example:

    >>> os.makedirs("cache/ops/key", mode=0o700)
    >>> untrusted("cache/ops/key", root="cache") is None
    True
    >>> os.chmod("cache/ops", 0o777)  # anyone may now replace what is in it
    >>> untrusted("cache/ops/key", root="cache")
    '/.../cache/ops is writable by others'
    """
    root = os.path.realpath(root or cache_root())
    real = os.path.realpath(directory)
    inside = real == root or real.startswith(root.rstrip(os.sep) + os.sep)
    parts = real.split(os.sep)
    for i in range(1, len(parts) + 1):
        current = os.sep.join(parts[:i]) or os.sep
        ours_only = inside and (current == root or current.startswith(root.rstrip(os.sep) + os.sep))
        if not inside and i == len(parts):
            ours_only = True  # a directory outside the cache (a private temporary one)
        try:
            st = os.stat(current)
        except OSError as error:
            return f"{current} cannot be read ({error.strerror or error})"
        problem = _unsafe(st, "dir", current, ours_only)
        if problem:
            return problem
    for name in files:
        path = os.path.join(real, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        problem = _unsafe(st, "file", path, True)
        if problem:
            return problem
    return None


def _make_private(directory):
    """Creates `directory` and its missing parents, each 0700."""
    missing = []
    current = os.path.abspath(directory)
    while not os.path.lexists(current):
        missing.append(current)
        current = os.path.dirname(current)
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)


_private = {}


def _private_dir():
    """A temporary directory of this process's own (0700), removed at exit."""
    if "dir" not in _private:
        directory = tempfile.mkdtemp(prefix="keras-gauss-ops-")
        atexit.register(shutil.rmtree, directory, True)
        _private["dir"] = directory
    return _private["dir"]


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

    # TensorFlow's flags come last so that its `--std` and ABI defines win.
    base = _base_command(sources, output)
    return (base + _eigen_flags(base) + list(tf.sysconfig.get_compile_flags())
            + list(tf.sysconfig.get_link_flags()))


def _eigen_flags(base):
    """`-mno-avx512fp16` where `-march=native` turns AVX512-FP16 on (Intel
    Sapphire Rapids and later): the Eigen headers TensorFlow 2.21 ships do
    not compile with it under GCC 12 (`PacketMathFP16.h`: "expected
    initializer before '<'"), and the kernels use no half-precision
    vectors. [] elsewhere, and where the compiler does not know the flag."""
    if "-march=native" not in base or "avx512_fp16" not in _cpu_fingerprint().split():
        return []
    return ["-mno-avx512fp16"] if _native_defines(base[0], "__AVX512FP16__") else []


_defines = {}


def _native_defines(cxx, macro):
    """Whether `cxx -march=native` predefines `macro` (False if it cannot run)."""
    if cxx not in _defines:
        try:
            _defines[cxx] = subprocess.run(
                [cxx, "-march=native", "-dM", "-E", "-x", "c++", os.devnull],
                capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            _defines[cxx] = ""
    return f"#define {macro} " in _defines[cxx]


def native_compile_command(sources, output):
    """`compile_command` (the same arguments and result) for the native
    library: no TensorFlow."""
    return _base_command(sources, output) + ["-pthread"]


def jax_compile_command(sources, output):
    """`compile_command` (the same arguments and result) for the JAX kernels
    (XLA FFI handlers, against jaxlib's headers; no TensorFlow)."""
    from jax import ffi

    return _base_command(sources, output) + ["-pthread", "-isystem", ffi.include_dir()]


def _base_command(sources, output):
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
    return [cxx] + flags + list(sources) + ["-o", output]


def _key_path(files, command, extra, name):
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as f:
            digest.update(f.read())
    digest.update(extra.encode())
    digest.update(" ".join(command).encode())
    cxx = shutil.which(command[0]) or command[0]
    digest.update(cxx.encode())
    if "-march=native" in command:
        digest.update(_cpu_fingerprint().encode())
    return os.path.join(cache_dir(), digest.hexdigest()[:16], name)


def library_path():
    """Where the library for this source, TensorFlow and compiler lives."""
    import tensorflow as tf

    return _key_path(SOURCES + HEADERS, compile_command(SOURCES, "OUT"), tf.__version__,
                     "keras_gauss_fused.so")


def native_library_path():
    """Where the native trainer for this source, compiler and CPU lives."""
    return _key_path(NATIVE_SOURCES + NATIVE_HEADERS,
                     native_compile_command(NATIVE_SOURCES, "OUT"), "native",
                     "keras_gauss_native.so")


def jax_library_path():
    """Where the JAX kernels for this source, jaxlib, compiler and CPU live."""
    import jaxlib

    return _key_path(JAX_SOURCES + JAX_HEADERS, jax_compile_command(JAX_SOURCES, "OUT"),
                     f"jaxlib {jaxlib.__version__}", "keras_gauss_jax.so")


def _record_path(path):
    return path + ".json"


def _damage(path):
    """Why the cached library at `path` must not be loaded, or None.

    A library is trusted only with its record (`<path>.json`: size and
    SHA-256, written after it loaded in a child process) and only while it
    matches: a truncated library would kill the process with SIGBUS on
    load, a garbage one would fail every time.
    """
    problem = untrusted(os.path.dirname(path),
                        files=(os.path.basename(path), os.path.basename(_record_path(path))))
    if problem:
        return f"it is not private: {problem}"
    try:
        with open(_record_path(path)) as f:
            record = json.load(f)
        size, sha = int(record["size"]), str(record["sha256"])
    except FileNotFoundError:
        return "no record of a verified build"
    except (OSError, ValueError, KeyError, TypeError):
        return "its record is unreadable"
    actual = os.path.getsize(path)
    if actual != size:
        return f"{actual:,} bytes instead of {size:,}"
    if file_digest(path) != sha:
        return "its SHA-256 differs from the recorded one"
    return None


_CHECK = "import sys, tensorflow as tf; tf.load_op_library(sys.argv[1])"
# Loads a plain C library and looks up the entry points named after it.
_NATIVE_CHECK = ("import ctypes, sys; library = ctypes.CDLL(sys.argv[1]); "
                 "[getattr(library, name) for name in sys.argv[2:]]")


def _entry_points(sources):
    """The layout-version entries (`int kg_..._version()`) the C sources
    define: a library is kept only when it has them all (one built from
    other sources, e.g. older ones, lacks some)."""
    import re

    names = []
    for source in sources:
        with open(source, encoding="utf-8") as f:
            names += re.findall(r"\bint (kg_\w+_version)\(\)", f.read())
    return names


def _load_in_child(path, check=_CHECK, symbols=()):
    """Loads the library in a child process (and looks up `symbols`, with
    `_NATIVE_CHECK`); raises `RuntimeError` if it fails (a crash there, e.g.
    SIGBUS, does not take this process down)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", check, path, *symbols],
                            capture_output=True, text=True, env=env, timeout=600)
    if result.returncode != 0:
        how = (f"signal {-result.returncode}" if result.returncode < 0
               else f"exit {result.returncode}")
        raise RuntimeError(f"the compiled op does not load ({how}): "
                           + _last_line(result.stderr))


def _last_line(text, prefer=None):
    """The line of a child's output that says why (one line, at most 300
    characters): the first holding `prefer`, else the last (a traceback's
    exception), not the whole output."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "no message"
    chosen = next((line for line in lines if prefer and prefer in line), lines[-1])
    return chosen[:300]


def _write_record(path):
    record = {"size": os.path.getsize(path), "sha256": file_digest(path)}
    fd, tmp = tempfile.mkstemp(suffix=".json.tmp", dir=os.path.dirname(path))
    with os.fdopen(fd, "w") as f:
        json.dump(record, f)
    os.replace(tmp, _record_path(path))


@contextlib.contextmanager
def _directory_lock(directory, block=True):
    """Serialises builds into `directory` across processes (flock); yields
    whether the lock is held (always, when `block`)."""
    fd = os.open(os.path.join(directory, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
        else:
            yield True
    finally:
        os.close(fd)


def _leftovers(directory):
    return [name for name in os.listdir(directory) if name.endswith((".so.tmp", ".json.tmp"))]


def _remove_leftovers(directory):
    """Deletes what killed builds left (call with the lock held)."""
    for name in _leftovers(directory):
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(directory, name))


def _say(message, end="\n"):
    sys.stderr.write(message + end)
    sys.stderr.flush()


def build(path=None):
    """Compiles the library to `path` (atomically) unless a verified one is there.

    A cached library is checked against its record (size and SHA-256) and
    rebuilt when it differs or has none; a new one is loaded once in a child
    process before it is recorded. Builds hold a lock on the cache directory,
    and leftovers of killed compiles (`*.so.tmp`) are removed. Compiling
    prints one line on stderr: what, where, and how long it took.

    Args:
        path: target path (default `library_path()`).

    Returns:
        The path of the library.

    Raises:
        RuntimeError: when the compiler is missing or fails, or the new
            library does not load.
    """
    return _build(path or library_path(), compile_command, _CHECK, "the layers' C++ kernels")


def build_native(path=None):
    """`build` (the same arguments, result and errors) for the native
    library (`NATIVE_SOURCES`, no TensorFlow headers) at `path` (default
    `native_library_path()`)."""
    return _build(path or native_library_path(), native_compile_command, _NATIVE_CHECK,
                  "the native trainers", NATIVE_SOURCES)


def build_jax(path=None):
    """`build` (the same arguments, result and errors) for the JAX
    backend's kernels (`jax_ops.cc`: XLA FFI handlers, compiled against
    `jax.ffi.include_dir()`, no TensorFlow headers) at `path` (default
    `jax_library_path()`)."""
    return _build(path or jax_library_path(), jax_compile_command, _NATIVE_CHECK,
                  "the JAX kernels", JAX_SOURCES)


def _trusted_place(path, what):
    """`path`, or the same name in a private temporary directory (one line
    says why) when the cache directory is not private; `RuntimeError` when
    no private directory can be had."""
    directory = os.path.dirname(path)
    try:
        _make_private(directory)
    except OSError as error:  # a read-only home, a file in the way
        problem, kind = error.strerror or str(error), "cannot be made"
    else:
        problem = untrusted(directory)
        kind = "is not private"
        if problem is None and not os.access(directory, os.W_OK | os.X_OK) and not (
                os.path.exists(path) and _damage(path) is None):
            problem, kind = "it is read-only", "cannot be written"
        if problem is None:
            return path
    try:
        private = _private_dir()
    except OSError as error:
        raise RuntimeError(f"the op cache {directory} {kind} ({problem}), and no temporary "
                           f"directory can be made ({error.strerror or error})") from None
    refused = untrusted(private, root=private)
    if refused:
        raise RuntimeError(f"the op cache {directory} {kind} ({problem}), and "
                           f"neither is a temporary directory ({refused})")
    if not _private.get("said"):  # one line a process: every library goes there
        _private["said"] = True
        _say(f"keras-gauss: the op cache {directory} {kind} ({problem}); building "
             f"{what} in {private} for this process instead (set KERAS_GAUSS_CACHE to a "
             "directory only you can write).")
    return os.path.join(private, os.path.basename(path))


def _build(path, command_for, check, what, sources=None):
    symbols = _entry_points(SOURCES if sources is None else sources)
    path = _trusted_place(path, what)
    directory = os.path.dirname(path)
    if os.path.exists(path) and _damage(path) is None:
        if _leftovers(directory):
            with _directory_lock(directory, block=False) as locked:
                if locked:
                    _remove_leftovers(directory)
        return path  # the common case: one hash of the file
    with _directory_lock(directory):
        _remove_leftovers(directory)
        if os.path.exists(path):
            damage = _damage(path)
            if damage is None:
                return path  # another process built it meanwhile
            if damage == "no record of a verified build":
                try:  # a library from before records (in a private cache): keep it if it loads
                    _load_in_child(path, check, symbols)
                    _write_record(path)
                    return path
                except (RuntimeError, subprocess.TimeoutExpired):
                    damage = "it does not load"
            _say(f"keras-gauss: the cached {what[4:]} {path} is damaged ({damage}); "
                 "rebuilding it.")
            for stale in (path, _record_path(path)):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(stale)
        if _failed:  # the same compiler failed on another library: said once already
            raise _NotCompiledAgain(f"{NOT_COMPILED_AGAIN}: {_failed[0]} failed to build in "
                                    "this process (the same compiler)")
        fd, tmp = tempfile.mkstemp(suffix=".so.tmp", dir=directory)
        os.close(fd)
        try:
            command = command_for(SOURCES if sources is None else sources, tmp)
            if shutil.which(command[0]) is None:
                _failed.append(what)
                raise RuntimeError(f"C++ compiler {command[0]!r} not found")
            _say(f"keras-gauss: compiling {what} with {command[0]} into "
                 f"{directory} (once per source, "
                 f"{'TensorFlow, ' if command_for is compile_command else ''}compiler and "
                 "CPU) ...", end="")
            start = time.perf_counter()
            result = subprocess.run(command, capture_output=True, text=True)
            seconds = time.perf_counter() - start
            if result.returncode != 0:
                _say(f" failed after {seconds:.1f} s")
                _failed.append(what)
                raise RuntimeError(f"compiling {what} with {command[0]} failed (exit "
                                   f"{result.returncode}): "
                                   + _last_line(result.stderr, prefer="error"))
            os.chmod(tmp, 0o700)  # the linker wrote it with the umask's mode
            try:
                _load_in_child(tmp, check, symbols)
            except (RuntimeError, subprocess.TimeoutExpired):
                _say(f" built in {seconds:.1f} s, but it does not load")
                _failed.append(what)
                raise
            _say(f" done in {seconds:.1f} s")
            os.replace(tmp, path)
            _write_record(path)
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
    def open_op(path):
        import tensorflow as tf

        return tf.load_op_library(path)

    def warn(reason):
        logger.warning(
            "keras_gauss: the compiled C++ ops are unavailable (%s); the layers' "
            "kernels use their keras.ops code instead.",
            reason,
        )

    return _load_once(_state, build, open_op, on_failure=warn)


def load_native():
    """Builds (once per process, cached on disk) and loads the native trainer.

    Returns:
        The `ctypes.CDLL`, or None if it cannot be built or loaded (the
        reason is in `native_error()`; nothing is logged: callers say it).
    """
    import ctypes

    return _load_once(_native_state, build_native, ctypes.CDLL)


def native_available():
    """Whether the native library builds and loads here (compiles it once)."""
    return load_native() is not None


def native_functions(group, signatures, version=None):
    """The native library, its functions of `group` declared (once a process).

    Args:
        group: a name for the set of functions (`"kg_pairs"`).
        signatures: `{function name: (argtypes, restype)}`.
        version: the layout version `<group>_version()` must return (None:
            no check).

    Returns:
        The `ctypes.CDLL`.

    Raises:
        RuntimeError: the library cannot be built or loaded (naming why),
            or its layout version differs.
    """
    library = load_native()
    if library is None:
        raise RuntimeError(f"the native library is unavailable ({native_error()})")
    ready = library.__dict__.setdefault("_kg_groups", set())
    if group not in ready:
        for name, (arguments, result) in signatures.items():
            function = getattr(library, name)
            function.argtypes, function.restype = arguments, result
        if version is not None and getattr(library, f"{group}_version")() != version:
            raise RuntimeError(f"the native library's {group} layout version is not {version}")
        ready.add(group)
    return library


def load_jax():
    """Builds (once per process, cached on disk) and loads the JAX kernels.

    Returns:
        The `ctypes.CDLL`, or None if it cannot be built or loaded (the
        reason is in `jax_error()`; `keras_gauss.kernels` says it once).
    """
    import ctypes

    return _load_once(_jax_state, build_jax, ctypes.CDLL)


def _load_once(state, build_library, open_library, on_failure=None):
    """Builds and opens a library once per process; `state` keeps the module
    (None on failure) and the reason it failed, and `on_failure(reason)` is
    called by the one call that tried (not when disabled by the environment)."""
    with _lock:
        if state["tried"]:
            return state["module"]
        state["tried"] = True
        if os.environ.get("KERAS_GAUSS_DISABLE_FUSED", "0") not in ("", "0"):
            state["error"] = "disabled by KERAS_GAUSS_DISABLE_FUSED"
            return None
        try:
            state["module"] = open_library(build_library())
        except Exception as error:  # noqa: BLE001 - any failure means fallback
            state["error"] = f"{type(error).__name__}: {error}"
            if on_failure is not None and not isinstance(error, _NotCompiledAgain):
                on_failure(state["error"])
        return state["module"]


def error():
    """Why the library is unavailable (a string), or None."""
    return _state["error"]


def native_error():
    """Why the native trainer is unavailable (a string), or None."""
    return _native_state["error"]


def jax_error():
    """Why the JAX kernels are unavailable (a string), or None."""
    return _jax_state["error"]


def _reset():
    """Forgets the load attempts (for tests)."""
    with _lock:
        for state in (_state, _native_state, _jax_state):
            state.update(tried=False, module=None, error=None)
        _failed.clear()
