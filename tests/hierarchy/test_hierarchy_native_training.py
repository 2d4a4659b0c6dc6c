"""The native engine of train-hierarchy / train-wordnet
(`keras_gauss.hierarchy.native_training`, `--engine native`, the default):
a run killed with SIGKILL and resumed ends bit for bit as an uninterrupted
one, best-epoch selection, the run loads, exports and evaluates as a keras
engine's run, the refusals and the fallback are one line, and it reaches the
keras engine's accuracy."""

import json
import warnings

import pytest

from cli_process import interrupted
from cli_process import killed
from fault_injection import KILL_AFTER
from keras_gauss.cli import main
from keras_gauss.fused.native import native_available
from keras_gauss.hierarchy import train as train_module
from keras_gauss.runs import load_run
from cli_errors import cli_error
from run_files import assert_same_run
from scripted_selection import SCRIPTED

pytestmark = pytest.mark.skipif(not native_available(), reason="no C++ compiler")

# 1,321 closure edges of a ternary tree of 300 nodes: 83 steps an epoch,
# checkpoints (every chunk of 16 steps and at the epoch's end) after steps
# 16, 32, 48, 64, 80 and 83.
TRAIN = ["--dim", "4", "--epochs", "2", "--batch-size", "16", "--seed", "2", "--val-size", "0",
         "--test-size", "0", "--reconstruction-nodes", "10", "--quiet"]


@pytest.mark.parametrize("settings, kill", [
    ([], True),  # KL's defaults (thresholded, the tree-shaped start): a real SIGKILL
    (["--energy", "containment", "--learning-rate-schedule", "linear"], False),
    (["--energy", "kl", "--loss", "ranking", "--reversed-negatives", "--init", "uniform",
      "--covariance", "spherical", "--learning-rate-schedule", "cosine",
      "--sibling-negatives", "0.5"], False),
])
def test_killed_and_resumed_run_equals_uninterrupted_bit_for_bit(edges, tmp_path, settings,
                                                                 kill):
    """The other cases stop in this process right after the same checkpoint."""
    argv = ["train-hierarchy", "--edges", str(edges), *TRAIN, *settings]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    out = tmp_path / "b"
    if kill:
        state, modules = killed(argv, out, KILL_AFTER, 8)
        # training imports none of them (NLTK: only WordNet's jobs read it)
        assert modules == {"tensorflow": False, "keras": False, "nltk": False}
    else:
        state = interrupted(argv, out, 8)
    assert (state["epoch"], state["step"], state["engine"]) == (1, 32, "native")
    assert len(state["losses"]) == 1
    assert main([*argv, "--resume", str(out)]) == 0
    assert not (out / ".checkpoint").exists()
    assert_same_run(tmp_path / "a", out,
                    ("final_loss", "map", "mean_rank", "num_train_edges", "config"))


# --split ganea at 50% on the tree: 42 steps of 16 an epoch, 3 checkpoints.
SELECT = ["--split", "ganea", "--non-basic-percent", "50", "--dim", "4", "--batch-size", "16",
          "--seed", "1", "--reconstruction-nodes", "10", "--quiet", "--epochs", "5",
          "--patience", "4"]


def test_selection_keeps_the_best_epoch_and_resumes_bit_for_bit(edges, tmp_path, scripted):
    argv = ["train-hierarchy", "--edges", str(edges), *SELECT]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    assert main([*argv[:-4], "--epochs", "2", "--out", str(tmp_path / "two")]) == 0
    selection = json.loads((tmp_path / "a" / "metrics.json").read_text())["selection"]
    assert selection["history"] == SCRIPTED and selection["best_epoch"] == 2
    # The five-epoch run kept the tables of its second epoch: a two-epoch run's.
    assert_same_run(tmp_path / "a", tmp_path / "two")
    out = tmp_path / "b"  # killed in the fourth epoch, after its second chunk
    state = interrupted(argv, out, 3 * 3 + 2)  # the scorer: patched in this process
    assert (state["epoch"], state["step"]) == (3, 32)
    assert state["selection"]["best_epoch"] == 1 and state["selection"]["history"] == SCRIPTED[:3]
    assert main([*argv, "--resume", str(out)]) == 0
    assert_same_run(tmp_path / "a", out, ("selection",))


def test_a_native_run_loads_exports_and_evaluates(edges, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train-hierarchy", "--edges", str(edges), "--dim", "4", "--epochs", "2",
                 "--batch-size", "64", "--reconstruction-nodes", "10", "--quiet",
                 "--out", str(run)]) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["config"]["engine"] == "native" and metrics["test_accuracy"] > 0.6
    loaded = load_run(run)
    assert loaded.model.get_layer("nodes").means.shape == (300, 4)
    optimizer = loaded.model.optimizer  # the accumulators and the step count travel too
    assert int(optimizer.iterations.numpy()) == 2 * -(-metrics["num_train_edges"] // 64)
    assert len((run / "nodes.tsv").read_text().splitlines()) == 300
    assert (run / "split" / "test.tsv").exists()
    assert main(["export", str(run), "--format", "word2vec", "--out",
                 str(tmp_path / "vectors.txt"), "--quiet"]) == 0
    assert (tmp_path / "vectors.txt").read_text().splitlines()[0] == "300 4"
    entailment = tmp_path / "entailment.tsv"
    entailment.write_text("n4\tn1\tTrue\nn1\tn4\tFalse\nn5\tn2\tFalse\n")
    assert main(["evaluate", str(run), "--entailment", str(entailment), "--quiet"]) == 0
    assert (run / "eval.json").exists()


def test_what_native_cannot_do_is_refused_in_one_line(edges, tmp_path, capsys):
    argv = ["train-hierarchy", "--edges", edges, "--out", tmp_path / "run", *TRAIN]
    err = cli_error([*argv, "--distribution", "data"], capsys)
    assert "--distribution data trains with model.fit: it needs --engine keras" in err, err
    assert not (tmp_path / "run").exists()


def test_without_the_native_library_it_trains_with_keras_after_one_warning(edges, tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(train_module, "native_unavailable", lambda: "no compiler here")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["train-hierarchy", "--edges", str(edges), *TRAIN, "--epochs", "1",
                     "--out", str(tmp_path / "run")]) == 0
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert said == ["the native trainer is unavailable (no compiler here); training with "
                    "--engine keras instead."], said
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["config"]["engine"] \
        == "keras"


def test_mammals_reach_the_keras_engines_accuracy(tmp_path):
    accuracy = {}
    for engine in ("native", "keras"):
        run = tmp_path / engine
        assert main(["train-wordnet", "--root", "mammal.n.01", "--dim", "10", "--epochs", "4",
                     "--no-lemmas", "--reconstruction-nodes", "50", "--quiet", "--engine", engine,
                     "--out", str(run)]) == 0
        metrics = json.loads((run / "metrics.json").read_text())
        accuracy[engine] = (metrics["test_accuracy"], metrics["test_reversed_accuracy"])
    # KL's defaults after 4 epochs: random .98, reversed .95 (keras engine)
    assert accuracy["keras"][0] > 0.95 and accuracy["keras"][1] > 0.94, accuracy
    for native, keras in zip(accuracy["native"], accuracy["keras"]):
        assert native > keras - 0.02, accuracy
