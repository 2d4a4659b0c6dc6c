"""keras_gauss.job: the one sequence every trainer runs (issue 23).

A toy engine checks the sequence itself; real commands in child processes
check what it guarantees end to end: settings refused before TensorFlow is
imported, one writer of an output at a time (also across `--resume`), a
refused write (no space) as one line with the previous state kept. The
corpus commands run the native trainer (no TensorFlow in the child)."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from cli_process import MARK, disk_full, disk_full_here, run_cli
from keras_gauss.checkpoint import read_checkpoint
from keras_gauss.checks import TrainingDivergedError
from keras_gauss.cli import main
from keras_gauss.fused.native import native_available
from keras_gauss.job import Data, Digest, Engine, Job, Table, check_engine, choose_engine
from keras_gauss.pipelines.native_corpus import CHUNK_TOKENS_VARIABLE
from cli_errors import cli_error

NO_TENSORFLOW = {"tensorflow": False, "keras": False, "nltk": False}
CHUNKS = {CHUNK_TOKENS_VARIABLE: "2000"}  # 8 chunks an epoch: a checkpoint after each
TRAIN = ["--dim", "4", "--epochs", "2", "--window", "2", "--min-count", "1", "--sample", "0",
         "--threads", "1", "--quiet"]
needs_native = pytest.mark.skipif(not native_available(),
                                  reason="the native trainer did not build")


class Toy(Engine):
    """An engine of one table whose training adds `step` to every mean."""

    name = "toy"

    def __init__(self, step=0.1):
        self.step = step

    def read(self, job):
        digest = Digest()
        digest.update(b"a\nb\n")
        return Data(rows=2, dim=3, tables=1, digest=digest.hexdigest())

    def build(self, job, arrays):
        self.means, self.variances = np.zeros((2, 3)), np.ones((2, 3))

    def tables(self):
        return [Table("nodes", self.means, self.variances, 4.0, 0.05, 5.0)]

    def train(self, job):
        self.means += self.step

    def metrics(self, job):
        return {"mean": float(self.means.mean())}

    def write(self, job, directory):
        np.save(directory / "means.npy", self.means)
        return {"kind": "hierarchy", "energy": "kl", "table": "nodes", "vocabulary": "n.tsv"}


def test_the_engine_is_a_plugged_part_and_tables_leave_within_their_bounds(tmp_path):
    out = tmp_path / "run"
    settings = {"dim": 3}
    assert Job("hierarchy", out, settings, verbose=0).run(lambda state: [Toy()]) == {
        "mean": pytest.approx(0.1)}
    # An engine that cannot train the data passes to the next one.
    declining = Toy()
    declining.read = lambda job: None
    Job("hierarchy", out, settings, overwrite=True, verbose=0).run(
        lambda state: [declining, Toy(0.2)])
    np.testing.assert_allclose(np.load(out / "means.npy"), 0.2)
    # Finite but outside --max-norm: no run is written.
    with pytest.raises(TrainingDivergedError, match=r"norm above max_norm 4 .*No run"):
        Job("hierarchy", tmp_path / "far", settings, verbose=0).run(lambda state: [Toy(9.0)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_settings_are_refused_before_tensorflow_or_any_reading(tmp_path):
    edges = tmp_path / "edges.tsv"
    edges.write_text("dog\tmammal\n")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat\n")
    for argv, message in [
            (["train-hierarchy", "--edges", edges, "--epochs", "0"],
             "--epochs must be an integer >= 1, got 0"),
            (["train-corpus", "--corpus", corpus, "--init-variance", "100",
              "--max-variance", "5"], "--init-variance 100.0 must lie in [--min-variance, "
                                      "--max-variance] = [0.05, 5.0]"),
            (["train-corpus", "--corpus", corpus, "--checkpoint-every", "-1"],
             "--checkpoint-every")]:
        result, modules = run_cli([*argv, "--out", tmp_path / "run"])
        lines = [line for line in result.stderr.splitlines() if not line.startswith(MARK)]
        assert result.returncode == 2 and len(lines) == 1 and message in lines[0], \
            result.stderr
        assert modules == NO_TENSORFLOW
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt", "edges.tsv"]


def _corpus(tmp_path):
    rng = np.random.default_rng(0)
    words = ["cat", "dog", "the", "saw", "drill", "horse"]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(" ".join(rng.choice(words, 8)) for _ in range(2000)) + "\n")
    return path


# Run in the child: the first checkpoint is written whole, then the job waits.
PAUSE = """
import time
import keras_gauss.checkpoint as _checkpoint
_save = _checkpoint.Checkpointer.save
def _save_and_wait(self, *args, **kwargs):
    _save(self, *args, **kwargs)
    self.wait()
    print("checkpointed", flush=True)
    time.sleep(120)
_checkpoint.Checkpointer.save = _save_and_wait
"""


@needs_native
def test_an_output_being_trained_into_has_one_writer_also_across_resume(tmp_path, capsys):
    corpus, out = _corpus(tmp_path), tmp_path / "run"
    argv = ["train-corpus", "--corpus", corpus, *TRAIN]
    code = PAUSE + "\nfrom keras_gauss.cli import main\nmain(sys.argv[1:])\n"
    writer = subprocess.Popen(
        [sys.executable, "-c", "import sys\n" + code, *map(str, argv), "--out", str(out),
         "--checkpoint-every", "1e-9"], stdout=subprocess.PIPE, text=True,
        env={**os.environ, **CHUNKS})
    try:
        assert writer.stdout.readline() == "checkpointed\n"
        busy = f"being written by another keras-gauss process (process {writer.pid})"
        for other in (["--out", out], ["--out", out, "--overwrite"], ["--resume", out]):
            assert busy in cli_error([*argv, *other], capsys)
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
    assert read_checkpoint(out)[0]["step"] == 1  # the writer's checkpoint, untouched
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CHUNK_TOKENS_VARIABLE, CHUNKS[CHUNK_TOKENS_VARIABLE])
        assert main([*map(str, argv), "--resume", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt", "run"]


@needs_native
def test_no_space_for_a_checkpoint_is_one_line_and_the_previous_one_is_kept(tmp_path):
    corpus, out = _corpus(tmp_path), tmp_path / "run"
    argv = ["train-corpus", "--corpus", corpus, *TRAIN]
    result, modules = run_cli([*argv, "--out", out, "--checkpoint-every", "1e-9"], env=CHUNKS,
                              prelude=disk_full("*/.checkpoint/.state.npz.tmp-*", after=2))
    lines = [line for line in result.stderr.splitlines() if not line.startswith(MARK)]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "cannot write the checkpoint (no space left on device); the previous checkpoint " \
           "is kept" in lines[0]
    assert modules == NO_TENSORFLOW
    assert read_checkpoint(out)[0]["step"] == 2  # the second, whole
    assert sorted(p.name for p in (out / ".checkpoint").iterdir()) == ["state.npz"]
    result, _ = run_cli([*argv, "--resume", out], env=CHUNKS)
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "metrics.json").read_text())["config"]["epochs"] == 2


@needs_native
def test_no_space_for_the_run_is_one_line_and_the_previous_run_is_kept(tmp_path):
    corpus, out = _corpus(tmp_path), tmp_path / "run"
    argv = ["train-corpus", "--corpus", corpus, *TRAIN, "--out", out]
    assert run_cli(argv)[0].returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result, _ = run_cli([*argv, "--overwrite", "--seed", "1"],
                        prelude=disk_full("*/.run.tmp-*/model.keras"))
    lines = [line for line in result.stderr.splitlines() if not line.startswith(MARK)]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert f"{out}: cannot write the run (no space left on device); {out} is left as it " \
           "was" in lines[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt", "run"]


def test_no_space_for_an_export_is_one_line_and_the_previous_export_is_kept(tmp_path, capsys):
    corpus, run = _corpus(tmp_path), tmp_path / "run"
    assert main(["train-corpus", "--corpus", str(corpus), *TRAIN, "--out", str(run)]) == 0
    exports = tmp_path / "exports"
    commands = [["export", str(run), "--format", "word2vec", "--out", str(exports / "m.txt")],
                ["export", str(run), "--format", "projector", "--out", str(exports / "p")],
                ["export", str(run), "--out", str(exports / "serve")]]
    for argv in commands:
        assert main(argv) == 0
    before = {str(p): p.read_bytes() for p in exports.rglob("*") if p.is_file()}
    capsys.readouterr()
    codes = []
    with disk_full_here("*/exports/*.tmp-*"):
        for argv in commands:
            try:
                codes.append(main([*argv, "--overwrite", "--quiet"]))
            except SystemExit as stop:
                codes.append(stop.code)
    err = capsys.readouterr().err
    # (Only our lines: a backend may print notices of its own on some machines.)
    errors = [line for line in err.splitlines() if line.startswith("keras-gauss export: error:")]
    assert codes == [2] * 3 and len(errors) == 3, err
    assert "Traceback" not in err
    for path, error in zip(("m.txt", "p", "serve/1"), errors):
        assert f"{exports / path}: cannot write" in error and "(no space left on device)" \
            in error and "left as it was" in error, error
    after = {str(p): p.read_bytes() for p in exports.rglob("*") if p.is_file()}
    assert after == before  # every previous export whole, no leftovers


def test_choose_engine_falls_back_down_the_list_and_says_so_once_each():
    made = []
    engines = [(name, lambda name=name: made.append(name) or name,
                {"a": lambda: "no a", "b": lambda: "no b", "c": None}[name])
               for name in ("a", "b", "c")]
    with pytest.warns(RuntimeWarning) as said:
        assert choose_engine("a", engines) == ["c"]
    assert [str(w.message) for w in said] == [
        "the a trainer is unavailable (no a); training with --engine b instead.",
        "the b trainer is unavailable (no b); training with --engine c instead."]
    assert made == ["c"]  # the skipped engines are never made
    assert choose_engine("c", engines) == ["c"]
    with pytest.raises(RuntimeError, match=r"no engine can train here \(b: no b\)"):
        choose_engine("b", engines[:2])


def test_check_engine_names_the_engines_left():
    with pytest.raises(ValueError, match="^--engine native runs no callbacks; use --engine keras.$"):
        check_engine("native", {"native": "runs no callbacks"})
    with pytest.raises(ValueError, match="^--engine keras needs a GPU.$"):
        check_engine("keras", {"keras": "needs a GPU", "native": "needs a CPU"})
