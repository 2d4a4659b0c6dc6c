"""Checkpoint and resume of train-corpus (issue 12, item 1): a run killed with
SIGKILL mid-epoch and resumed ends with the tables and metrics of an
uninterrupted run, bit for bit (one fused thread, the keras and fused-step
engines); bad resumes are refused with one line."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from keras_gauss.checkpoint import KILL_AFTER, KILL_DURING, checkpoint_file, read_checkpoint
from keras_gauss.cli import main
from keras_gauss.runs import load_run

TOPICS = (["cat", "dog", "horse", "cow"], ["hammer", "saw", "drill", "wrench"])
TRAIN = ["--dim", "4", "--epochs", "2", "--window", "2", "--min-count", "1",
         "--sample", "0.2", "--batch-size", "128", "--seed", "3", "--quiet"]
ENGINES = {"fused": ["--engine", "fused", "--threads", "1"],
           "keras": ["--engine", "keras", "--batch-size", "1024"],
           "fused-step": ["--engine", "fused-step", "--batch-size", "1024"]}
# Checkpoints after every chunk (fused: 8 an epoch) or step (keras, fused-step:
# 40 an epoch); the kill comes in the second epoch.
KILL_AT = {"fused": 11, "keras": 45, "fused-step": 45}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(TOPICS[i % 2] + ["the"], 8)) for i in range(2000)]
    path = tmp_path_factory.mktemp("resume") / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _argv(corpus, engine):
    return ["train-corpus", "--corpus", str(corpus), *TRAIN, *ENGINES[engine]]


def _killed(argv, out, env_name, count):
    """Runs the CLI in a child that SIGKILLs itself at the `count`-th checkpoint."""
    env = {**os.environ, env_name: str(count)}
    code = ("import sys; from keras_gauss.cli import main; sys.exit(main(sys.argv[1:]))")
    result = subprocess.run([sys.executable, "-c", code, *argv, "--out", str(out),
                             "--checkpoint-every", "1e-9"], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == -9, result.stderr[-2000:]
    assert not (out / "run.json").exists()
    return read_checkpoint(out)[0]


def _tables(run):
    return [w.numpy() for w in load_run(run).model.weights]


def _same_run(first, second):
    for a, b in zip(_tables(first), _tables(second)):
        np.testing.assert_array_equal(a, b)
    a, b = (json.loads((run / "metrics.json").read_text()) for run in (first, second))
    for key in ("pairs", "tokens", "final_loss", "loss_per_epoch", "vocab_size", "config"):
        assert a[key] == b[key], key
    assert b["train_seconds"] > 0


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """Uninterrupted runs, one per engine (made when first asked for)."""
    made = {}

    def get(engine):
        if engine not in made:
            out = tmp_path_factory.mktemp("ref") / engine
            assert main([*_argv(corpus, engine), "--out", str(out)]) == 0
            made[engine] = out
        return made[engine]
    return get


@pytest.mark.parametrize("engine", list(ENGINES))
def test_killed_and_resumed_run_equals_uninterrupted_bit_for_bit(corpus, reference, tmp_path,
                                                                engine):
    out = tmp_path / "run"
    state = _killed(_argv(corpus, engine), out, KILL_AFTER, KILL_AT[engine])
    assert state["epoch"] == 1 and state["step"] > 0  # in the middle of the second epoch
    assert main([*_argv(corpus, engine), "--resume", str(out)]) == 0
    assert not (out / ".checkpoint").exists()  # removed with the finished run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no leftovers
    _same_run(reference(engine), out)


def test_kill_while_writing_a_checkpoint_keeps_the_previous_one(corpus, reference, tmp_path):
    out = tmp_path / "run"
    state = _killed(_argv(corpus, "fused"), out, KILL_DURING, 5)
    assert (state["epoch"], state["step"]) == (0, 4)  # the 4th checkpoint, intact
    assert list((out / ".checkpoint").glob(".state.npz.tmp-*"))  # the 5th, half-written
    assert main([*_argv(corpus, "fused"), "--resume", str(out)]) == 0
    _same_run(reference("fused"), out)


@pytest.fixture(scope="module")
def killed_run(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("killed") / "run"
    _killed(_argv(corpus, "fused"), out, KILL_AFTER, 2)
    return out


@pytest.fixture
def interrupted(killed_run, tmp_path):
    """A copy of a killed fused run (its checkpoint: epoch 0, chunk 2)."""
    shutil.copytree(killed_run, tmp_path / "run")
    return tmp_path / "run"


def _error(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


def test_resume_with_other_settings_is_refused_in_one_line(corpus, interrupted, capsys):
    argv = _argv(corpus, "fused")
    argv[argv.index("--epochs") + 1] = "3"
    err = _error([*argv, "--resume", str(interrupted)], capsys)
    assert "--epochs 2" in err and "3" in err and "same settings" in err
    assert checkpoint_file(interrupted).is_file()  # nothing lost


def test_resume_on_another_corpus_is_refused(corpus, interrupted, tmp_path, capsys):
    other = tmp_path / "other.txt"
    other.write_text(corpus.read_text(encoding="utf-8") + "zebra zebra\n", encoding="utf-8")
    argv = _argv(other, "fused")
    err = _error([*argv, "--resume", str(interrupted)], capsys)
    assert "corpus differs" in err


def test_fresh_run_over_an_interrupted_one_is_refused_unless_overwrite(corpus, interrupted,
                                                                      capsys):
    err = _error([*_argv(corpus, "fused"), "--out", str(interrupted)], capsys)
    assert "interrupted run" in err and "--resume" in err
    assert main([*_argv(corpus, "fused"), "--out", str(interrupted), "--overwrite",
                 "--checkpoint-every", "0"]) == 0
    assert (interrupted / "run.json").is_file()
    assert not (interrupted / ".checkpoint").exists()


def test_resume_of_a_finished_run_or_a_plain_directory_is_refused(corpus, reference, tmp_path,
                                                                   capsys):
    argv = _argv(corpus, "fused")
    err = _error([*argv, "--resume", str(reference("fused"))], capsys)
    assert "finished" in err and "nothing to resume" in err
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("mine")
    err = _error([*argv, "--resume", str(plain)], capsys)
    assert "no checkpoint" in err
    assert (plain / "notes.txt").read_text() == "mine"
    err = _error([*argv, "--resume", str(tmp_path / "missing")], capsys)
    assert "no such directory" in err
    err = _error([*argv, "--out", str(tmp_path / "x"), "--resume", str(plain)], capsys)
    assert "leave out --out" in err
    err = _error([*argv, "--out", str(tmp_path / "x"), "--checkpoint-every", "nan"], capsys)
    assert "--checkpoint-every" in err


def test_damaged_checkpoint_is_named(corpus, interrupted, capsys):
    checkpoint_file(interrupted).write_bytes(b"PK\x03\x04 not a zip")
    err = _error([*_argv(corpus, "fused"), "--resume", str(interrupted)], capsys)
    assert "state.npz is damaged" in err
