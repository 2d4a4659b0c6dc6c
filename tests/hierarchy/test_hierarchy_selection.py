"""Best-epoch selection and early stopping on validation (issue 24, item 2): the unit,
the tables a run writes, and a killed and resumed run selecting the same epoch."""

import json
import math

import numpy as np
import pytest

from cli_process import interrupted
from keras_gauss.cli import main
from keras_gauss.hierarchy import hierarchy_from_parents
from keras_gauss.hierarchy.split import drop_root, ganea_split
from keras_gauss.hierarchy.selection import BestEpoch
from run_files import assert_same_run
from scripted_selection import SCRIPTED


def test_best_epoch_keeps_the_best_weights_and_stops_after_patience():
    best = BestEpoch(patience=3)
    scores = [0.2, 0.6, 0.5, 0.6, 0.7, 0.1, 0.1, 0.1]
    stops = [best.update(e, s, [np.full(3, float(e))]) for e, s in enumerate(scores)]
    # Epoch 3 ties epoch 1 (no improvement); epoch 4 improves; 5, 6, 7 do not.
    assert stops == [False] * 7 + [True]
    assert best.best_epoch == 4 and best.weights[0].tolist() == [4.0] * 3
    assert best.summary()["stopped_early"] and best.stopped_epoch == 7
    assert best.summary()["best_epoch"] == 5  # counted from 1 in what the run records


def test_without_patience_it_only_selects_and_nan_never_wins():
    best = BestEpoch(patience=None)
    assert not any(best.update(e, s, [np.zeros(1)]) for e, s in
                   enumerate([math.nan, 0.3, math.nan, 0.2]))
    assert best.best_epoch == 1
    assert best.summary()["history"] == [None, 0.3, None, 0.2]


def test_state_and_arrays_restore_the_selection():
    best = BestEpoch(patience=2)
    for e, s in enumerate([0.1, 0.4, 0.3]):
        best.update(e, s, [np.arange(4.0) + e, np.ones((2, 2)) * e])
    state = json.loads(json.dumps(best.state()))  # as a checkpoint saves it
    again = BestEpoch(patience=2)
    again.restore(state, {**best.arrays(), "table/0": np.zeros(3)})
    assert (again.best_epoch, again.best_score, again.history) == (1, 0.4, [0.1, 0.4, 0.3])
    for a, b in zip(again.weights, best.weights):
        np.testing.assert_array_equal(a, b)
    assert again.update(3, 0.35, [np.zeros(4), np.zeros((2, 2))])  # the patience continues


@pytest.mark.parametrize("patience", [0, -2, 1.5, True])
def test_bad_patience(patience):
    with pytest.raises(ValueError, match="--patience"):
        BestEpoch(patience=patience)


# --- through train-hierarchy ------------------------------------------------------

# --split ganea at 50% on the `edges` tree without its root (296 basic + 363 non-basic
# training edges): STEPS steps of 64 an epoch.
TRAIN = ["--split", "ganea", "--non-basic-percent", "50", "--dim", "4", "--batch-size", "64",
         "--seed", "1", "--reconstruction-nodes", "10", "--quiet", "--engine", "keras"]
_TREE = drop_root(hierarchy_from_parents({f"n{i}": [f"n{(i - 1) // 3}"] for i in range(1, 300)}),
                  "n0")
STEPS = -(-len(ganea_split(_TREE, 50, seed=1).train) // 64)
FIVE = ["--epochs", "5", "--patience", "4"]


@pytest.fixture(scope="module")
def five_epochs(edges, tmp_path_factory):
    """A run of `TRAIN` and `FIVE`, scored by `SCRIPTED` (the `scripted`
    fixture's scorer), uninterrupted: its best epoch is the second."""
    from keras_gauss.hierarchy import engines
    from scripted_selection import scripted_scorer

    out = tmp_path_factory.mktemp("selection") / "five"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engines, "validation_scorer", scripted_scorer)
        assert main(["train-hierarchy", "--edges", str(edges), *TRAIN, *FIVE,
                     "--out", str(out)]) == 0
    return out


def test_a_run_writes_the_best_epochs_tables(edges, five_epochs, tmp_path, scripted):
    argv = ["train-hierarchy", "--edges", str(edges), *TRAIN]
    assert main([*argv, "--epochs", "2", "--patience", "4", "--out", str(tmp_path / "b")]) == 0
    selection = json.loads((five_epochs / "metrics.json").read_text())["selection"]
    assert selection["history"] == SCRIPTED and selection["best_epoch"] == 2
    assert selection["epochs_trained"] == 5 and not selection["stopped_early"]
    # The five-epoch run kept the tables of its second epoch: those of a two-epoch run.
    assert_same_run(five_epochs, tmp_path / "b")


def test_training_stops_after_patience_epochs_without_improvement(edges, tmp_path, scripted):
    out = tmp_path / "run"
    assert main(["train-hierarchy", "--edges", str(edges), *TRAIN, "--epochs", "5",
                 "--patience", "2", "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["selection"]["history"] == SCRIPTED[:4]  # epochs 3 and 4 are not better
    assert metrics["selection"]["stopped_early"] and metrics["selection"]["best_epoch"] == 2


def test_killed_and_resumed_run_selects_the_same_epoch_bit_for_bit(edges, five_epochs, tmp_path,
                                                                   scripted):
    argv = ["train-hierarchy", "--edges", str(edges), *TRAIN, *FIVE]
    out = tmp_path / "b"
    # Stopped in the fourth epoch, after the best (second) epoch's tables were replaced
    # (in this process, as the scorer is; the SIGKILLs: test_hierarchy_resume.py).
    state = interrupted(argv, out, 3 * STEPS + 5)
    assert (state["epoch"], state["step"]) == (3, 5)
    assert state["selection"]["best_epoch"] == 1 and state["selection"]["history"] == SCRIPTED[:3]
    assert main([*argv, "--resume", str(out)]) == 0
    assert_same_run(five_epochs, out,
                    ("selection", "test_f1", "val_f1", "test_auc", "final_loss", "config"))
