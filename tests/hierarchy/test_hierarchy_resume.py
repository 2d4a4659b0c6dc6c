"""Checkpoint and resume of train-hierarchy / train-wordnet (issue 12, item 1):
a run killed with SIGKILL mid-epoch and resumed ends with the tables and
metrics of an uninterrupted run, bit for bit, with the keras engine
(`model.fit`), for both losses and energies. One real
SIGKILL (a child process) per trainer; the other cases stop in this process
right after the same checkpoint (`cli_process.interrupted`), which leaves
the same files."""

import json
import shutil

import pytest

from cli_process import interrupted as interrupted_run
from cli_process import killed
from fault_injection import KILL_AFTER
from keras_gauss.cli import main
from keras_gauss.runs import load_run
from cli_errors import cli_error
from run_files import assert_same_run

# 1,321 closure edges of a ternary tree of 300 nodes: 21 steps an epoch.
TRAIN = ["--dim", "4", "--epochs", "2", "--batch-size", "64", "--seed", "2", "--val-size", "0",
         "--test-size", "0", "--reconstruction-nodes", "10", "--quiet", "--energy", "kl",
         "--engine", "keras"]  # the native engine: test_hierarchy_native_training.py


@pytest.mark.parametrize("loss, schedule, kill", [
    ("ranking", "constant", True), ("threshold", "constant", True),  # a SIGKILL per trainer
    ("ranking", "linear", False), ("threshold", "cosine", False),
    ("containment", "constant", False)])
def test_killed_and_resumed_run_equals_uninterrupted_bit_for_bit(edges, tmp_path, loss,
                                                                 schedule, kill):
    # A decaying rate is a function of the optimizer's step: the resumed run
    # continues the schedule where the killed one stopped. KL trains with the
    # fused step (ranking) or model.fit (threshold); containment with model.fit.
    energy = ["--energy", "containment", "--negatives", "5"] if loss == "containment" else \
        ["--loss", loss]
    argv = ["train-hierarchy", "--edges", str(edges), *TRAIN, *energy,
            "--learning-rate-schedule", schedule]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    out = tmp_path / "b"
    if kill:
        state, _ = killed(argv, out, KILL_AFTER, 26)
    else:
        state = interrupted_run(argv, out, 26)
    assert (state["epoch"], state["step"]) == (1, 5)  # mid-way through the second epoch
    assert len(state["losses"]) == 1
    assert main([*argv, "--resume", str(out)]) == 0
    assert not (out / ".checkpoint").exists()
    assert_same_run(tmp_path / "a", out,
                    ("final_loss", "map", "mean_rank", "num_train_edges", "config"))


@pytest.fixture(scope="module")
def killed_tree(edges, tmp_path_factory):
    """A run of `TRAIN` stopped at its third checkpoint (epoch 0)."""
    out = tmp_path_factory.mktemp("killed") / "run"
    interrupted_run(["train-hierarchy", "--edges", str(edges), *TRAIN], out, 3)
    return out


@pytest.fixture
def interrupted(killed_tree, tmp_path):
    """A copy of `killed_tree`."""
    return shutil.copytree(killed_tree, tmp_path / "run")


def test_resume_with_another_loss_is_refused(edges, interrupted, capsys):
    argv = ["train-hierarchy", "--edges", str(edges), *TRAIN]
    err = cli_error([*argv, "--loss", "ranking", "--resume", str(interrupted)], capsys)
    assert "--loss threshold" in err, err  # the run started with KL's default loss


def test_resume_with_two_node_names_swapped_is_refused(edges, interrupted, capsys):
    # The same file, nodes and edges counts: only the digest of the hierarchy tells.
    original = edges.read_text()
    names = {"n1": "n2", "n2": "n1"}
    try:
        edges.write_text("".join("\t".join(names.get(name, name) for name in line.split("\t"))
                                 + "\n" for line in original.splitlines()))
        err = cli_error(["train-hierarchy", "--edges", edges, *TRAIN, "--resume", interrupted],
                     capsys)
    finally:
        edges.write_text(original)
    assert "differs from the one the run started on" in err, err


def test_a_checkpoint_outside_its_bounds_is_refused(edges, interrupted, capsys):
    from keras_gauss.checkpoint import read_checkpoint, write_checkpoint

    state, arrays = read_checkpoint(interrupted)
    arrays["table/0"][5] = 1e30  # a node's mean, far above --max-norm
    write_checkpoint(interrupted, state, arrays)
    err = cli_error(["train-hierarchy", "--edges", edges, *TRAIN, "--resume", interrupted], capsys)
    assert "table 'nodes'" in err and "norm above max_norm 10 (first: row 5" in err, err


def test_resume_with_another_schedule_is_refused(edges, tmp_path, capsys):
    argv = ["train-hierarchy", "--edges", str(edges), *TRAIN]
    out = tmp_path / "run"
    interrupted_run([*argv, "--learning-rate-schedule", "linear"], out, 3)
    err = cli_error([*argv, "--resume", str(out)], capsys)
    assert "--learning-rate-schedule linear, this command has constant" in err, err


def test_checkpoint_from_before_schedules_resumes_as_constant(edges, interrupted):
    from keras_gauss.checkpoint import read_checkpoint, write_checkpoint

    argv = ["train-hierarchy", "--edges", str(edges), *TRAIN]
    state, arrays = read_checkpoint(interrupted)
    del state["settings"]["learning_rate_schedule"]  # as written before the option
    write_checkpoint(interrupted, state, arrays)
    assert main([*argv, "--resume", str(interrupted)]) == 0


def test_resume_takes_another_generality_term(edges, interrupted):
    # --generality only scores the tables: a checkpoint written without it
    # (or with another value, e.g. before the option existed) resumes.
    argv = ["train-hierarchy", "--edges", str(edges), *TRAIN]
    assert main([*argv, "--generality", "0.1", "--resume", str(interrupted)]) == 0
    metrics = json.loads((interrupted / "metrics.json").read_text())
    assert metrics["config"]["generality"] == 0.1
    assert load_run(interrupted).generality == 0.1
