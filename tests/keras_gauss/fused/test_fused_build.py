"""The op cache heals: verified before loading, rebuilt when damaged, no
leftovers from killed compiles (a tiny library stands in for the op). The
three libraries (the TensorFlow op, the native trainers, the JAX kernels)
share one `_build`: the healing is tested through the native build, whose
check loads the library with ctypes (no TensorFlow in the child); one test
builds and verifies through TensorFlow."""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from keras_gauss.fused import build as fused_build

TINY = 'extern "C" int keras_gauss_build_test() { return 7; }\n'


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """The tiny library as the op (`build`) and as the native trainers
    (`build_native`), in a fresh cache."""
    source = tmp_path / "tiny.cc"
    source.write_text(TINY)
    monkeypatch.setenv("KERAS_GAUSS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fused_build, "SOURCES", (str(source),))
    monkeypatch.setattr(fused_build, "HEADERS", ())
    monkeypatch.setattr(fused_build, "NATIVE_SOURCES", (str(source),))
    monkeypatch.setattr(fused_build, "NATIVE_HEADERS", ())
    monkeypatch.setattr(fused_build, "_failed", [])  # this test's failures stay its own
    return source


def _record(path):
    with open(path + ".json") as f:
        return json.load(f)


def test_build_verifies_records_and_reuses(tiny, capsys):
    """The TensorFlow op's build: loaded by `tf.load_op_library` in a child."""
    path = fused_build.build()
    err = capsys.readouterr().err
    assert "compiling the layers' C++ kernels" in err and "done in" in err
    assert err.count("\n") == 1
    assert _record(path)["size"] == os.path.getsize(path)
    assert fused_build.build() == path
    assert capsys.readouterr().err == ""  # verified by its record: no compile


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_library_is_rebuilt(tiny, capsys, damage):
    path = fused_build.build_native()
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        if damage == "truncated":
            f.truncate(size // 2)
        else:
            f.write(os.urandom(size))
    capsys.readouterr()
    assert fused_build.build_native() == path
    err = capsys.readouterr().err
    assert "is damaged" in err and "rebuilding" in err and "done in" in err
    assert os.path.getsize(path) == size == _record(path)["size"]


LOADER = textwrap.dedent("""
    import sys
    from keras_gauss.fused import build
    build.NATIVE_SOURCES, build.NATIVE_HEADERS = (sys.argv[1],), ()
    path = build.native_library_path()
    with open(path, "r+b") as f:
        f.truncate(4096)  # loading this in-process dies of SIGBUS
    assert build.load_native() is not None, build.native_error()
    print("loaded")
""")


def test_truncated_library_never_crashes_the_process(tiny, tmp_path):
    fused_build.build_native()
    script = tmp_path / "loader.py"
    script.write_text(LOADER)
    result = subprocess.run([sys.executable, str(script), str(tiny)], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "loaded" in result.stdout and "damaged" in result.stderr


def test_killed_compile_leaves_nothing_behind(tiny, tmp_path, monkeypatch):
    gate = tmp_path / "slow"
    gate.touch()
    cxx = tmp_path / "cxx"
    cxx.write_text(f'#!/bin/sh\n[ -e {gate} ] && sleep 60\nexec g++ "$@"\n')
    cxx.chmod(0o755)
    monkeypatch.setenv("CXX", str(cxx))
    code = ("import sys; from keras_gauss.fused import build; "
            "build.NATIVE_SOURCES, build.NATIVE_HEADERS = (sys.argv[1],), (); "
            "build.build_native()")
    process = subprocess.Popen([sys.executable, "-c", code, str(tiny)],
                               stderr=subprocess.DEVNULL, start_new_session=True)
    directory = os.path.dirname(fused_build.native_library_path())
    deadline = time.monotonic() + 120
    while not (os.path.isdir(directory)
               and [n for n in os.listdir(directory) if n.endswith(".so.tmp")]):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)  # the build and its compiler
    process.wait()
    gate.unlink()
    path = fused_build.build_native()
    assert not [n for n in os.listdir(directory) if n.endswith(".tmp")]
    assert _record(path)["size"] == os.path.getsize(path)


def test_native_library_is_cached_verified_and_rebuilt(tmp_path, monkeypatch, capsys):
    source = tmp_path / "native.cc"
    source.write_text(TINY)
    monkeypatch.setenv("KERAS_GAUSS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fused_build, "NATIVE_SOURCES", (str(source),))
    monkeypatch.setattr(fused_build, "NATIVE_HEADERS", ())
    path = fused_build.build_native()
    err = capsys.readouterr().err
    assert "compiling the native trainers" in err and "done in" in err
    assert "TensorFlow" not in err and err.count("\n") == 1
    assert path != fused_build.library_path()
    assert fused_build.build_native() == path and capsys.readouterr().err == ""
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    assert fused_build.build_native() == path
    err = capsys.readouterr().err
    assert "is damaged" in err and "rebuilding" in err and "done in" in err
    assert os.path.getsize(path) == _record(path)["size"]


# --- trust: a cache others can write is never loaded (issue 23, item 3) ----------------

PLANTED = TINY + textwrap.dedent("""
    #include <cstdio>
    #include <cstdlib>
    __attribute__((constructor)) static void planted() {
      const char* mark = std::getenv("KERAS_GAUSS_PLANTED_MARK");
      if (mark) { std::FILE* f = std::fopen(mark, "w"); if (f) std::fclose(f); }
    }
""")


@pytest.fixture
def native(tmp_path, monkeypatch):
    """The native build of a tiny library into a fresh cache; a planted
    library writes `tmp_path / "mark"` when anything loads it."""
    source = tmp_path / "native.cc"
    source.write_text(TINY)
    monkeypatch.setenv("KERAS_GAUSS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KERAS_GAUSS_PLANTED_MARK", str(tmp_path / "mark"))
    monkeypatch.setattr(fused_build, "NATIVE_SOURCES", (str(source),))
    monkeypatch.setattr(fused_build, "NATIVE_HEADERS", ())
    monkeypatch.setattr(fused_build, "_private", {}, raising=False)
    monkeypatch.setattr(fused_build, "_failed", [])  # this test's failures stay its own
    return tmp_path


def _plant(path, tmp_path):
    """Replaces the library at `path` by one with a constructor, and its record
    by a matching one (size and SHA-256): what anyone who can write there can do."""
    source = tmp_path / "planted.cc"
    source.write_text(PLANTED)
    subprocess.run(["g++", "-shared", "-fPIC", str(source), "-o", str(tmp_path / "p.so")],
                   check=True)
    data = (tmp_path / "p.so").read_bytes()
    with open(path, "wb") as f:
        f.write(data)
    with open(path + ".json", "w") as f:
        json.dump({"size": len(data), "sha256": fused_build.hashlib.sha256(data).hexdigest()}, f)


def _load(path):
    import ctypes

    assert ctypes.CDLL(path).keras_gauss_build_test() == 7


@pytest.mark.parametrize("opened", ["key directory", "cache root"])
def test_a_library_planted_in_a_cache_others_can_write_is_never_loaded(native, capsys,
                                                                       opened):
    path = fused_build.build_native()
    assert os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700  # made private
    assert os.stat(path).st_mode & 0o077 == 0
    os.chmod(os.path.dirname(path) if opened == "key directory" else native / "cache", 0o777)
    _plant(path, native)
    capsys.readouterr()
    built = fused_build.build_native()
    err = capsys.readouterr().err
    assert built != path and not built.startswith(str(native / "cache"))
    assert "is not private" in err and "is writable by others" in err
    assert "set KERAS_GAUSS_CACHE to a directory only you can write" in err
    _load(built)
    assert not (native / "mark").exists()  # the planted constructor never ran
    assert fused_build.load_native is not None


def test_a_library_file_others_can_write_is_rebuilt_not_loaded(native, capsys):
    path = fused_build.build_native()
    _plant(path, native)
    os.chmod(path, 0o666)  # anyone could have written it (the record says nothing)
    capsys.readouterr()
    assert fused_build.build_native() == path
    err = capsys.readouterr().err
    assert "is damaged (it is not private: " in err and "writable by others" in err
    assert os.stat(path).st_mode & 0o077 == 0
    _load(path)
    assert not (native / "mark").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory away")
def test_a_cache_of_another_user_is_never_loaded(native, capsys):
    path = fused_build.build_native()
    _plant(path, native)
    os.chown(os.path.dirname(path), 65534, 65534)
    capsys.readouterr()
    built = fused_build.build_native()
    assert built != path and "belongs to uid 65534, not to this user" in capsys.readouterr().err
    _load(built)
    assert not (native / "mark").exists()


def test_without_a_private_place_the_op_is_refused_in_one_line(native, monkeypatch):
    path = fused_build.native_library_path()
    os.makedirs(os.path.dirname(path))
    os.chmod(native / "cache", 0o777)
    shared = native / "shared_tmp"
    shared.mkdir()
    shared.chmod(0o777)  # writable by all, not sticky: no private place under it
    monkeypatch.setattr(fused_build.tempfile, "tempdir", str(shared))
    with pytest.raises(RuntimeError, match=r"the op cache .* is not private \(.*writable by "
                                           r"others\), and neither is a temporary directory"):
        fused_build.build_native()


def test_a_cache_that_cannot_be_made_builds_in_a_private_directory(native, monkeypatch,
                                                                   capsys):
    # A read-only home (here: a file where the cache's directory goes).
    (native / "home").write_text("a file, not a directory")
    monkeypatch.setenv("KERAS_GAUSS_CACHE", str(native / "home" / "cache"))
    built = fused_build.build_native()
    _load(built)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("keras-gauss: the op cache ") and (
        "cannot be made (Not a directory); building the native trainers in " in lines[0])
    assert lines[1].startswith("keras-gauss: compiling") and len(lines) == 2
    assert fused_build.build_native() == built  # said once a process
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("compiler, reason", [
    ('echo "x.cc:1:1: error: no such type" >&2; echo "1 error generated." >&2; exit 1',
     r"compiling the native trainers with \S+cxx failed \(exit 1\): x.cc:1:1: error: no such "
     r"type$"),
    ('while [ $# -gt 0 ]; do [ "$1" = -o ] && echo garbage > "$2"; shift; done',
     r"the compiled op does not load \(exit 1\): OSError: \S+: file too short$")])
def test_a_library_that_cannot_be_built_says_why_in_one_line(native, monkeypatch, capsys,
                                                             compiler, reason):
    cxx = native / "cxx"
    cxx.write_text(f"#!/bin/sh\n{compiler}\n")
    cxx.chmod(0o755)
    monkeypatch.setenv("CXX", str(cxx))
    with pytest.raises(RuntimeError) as info:
        fused_build.build_native()
    assert "\n" not in str(info.value) and re.search(reason, str(info.value)), info.value
    err = capsys.readouterr().err  # the compile's line, ended
    assert re.fullmatch(r"keras-gauss: compiling the native trainers .* \.\.\. (failed after "
                        r"[\d.]+ s|built in [\d.]+ s, but it does not load)\n", err), err


def test_one_line_a_cause_whichever_libraries_it_stops(native, monkeypatch, capsys, caplog):
    # The native trainer's fallback said why (no compiler): the layers' ops,
    # built by the same compiler, are not compiled again and say nothing.
    import logging

    from keras_gauss.fused.native import native_unavailable
    from keras_gauss.job import choose_engine

    monkeypatch.setenv("CXX", str(native / "no-such-compiler"))
    fused_build._reset()
    try:
        with pytest.warns(RuntimeWarning, match="'.*no-such-compiler' not found"):
            assert choose_engine("native", [("native", list, native_unavailable),
                                            ("keras", dict, None)]) == [{}]
        monkeypatch.setattr(fused_build, "SOURCES", (str(native / "native.cc"),))
        monkeypatch.setattr(fused_build, "HEADERS", ())
        monkeypatch.setattr(fused_build, "library_path",
                            lambda: str(native / "cache" / "ops" / "tf" / "ops.so"))
        with caplog.at_level(logging.WARNING, logger="keras_gauss"):
            assert fused_build.load() is None
        assert not caplog.records and "compiling" not in capsys.readouterr().err
        assert "not compiled again: the native trainers failed to build" in fused_build.error()
    finally:
        fused_build._reset()


def test_a_record_less_library_without_the_entry_points_is_rebuilt(native, monkeypatch,
                                                                   capsys):
    # A library from other (older) sources at the cache's place, without a
    # record: it loads, but lacks an entry of these sources; kept, it would
    # fail at its first use (an AttributeError) instead of being rebuilt.
    import ctypes

    source = native / "versioned.cc"
    source.write_text(TINY + 'extern "C" int kg_tiny_version() { return 1; }\n')
    monkeypatch.setattr(fused_build, "NATIVE_SOURCES", (str(source),))
    path = fused_build.native_library_path()
    os.makedirs(os.path.dirname(path), mode=0o700)
    subprocess.run(["g++", "-shared", "-fPIC", str(native / "native.cc"), "-o", path],
                   check=True)
    os.chmod(path, 0o700)
    capsys.readouterr()
    assert fused_build.build_native() == path
    err = capsys.readouterr().err
    assert "is damaged (it does not load); rebuilding it." in err, err
    assert ctypes.CDLL(path).kg_tiny_version() == 1


@pytest.mark.parametrize("cpu_has_it, compiler_has_it, expected", [
    (True, True, True), (True, False, False), (False, True, False)])
def test_avx512_fp16_is_turned_off_for_tensorflows_eigen(monkeypatch, cpu_has_it,
                                                         compiler_has_it, expected):
    """TensorFlow 2.21's Eigen headers do not compile under GCC 12 with the
    AVX512-FP16 that `-march=native` turns on on Sapphire Rapids: the op
    library's command turns it off after `-march=native`, only there."""
    flags = "flags\t\t: fpu avx2 avx512f" + (" avx512_fp16" if cpu_has_it else "")
    monkeypatch.setattr(fused_build, "_cpu_fingerprint", lambda: flags)
    monkeypatch.setattr(fused_build, "_native_defines",
                        lambda cxx, macro: compiler_has_it and macro == "__AVX512FP16__")
    monkeypatch.delenv("KERAS_GAUSS_FUSED_NATIVE", raising=False)
    monkeypatch.setattr(fused_build.platform, "machine", lambda: "x86_64")
    command = fused_build.compile_command(["a.cc"], "a.so")
    assert ("-mno-avx512fp16" in command) == expected
    if expected:
        assert command.index("-mno-avx512fp16") > command.index("-march=native")
    assert "-mno-avx512fp16" not in fused_build.jax_compile_command(["a.cc"], "a.so")
    assert "-mno-avx512fp16" not in fused_build.native_compile_command(["a.cc"], "a.so")


def test_the_compilers_native_defines_are_read():
    """`_native_defines` asks the compiler itself: GCC and clang predefine
    `__x86_64__` (or `__aarch64__`) on their native target."""
    assert fused_build._native_defines("g++", "__x86_64__") or fused_build._native_defines(
        "g++", "__aarch64__")
    assert not fused_build._native_defines("no-such-compiler-xyz", "__x86_64__")
