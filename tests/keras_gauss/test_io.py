import pytest

from keras_gauss.io import OutputExistsError, atomic_directory, check_output_dir


def test_directory_appears_only_on_success(tmp_path):
    target = tmp_path / "run"
    with pytest.raises(RuntimeError):
        with atomic_directory(target) as tmp:
            (tmp / "model.keras").write_text("half")
            raise RuntimeError("crash while saving")
    assert list(tmp_path.iterdir()) == []
    with atomic_directory(target) as tmp:
        (tmp / "model.keras").write_text("whole")
    assert (target / "model.keras").read_text() == "whole"
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_existing_directory_needs_overwrite(tmp_path):
    target = tmp_path / "run"
    target.mkdir()
    (target / "run.json").write_text("{}")
    with pytest.raises(OutputExistsError, match="--overwrite"):
        with atomic_directory(target):
            pass
    with atomic_directory(target, overwrite=True) as tmp:
        (tmp / "new.txt").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_a_file_is_not_an_output_directory(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(OutputExistsError, match="not a directory"):
        check_output_dir(path, overwrite=True)


def test_empty_directory_is_accepted(tmp_path):
    (tmp_path / "empty").mkdir()
    assert check_output_dir(tmp_path / "empty") == tmp_path / "empty"


# --- writes that cannot destroy (issue 12) -----------------------------------

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from keras_gauss.io import OutputNotWritableError, atomic_file


def _run(tmp_path, value, overwrite=True):
    with atomic_directory(tmp_path / "run", overwrite=overwrite) as tmp:
        (tmp / "run.json").write_text(json.dumps({"value": value}))
        (tmp / "model.keras").write_text(str(value))


def test_overwrite_refuses_a_directory_that_is_not_a_run(tmp_path):
    runs = tmp_path / "run"
    (runs / "other-run").mkdir(parents=True)
    (runs / "notes.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match=r"not a keras-gauss run.*notes\.txt"):
        _run(tmp_path, 1, overwrite=True)
    assert sorted(p.name for p in runs.iterdir()) == ["notes.txt", "other-run"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_overwrite_replaces_a_run_of_ours_or_an_export(tmp_path):
    _run(tmp_path, 1)
    _run(tmp_path, 2)
    assert json.loads((tmp_path / "run" / "run.json").read_text()) == {"value": 2}
    export = tmp_path / "serve" / "1"
    (export / "assets.extra").mkdir(parents=True)
    (export / "assets.extra" / "keras_gauss_export.json").write_text("{}")
    with atomic_directory(export, overwrite=True) as tmp:
        (tmp / "saved_model.pb").write_text("x")
    assert [p.name for p in export.iterdir()] == ["saved_model.pb"]


def test_working_directory_is_never_an_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputExistsError, match="working directory"):
        check_output_dir(".", overwrite=True)
    with pytest.raises(OutputExistsError, match="working directory"):
        check_output_dir("..", overwrite=True)


def test_unwritable_output_is_refused_before_any_work():
    with pytest.raises(OutputNotWritableError, match="cannot write"):
        check_output_dir("/proc/keras-gauss-test/run")
    with pytest.raises(OutputNotWritableError, match="MiB free"):
        check_output_dir("/tmp/keras-gauss-test-space", need_bytes=1 << 62)


def test_output_under_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputNotWritableError, match="not a directory"):
        check_output_dir(tmp_path / "file" / "run")


WRITER = textwrap.dedent("""
    import json, os, signal, sys, time
    from pathlib import Path
    from keras_gauss import io
    target, mode = Path(sys.argv[1]), sys.argv[2]
    if mode == "between-renames":
        real, calls = os.replace, []
        def replace(src, dst):
            calls.append(src)
            real(src, dst)
            if len(calls) == 1:  # the old run is aside, the new one not yet in place
                os.kill(os.getpid(), signal.SIGKILL)
        io.os.replace = replace
    if mode == "file":
        with io.atomic_file(target, overwrite=True) as f:
            f.write("half"); f.flush(); print("writing", flush=True); time.sleep(60)
    with io.atomic_directory(target, overwrite=True) as tmp:
        (tmp / "run.json").write_text(json.dumps({"value": "new"}))
        if mode == "saving":
            print("writing", flush=True)
            time.sleep(60)
""")


def _writer(tmp_path, target, mode):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    return subprocess.Popen([sys.executable, str(script), str(target), mode],
                            stdout=subprocess.PIPE, text=True)


@pytest.mark.parametrize("mode", ["saving", "file"])
def test_leftovers_of_a_killed_writer_are_removed_at_the_next_write(tmp_path, mode):
    target = tmp_path / "out" / ("run" if mode == "saving" else "means.txt")
    if mode == "saving":
        _run(tmp_path / "out", "old")
    process = _writer(tmp_path, target, mode)
    assert process.stdout.readline() == "writing\n"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    leftovers = [p.name for p in target.parent.iterdir() if ".tmp-" in p.name]
    assert len(leftovers) == 1
    if mode == "saving":
        assert json.loads((target / "run.json").read_text()) == {"value": "old"}
        _run(tmp_path / "out", "next")
    else:
        with atomic_file(target, overwrite=True) as f:
            f.write("whole")
        assert target.read_text() == "whole"
    assert [p.name for p in target.parent.iterdir()] == [target.name]


def test_a_live_writers_temporary_directory_is_left_alone(tmp_path):
    target = tmp_path / "out" / "run"
    process = _writer(tmp_path, target, "saving")
    try:
        assert process.stdout.readline() == "writing\n"
        _run(tmp_path / "out", "other")  # recovers, must not touch the live one
        assert any(".tmp-" in p.name for p in target.parent.iterdir())
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()


def test_kill_between_the_renames_of_a_replace_restores_the_old_run(tmp_path):
    target = tmp_path / "out" / "run"
    _run(tmp_path / "out", "old")
    process = _writer(tmp_path, target, "between-renames")
    assert process.wait() == -signal.SIGKILL
    assert not target.exists()  # the old run is aside in .run.old-*
    check_output_dir(target, overwrite=True)  # the next start restores it
    assert json.loads((target / "run.json").read_text()) == {"value": "old"}
    assert [p.name for p in target.parent.iterdir()] == ["run"]


CONCURRENT = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    from keras_gauss.io import atomic_directory
    target = Path(sys.argv[1])
    for i in range(int(sys.argv[2])):
        with atomic_directory(target, overwrite=True) as tmp:
            for name in ("a", "b", "run.json"):
                (tmp / name).write_text(json.dumps([os.getpid(), i]))
""")


def test_concurrent_overwrites_neither_fail_nor_leave_strays(tmp_path):
    script = tmp_path / "concurrent.py"
    script.write_text(CONCURRENT)
    target = tmp_path / "out" / "run"
    processes = [subprocess.Popen([sys.executable, str(script), str(target), "25"],
                                  stderr=subprocess.PIPE, text=True) for _ in range(8)]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    assert [p.name for p in target.parent.iterdir()] == ["run"]
    contents = {(target / name).read_text() for name in ("a", "b", "run.json")}
    assert len(contents) == 1  # one writer's whole run, never a mix
