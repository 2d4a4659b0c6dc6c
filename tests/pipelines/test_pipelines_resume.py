"""Checkpoint and resume of train-corpus (issue 12, item 1; issue 15 for the
native path): a run killed with SIGKILL mid-epoch and resumed ends with the
tables and metrics of an uninterrupted run, bit for bit (both engines: the
native trainer on one thread, without TensorFlow, and keras); bad resumes are
refused with one line. One real SIGKILL (a child process) per engine and
per kill point; the keras engine with pairs drawn on the device and the
fixture of the refusals stop in this process right after the same
checkpoint (`cli_process.interrupted`), which leaves the same files."""

import shutil

import pytest

from cli_process import interrupted as interrupted_run
from cli_process import killed, run_cli
from fault_injection import KILL_AFTER, KILL_DURING
from keras_gauss.checkpoint import checkpoint_file, read_checkpoint
from keras_gauss.checkpoint import write_checkpoint
from keras_gauss.cli import main
from keras_gauss.fused.native import native_available
from keras_gauss.pipelines.native_corpus import CHUNK_TOKENS_VARIABLE, corpus_digest
from cli_errors import cli_error
from run_files import assert_same_run

TRAIN = ["--dim", "4", "--epochs", "2", "--window", "2", "--min-count", "1",
         "--sample", "0.2", "--batch-size", "128", "--seed", "3", "--quiet"]
# "native": the default, the C++ trainer (no TensorFlow); "keras": model.fit.
ENGINES = {"native": ["--engine", "native", "--threads", "1"],
           "keras": ["--engine", "keras", "--batch-size", "1024"],
           "keras-device": ["--engine", "keras", "--batch-size", "1024", "--pairs", "device"]}
# Checkpoints after every chunk (native: 8 an epoch, its chunks being 2,000
# tokens here), step (keras: 40 an epoch) or call (keras with pairs drawn on
# the device: 32 steps a call, 2 calls an epoch); the kill comes in the
# second epoch.
KILL_AT = {"native": 11, "keras": 45, "keras-device": 3}
CHUNKS = {CHUNK_TOKENS_VARIABLE: "2000"}
NO_TENSORFLOW = {"tensorflow": False, "keras": False, "nltk": False}
needs_native = pytest.mark.skipif(not native_available(),
                                  reason="the native trainer did not build")


@pytest.fixture(scope="module", autouse=True)
def _small_chunks():
    """The native trainer cuts the 16,000-token corpus into 8 chunks an epoch."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CHUNK_TOKENS_VARIABLE, CHUNKS[CHUNK_TOKENS_VARIABLE])
        yield


@pytest.fixture(scope="module")
def corpus(two_topic_corpus):
    return two_topic_corpus(2000, 8)


def _argv(corpus, engine):
    return ["train-corpus", "--corpus", str(corpus), *TRAIN, *ENGINES[engine]]


def _killed(argv, out, env_name, count, engine="native"):
    """The state of the checkpoint a killed child left; on the native path
    the child had imported neither TensorFlow nor Keras when it was killed."""
    state, modules = killed(argv, out, env_name, count, env=CHUNKS)
    if engine == "native":
        assert modules == NO_TENSORFLOW
    return state


def _same_run(first, second):
    _, b = assert_same_run(first, second, ("pairs", "tokens", "final_loss", "loss_per_epoch",
                                           "vocab_size", "config"))
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
    if engine == "native" and not native_available():
        pytest.skip("the native trainer did not build")
    out = tmp_path / "run"
    if engine == "keras-device":  # the keras engine's SIGKILL: "keras"
        state = interrupted_run(_argv(corpus, engine), out, KILL_AT[engine])
    else:
        state = _killed(_argv(corpus, engine), out, KILL_AFTER, KILL_AT[engine], engine)
    assert state["epoch"] == 1 and state["step"] > 0  # in the middle of the second epoch
    assert state["engine"] == engine.split("-")[0]
    assert state["data"] == corpus_digest(corpus)  # the same digest for every engine
    if engine == "native":  # the default path: both processes without TensorFlow or Keras
        assert sorted(read_checkpoint(out)[1]) == ["native/0", "native/1"]
        result, modules = run_cli([*_argv(corpus, engine), "--resume", out], env=CHUNKS)
        assert result.returncode == 0, result.stderr[-2000:]
        assert modules == NO_TENSORFLOW
    else:
        assert main([*_argv(corpus, engine), "--resume", str(out)]) == 0
    assert not (out / ".checkpoint").exists()  # removed with the finished run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no leftovers
    _same_run(reference(engine), out)


def test_kill_while_writing_a_checkpoint_keeps_the_previous_one(corpus, reference, tmp_path):
    out = tmp_path / "run"
    state = _killed(_argv(corpus, "native"), out, KILL_DURING, 5)
    assert (state["epoch"], state["step"]) == (0, 4)  # the 4th checkpoint, intact
    assert list((out / ".checkpoint").glob(".state.npz.tmp-*"))  # the 5th, half-written
    assert main([*_argv(corpus, "native"), "--resume", str(out)]) == 0
    _same_run(reference("native"), out)


@pytest.fixture(scope="module")
def killed_run(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("killed") / "run"
    interrupted_run(_argv(corpus, "native"), out, 2)
    return out


@pytest.fixture
def interrupted(killed_run, tmp_path):
    """A copy of a stopped native run (its checkpoint: epoch 0, chunk 2)."""
    shutil.copytree(killed_run, tmp_path / "run")
    return tmp_path / "run"


def test_resume_with_other_settings_is_refused_in_one_line(corpus, interrupted, capsys):
    argv = _argv(corpus, "native")
    argv[argv.index("--epochs") + 1] = "3"
    err = cli_error([*argv, "--resume", str(interrupted)], capsys)
    assert "--epochs 2" in err and "3" in err and "same settings" in err
    assert checkpoint_file(interrupted).is_file()  # nothing lost


def test_resume_on_another_corpus_is_refused(corpus, interrupted, tmp_path, capsys):
    other = tmp_path / "other.txt"
    other.write_text(corpus.read_text(encoding="utf-8") + "zebra zebra\n", encoding="utf-8")
    argv = _argv(other, "native")
    err = cli_error([*argv, "--resume", str(interrupted)], capsys)
    assert "corpus differs" in err


def test_fresh_run_over_an_interrupted_one_is_refused_unless_overwrite(corpus, interrupted,
                                                                      capsys):
    err = cli_error([*_argv(corpus, "native"), "--out", str(interrupted)], capsys)
    assert "interrupted run" in err and "--resume" in err
    assert main([*_argv(corpus, "native"), "--out", str(interrupted), "--overwrite",
                 "--checkpoint-every", "0"]) == 0
    assert (interrupted / "run.json").is_file()
    assert not (interrupted / ".checkpoint").exists()


def test_resume_of_a_finished_run_or_a_plain_directory_is_refused(corpus, reference, tmp_path,
                                                                   capsys):
    argv = _argv(corpus, "native")
    err = cli_error([*argv, "--resume", str(reference("native"))], capsys)
    assert "finished" in err and "nothing to resume" in err
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("mine")
    err = cli_error([*argv, "--resume", str(plain)], capsys)
    assert "no checkpoint" in err
    assert (plain / "notes.txt").read_text() == "mine"
    err = cli_error([*argv, "--resume", str(tmp_path / "missing")], capsys)
    assert "no such directory" in err
    err = cli_error([*argv, "--resume", str(plain / "notes.txt")], capsys)
    assert err.endswith("notes.txt: a file, not a run directory.")
    err = cli_error([*argv, "--out", str(tmp_path / "x"), "--resume", str(plain)], capsys)
    assert "leave out --out" in err
    err = cli_error([*argv, "--out", str(tmp_path / "x"), "--checkpoint-every", "nan"], capsys)
    assert "--checkpoint-every" in err


def test_damaged_checkpoint_is_named(corpus, interrupted, capsys):
    checkpoint_file(interrupted).write_bytes(b"PK\x03\x04 not a zip")
    err = cli_error([*_argv(corpus, "native"), "--resume", str(interrupted)], capsys)
    assert "state.npz is damaged" in err


@needs_native
def test_native_checkpoint_with_tables_of_another_shape_is_refused(corpus, interrupted, capsys):
    state, arrays = read_checkpoint(interrupted)
    assert state["engine"] == "native"
    arrays["native/1"] = arrays["native/1"][:-1]
    write_checkpoint(interrupted, state, arrays)
    err = cli_error([*_argv(corpus, "native"), "--resume", str(interrupted)], capsys)
    assert "native/1" in err and "--overwrite" in err


def test_checkpoint_of_the_keras_engine_is_not_resumed_by_the_native_trainer(
        corpus, interrupted, capsys):
    """A checkpoint says which engine wrote it; another one's is refused."""
    state, arrays = read_checkpoint(interrupted)
    write_checkpoint(interrupted, {**state, "engine": "keras"}, arrays)
    err = cli_error([*_argv(corpus, "native"), "--resume", str(interrupted)], capsys)
    assert "trained with the keras engine, this one would use native" in err


@needs_native
def test_a_kill_during_the_first_checkpoint_leaves_no_dead_end(corpus, reference, tmp_path):
    """Killed while its first checkpoint was half-written, a run can be resumed
    (from the start: nothing was saved), or replaced with --out and --overwrite."""
    out, argv = tmp_path / "run", _argv(corpus, "native")
    result, _ = run_cli([*argv, "--out", out, "--checkpoint-every", "1e-9"],
                        env={**CHUNKS, KILL_DURING: "1"})
    assert result.returncode == -9, result.stderr[-2000:]
    assert list((out / ".checkpoint").glob(".state.npz.tmp-*"))  # the half-written one
    again, over = (shutil.copytree(out, tmp_path / name) for name in ("again", "over"))
    assert main([*argv, "--resume", str(out)]) == 0
    _same_run(reference("native"), out)
    assert main([*argv, "--out", str(again)]) == 0
    assert main([*argv, "--out", str(over), "--overwrite"]) == 0
    for run in (out, again, over):  # whole runs, no leftovers
        assert sorted(p.name for p in run.iterdir()) == [
            ".keras-gauss", "history.csv", "history.png", "metrics.json", "model.keras", "run.json",
            "vocab.tsv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "over", "run"]


def test_resume_on_the_same_lines_in_another_order_is_refused(corpus, interrupted, tmp_path,
                                                             capsys):
    # The same vocabulary and counts: only the digest of the content tells.
    lines = corpus.read_text(encoding="utf-8").splitlines()
    reversed_ = tmp_path / "reversed.txt"
    reversed_.write_text("\n".join(lines[::-1]) + "\n", encoding="utf-8")
    err = cli_error([*_argv(reversed_, "native"), "--resume", str(interrupted)], capsys)
    assert "the corpus differs from the one the run started on" in err, err
    assert checkpoint_file(interrupted).is_file()


@needs_native
def test_a_checkpoint_outside_its_bounds_is_refused(corpus, interrupted, capsys):
    state, arrays = read_checkpoint(interrupted)
    arrays["native/0"][3, :4] = 1e30  # a word's mean, far above --max-norm
    write_checkpoint(interrupted, state, arrays)
    err = cli_error([*_argv(corpus, "native"), "--resume", str(interrupted)], capsys)
    assert "table 'words'" in err and "norm above max_norm 4 (first: row 3" in err, err
    assert "checkpoint is damaged" in err
