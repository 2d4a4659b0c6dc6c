import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from keras_gauss.io import PROJECTOR, RUN, SERVING, WORD2VEC
from keras_gauss.io import OutputBusyError, OutputClaim, OutputExistsError, OutputNotWritableError
from keras_gauss.io import _parent_lock, atomic_directory, atomic_file, check_output_dir
from keras_gauss.io import check_output_file, output_content, recover
from cli_errors import cli_error


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
    with atomic_directory(target) as tmp:
        (tmp / "old.txt").write_text("old")
    with pytest.raises(OutputExistsError, match="--overwrite"):
        with atomic_directory(target):
            pass
    with atomic_directory(target, overwrite=True) as tmp:
        (tmp / "new.txt").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == [".keras-gauss", "new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]
def test_a_file_is_not_an_output_directory(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(OutputExistsError, match="not a directory"):
        check_output_dir(path, overwrite=True)


def test_empty_directory_is_accepted(tmp_path):
    (tmp_path / "empty").mkdir()
    assert check_output_dir(tmp_path / "empty") == tmp_path / "empty"


# --- writes that cannot destroy --------------------------------------------


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
    for value in ("old", "new"):
        with atomic_directory(export, overwrite=True, content=SERVING) as tmp:
            (tmp / "saved_model.pb").write_text(value)
    assert sorted(p.name for p in export.iterdir()) == [".keras-gauss", "saved_model.pb"]
    assert (export / "saved_model.pb").read_text() == "new"


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


def test_output_under_a_symbolic_link_to_no_directory_is_one_line(tmp_path, capsys):
    """A broken link (an unmounted disk's), a loop: it was a FileExistsError traceback
    from the directories made for the lock."""
    (tmp_path / "broken").symlink_to(tmp_path / "unmounted")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for link in ("broken", "loop"):
        for fmt, out in (("word2vec", "v.txt"), ("projector", "p"), ("serving", "s")):
            err = cli_error(["export", tmp_path / "no-run", "--format", fmt,
                             "--out", tmp_path / link / out], capsys)
            assert f"{tmp_path / link} is a symbolic link that leads to no directory" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "loop"]


def test_a_symbolic_link_as_the_output_is_refused_never_replaced(tmp_path):
    # before: `--out LINK` (a link to an empty directory, or to a run with
    # --overwrite) deleted the link and wrote the run in its place, beside
    # the directory it named
    (tmp_path / "empty").mkdir()
    with atomic_directory(tmp_path / "old-run") as tmp:
        (tmp / "run.json").write_text("{}")
    (tmp_path / "to-empty").symlink_to("empty")
    (tmp_path / "to-run").symlink_to("old-run")
    for link, overwrite in (("to-empty", False), ("to-run", True)):
        with pytest.raises(OutputExistsError, match=f"{link} is a symbolic link .* give the "
                                                    f"directory itself, {tmp_path}/"):
            with atomic_directory(tmp_path / link, overwrite=overwrite) as tmp:
                (tmp / "run.json").write_text("{}")
        assert (tmp_path / link).is_symlink()
    assert sorted(p.name for p in (tmp_path / "old-run").iterdir()) == [".keras-gauss",
                                                                       "run.json"]
    assert list((tmp_path / "empty").iterdir()) == []


WRITER = textwrap.dedent("""
    import json, os, signal, sys, time
    from pathlib import Path
    from keras_gauss import io
    target, mode = Path(sys.argv[1]), sys.argv[2]
    if mode == "between-renames":
        real = os.replace
        def replace(src, dst):
            real(src, dst)
            if Path(src) == target:  # the old run is aside, the new one not yet in place
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
        with pytest.raises(OutputBusyError, match=f"another keras-gauss process \\(process "
                                                  f"{process.pid}\\)"):
            check_output_dir(target, overwrite=True)  # a second writer waits for none
        with _parent_lock(target.parent):
            recover(target)  # must not touch the live writer's directory
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


# --- ownership, locks, write errors ------------------------------------------


def _files(directory, files):
    for name, text in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)


LEGACY_RUN = {"model.keras": "zip", "vocab.tsv": "cat\t3\n", "metrics.json": "{}",
              "run.json": json.dumps({"kind": "corpus", "energy": "el", "table": "words",
                                      "vocabulary": "vocab.tsv", "format": 1})}


@pytest.mark.parametrize("files,content", [
    ({"run.json": "{}", "config.json": "{}", "results.csv": "a,b\n"}, RUN),  # Sacred's
    ({"run.json": LEGACY_RUN["run.json"], "config.json": "{}"}, RUN),
    ({**LEGACY_RUN, "thesis.tex": "mine"}, RUN),
    ({"projector_config.pbtxt": "embeddings {}", "thesis.pdf": "mine"}, PROJECTOR),
    ({"assets.extra/keras_gauss_export.json": "{}", "notes.txt": "mine"}, SERVING),
    ({".keras-gauss": '{"format": "other", "version": 1, "content": "run"}'}, RUN),
    ({".keras-gauss": '{"format": "keras-gauss", "version": 99, "content": "run"}'}, RUN),
    ({".checkpoint/state.npz": "not ours", "notes.txt": "mine"}, RUN),
])
def test_ownership_is_a_marker_of_ours_never_a_file_name(tmp_path, files, content):
    out = tmp_path / "out"
    _files(out, files)
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    with pytest.raises(OutputExistsError, match=f"not a keras-gauss {content}.*never replaced"):
        with atomic_directory(out, overwrite=True, content=content):
            pass
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_marker_that_is_no_file_is_not_ours_and_never_read(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / ".keras-gauss")  # opening it would hang
    (out / "notes.txt").write_text("mine")
    assert output_content(out) is None
    with pytest.raises(OutputExistsError, match="not a keras-gauss run"):
        check_output_dir(out, overwrite=True)


def test_outputs_written_before_the_marker_are_recognised_by_their_whole_file_set(tmp_path):
    run = tmp_path / "run"
    _files(run, {**LEGACY_RUN, "eval.json": "{}", "split/train.tsv": "a\tb\n"})
    assert output_content(run) == RUN
    with atomic_directory(run, overwrite=True) as tmp:
        (tmp / "new").write_text("")
    projector = tmp_path / "projector"
    _files(projector, {"vectors.tsv": "1\n", "metadata.tsv": "word\tcount\tlog_det_variance\n",
                       "projector_config.pbtxt": 'embeddings {\n  tensor_name: "means"\n  '
                       'tensor_path: "vectors.tsv"\n  metadata_path: "metadata.tsv"\n}\n'})
    assert output_content(projector) == PROJECTOR
    serving = tmp_path / "serve" / "1"
    _files(serving, {"saved_model.pb": "pb", "variables/variables.index": "",
                     "assets.extra/keras_gauss_export.json": json.dumps(
                         {"format": 1, "signatures": ["energy"]})})
    assert output_content(serving) == SERVING


def test_an_output_of_one_kind_never_replaces_another(tmp_path):
    _run(tmp_path, "mine")
    with pytest.raises(OutputExistsError, match="holds a keras-gauss run, which a projector "
                                                "export never replaces"):
        check_output_dir(tmp_path / "run", overwrite=True, content=PROJECTOR)
    with atomic_directory(tmp_path / "p", content=PROJECTOR):
        pass
    with pytest.raises(OutputExistsError, match="holds a keras-gauss projector export, which "
                                                "a run never replaces"):
        check_output_dir(tmp_path / "p", overwrite=True)


def test_nothing_is_written_inside_a_run_or_an_export(tmp_path):
    _run(tmp_path, "mine")
    for check in (lambda: check_output_dir(tmp_path / "run" / "sub", content=PROJECTOR),
                  lambda: check_output_dir(tmp_path / "run" / "a" / "b"),
                  lambda: check_output_file(tmp_path / "run" / "model.keras", overwrite=True,
                                            content=WORD2VEC)):
        with pytest.raises(OutputExistsError, match="inside the keras-gauss run"):
            check()
    assert json.loads((tmp_path / "run" / "run.json").read_text()) == {"value": "mine"}


def test_a_file_export_is_ours_only_with_its_marker_and_contents(tmp_path):
    path = tmp_path / "means.txt"
    path.write_text("1 1\ncat 0.5\n")  # a word2vec file, not written by us
    with pytest.raises(OutputExistsError, match="not a keras-gauss word2vec export"):
        check_output_file(path, overwrite=True, content=WORD2VEC)
    path.unlink()
    for text in ("1 1\ncat 0.5\n", "1 1\ndog 0.5\n"):
        with atomic_file(path, overwrite=True, content=WORD2VEC) as f:
            f.write(text)
    assert path.read_text() == "1 1\ndog 0.5\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".means.txt.keras-gauss",
                                                          "means.txt"]
    with pytest.raises(OutputExistsError, match="pass --overwrite"):
        check_output_file(path, content=WORD2VEC)
    path.write_text("my own notes\n")  # the user's file now, under the same name
    with pytest.raises(OutputExistsError, match="not a keras-gauss word2vec export"):
        check_output_file(path, overwrite=True, content=WORD2VEC)
    assert path.read_text() == "my own notes\n"


CLAIM = textwrap.dedent("""
    import sys, time
    from keras_gauss.io import OutputClaim
    with OutputClaim(sys.argv[1]) as claim:
        print("claimed", flush=True)
        time.sleep(60)
""")


def test_an_output_being_written_refuses_a_second_writer(tmp_path):
    script = tmp_path / "claim.py"
    script.write_text(CLAIM)
    target = tmp_path / "out" / "run"
    process = subprocess.Popen([sys.executable, str(script), str(target)],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "claimed\n"
        busy = f"being written by another keras-gauss process \\(process {process.pid}\\)"
        with pytest.raises(OutputBusyError, match=busy):
            OutputClaim(target).__enter__()
        with pytest.raises(OutputBusyError, match=busy):
            check_output_dir(target, overwrite=True)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    with OutputClaim(target) as claim:  # the dead writer's lock is taken over
        claim.check()
        with atomic_directory(target) as tmp:
            (tmp / "run.json").write_text("{}")
    assert [p.name for p in target.parent.iterdir()] == ["run"]  # the lock file went too


def test_a_job_holds_its_whole_output_tree_against_nested_writers(tmp_path, capsys):
    import fcntl

    nest = tmp_path / "runs" / "nest"
    nest.parent.mkdir()
    # Another process trains into runs/nest (its lock held by another open
    # file: flock locks of two opens exclude each other, as two processes').
    held = os.open(nest.parent / ".nest.keras-gauss-lock", os.O_RDWR | os.O_CREAT)
    os.write(held, b"4242")
    fcntl.flock(held, fcntl.LOCK_EX)
    busy = f"inside {nest}, which another keras-gauss process \\(process 4242\\) is writing"
    try:
        for inner in (nest / "inner", nest / "a" / "b"):
            with pytest.raises(OutputBusyError, match=busy):
                OutputClaim(inner).__enter__()
            with pytest.raises(OutputBusyError, match=busy):
                check_output_dir(inner, overwrite=True)
            with pytest.raises(OutputBusyError, match=busy):
                with atomic_directory(inner):
                    pass
            for content in (None, WORD2VEC):
                with pytest.raises(OutputBusyError, match=busy):
                    with atomic_file(inner / "x.txt", content=content):
                        pass
        edges = tmp_path / "edges.tsv"
        edges.write_text("dog\tmammal\n")
        err = cli_error(["train-hierarchy", "--edges", edges, "--out", nest / "inner"], capsys)
        assert busy[:20] in err, err
        assert not nest.exists()  # nothing made inside the other writer's output
    finally:
        os.close(held)
    with OutputClaim(nest / "inner") as claim:  # the writer gone, the path is free
        claim.check()


@pytest.mark.parametrize("kind", ["directory", "file"])
def test_a_write_the_file_system_refuses_keeps_the_previous_output(tmp_path, kind):
    target = tmp_path / ("run" if kind == "directory" else "means.txt")

    def write(value, fail=False):
        opened = (atomic_directory(target, overwrite=True) if kind == "directory"
                  else atomic_file(target, overwrite=True, content=WORD2VEC))
        with opened as out:
            if kind == "directory":
                (out / "value").write_text(value)
            else:
                out.write(value)
            if fail:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    write("old")
    with pytest.raises(OutputNotWritableError,
                       match=r"cannot write .*\(no space left on device\); .* left as it was"):
        write("new", fail=True)
    written = target / "value" if kind == "directory" else target
    assert written.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == (
        ["run"] if kind == "directory" else [".means.txt.keras-gauss", "means.txt"])
    write("newer")
    assert written.read_text() == "newer"


def test_a_name_too_long_for_the_file_system_is_one_line(tmp_path, capsys):
    """The output's name, or with the lock or marker keras-gauss writes beside it,
    longer than the file system takes: one line naming why (it was an OSError traceback)."""
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    longest = {"word2vec": limit - len(".") - len(".keras-gauss.tmp-XXXXXXXX"),
               "projector": limit - len(".") - len(".keras-gauss-lock"), "serving": limit}
    for fmt, fits in longest.items():
        out = tmp_path / ("n" * (fits + 1))  # serving: too long a directory to make
        err = cli_error(["export", tmp_path / "no-run", "--format", fmt, "--out", out], capsys)
        assert f"takes names of at most {limit} bytes; choose a shorter name" in err, err
    with pytest.raises(OutputNotWritableError, match="keras-gauss writes .NAME.keras-gauss-lock"):
        with atomic_directory(tmp_path / ("n" * (longest["projector"] + 1))):
            pass
    assert list(tmp_path.iterdir()) == []
    with atomic_file(tmp_path / ("n" * longest["word2vec"]), content=WORD2VEC) as out:
        out.write("fits")
    with atomic_directory(tmp_path / ("d" * longest["projector"]), content=PROJECTOR):
        pass


@pytest.mark.parametrize("kind", ["directory", "file"])
def test_an_error_of_the_data_is_not_reported_as_the_file_systems(tmp_path, kind):
    """A word UTF-8 cannot encode (a UnicodeEncodeError, whose `reason` is the codec's)
    is raised as it is, not as "cannot write ... (surrogates not allowed)"."""
    target = tmp_path / ("out" if kind == "directory" else "means.txt")
    opened = (atomic_directory(target, content=PROJECTOR) if kind == "directory"
              else atomic_file(target, content=WORD2VEC))
    with pytest.raises(UnicodeEncodeError):
        with opened as out:
            if kind == "directory":
                (out / "metadata.tsv").write_text("bad\udcff\n", encoding="utf-8")
            else:
                out.write("bad\udcff\n")
    assert list(tmp_path.iterdir()) == []


def test_an_output_of_ours_holding_files_we_did_not_write_is_never_replaced(tmp_path):
    run = tmp_path / "run"
    with atomic_directory(run) as tmp:
        (tmp / "split").mkdir()
        (tmp / "split" / "train.tsv").write_text("a\tb\n")
    (run / "eval.json").write_text("{}")  # written later by `keras-gauss evaluate`: ours
    with atomic_directory(run, overwrite=True) as tmp:
        (tmp / "split").mkdir()
        (tmp / "split" / "train.tsv").write_text("c\td\n")
    for mine in ("thesis.pdf", "split/notes.txt"):
        (run / mine).write_text("mine")
        with pytest.raises(OutputExistsError, match=f"files keras-gauss did not write "
                                                    f"\\({mine}\\).*never replaced"):
            with atomic_directory(run, overwrite=True):
                pass
        assert (run / mine).read_text() == "mine"
        (run / mine).unlink()


@pytest.mark.parametrize("stop", ["marker", "rename"])
def test_a_file_export_stopped_in_its_replace_is_left_whole_and_ours(tmp_path, monkeypatch,
                                                                     stop):
    import keras_gauss.io as io_module
    import keras_gauss.ownership as ownership

    path = tmp_path / "means.txt"
    with atomic_file(path, content=WORD2VEC) as f:
        f.write("1 1\ncat 0.5\n")
    real_replace, real_text = os.replace, ownership._marker_text

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if stop == "marker":  # no space for the new file's marker
        monkeypatch.setattr(ownership, "_marker_text", full)
    else:  # its marker is in place, the file is not yet
        monkeypatch.setattr(io_module.os, "replace",
                            lambda src, dst: full() if Path(dst) == path else real_replace(src, dst))
    with pytest.raises(OutputNotWritableError, match="no space left.*left as it was"):
        with atomic_file(path, overwrite=True, content=WORD2VEC) as f:
            f.write("1 1\ndog 0.5\n")
    monkeypatch.setattr(io_module.os, "replace", real_replace)
    monkeypatch.setattr(ownership, "_marker_text", real_text)
    assert path.read_text() == "1 1\ncat 0.5\n"
    assert io_module.file_content(path) == WORD2VEC  # still ours: replaced next time
    with atomic_file(path, overwrite=True, content=WORD2VEC) as f:
        f.write("1 1\ndog 0.5\n")
    assert io_module.file_content(path) == WORD2VEC
    assert json.loads((tmp_path / ".means.txt.keras-gauss").read_text()).get("previous") is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [".means.txt.keras-gauss", "means.txt"]


def test_a_deleted_working_directory_is_no_error_with_absolute_paths(tmp_path, monkeypatch,
                                                                     capsys):
    from keras_gauss.cli import main

    edges = tmp_path / "edges.tsv"
    edges.write_text("".join(f"n{i}\tn{(i - 1) // 3}\n" for i in range(1, 40)))
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    argv = ["train-hierarchy", "--edges", str(edges), "--dim", "2", "--epochs", "1",
            "--reconstruction-nodes", "5", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    err = cli_error([*argv, "--out", "run"], capsys)  # a relative one names itself, not the data
    assert err.endswith("--out run: a relative path, and the working directory no longer "
                        "exists; give an absolute path, or cd into an existing directory."), err


def test_a_lock_that_cannot_be_made_says_why(tmp_path, monkeypatch):
    # evaluate on a run in a folder one may not write: "cannot take its lock
    # (No such file or directory)" named the read-only retry, not the reason
    import keras_gauss.io as io

    real_open = os.open

    def read_only_folder(path, flags, *args):
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(io.os, "open", read_only_folder)
    (tmp_path / "run").mkdir()
    with pytest.raises(PermissionError, match="Permission denied"):
        io.OutputLock(tmp_path / "run").acquire()
