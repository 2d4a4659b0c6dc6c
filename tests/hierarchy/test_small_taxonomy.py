"""A 43-edge taxonomy (tests/hierarchy/data/small_taxonomy.tsv) is handled honestly (issue 34).

Its default split holds out 5 + 5 edges: the run says so in one warning
line, chooses its threshold and best epoch on the training edges too, takes
8 steps an epoch, and ends with no false is-a to an unrelated top node and
each node's direct parent among its first 3 neighbours.
"""

import contextlib
import io
import json
import pathlib

import pytest

from keras_gauss import load_run
from keras_gauss.history import read_history
from keras_gauss.hierarchy.edgefile import read_edge_file
from keras_gauss.hierarchy.train import WordNetConfig
from keras_gauss.hierarchy.train import train_hierarchy

EDGES = pathlib.Path(__file__).parent / "data" / "small_taxonomy.tsv"
TOPS = {"animal": ("animal", "mammal", "bird", "fish"),
        "artifact": ("artifact", "tool", "furniture")}


def _ancestors(parents, node):
    found, stack = set(), [node]
    while stack:
        for parent in parents.get(stack.pop(), ()):
            if parent not in found:
                found.add(parent)
                stack.append(parent)
    return found


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("small") / "run"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        train_hierarchy(WordNetConfig(edges=str(EDGES)), out, verbose=2)
    return out, printed.getvalue()


def test_the_fixture_is_the_issues_case():
    assert len(read_edge_file(str(EDGES)).pairs) == 43


def test_one_warning_line_names_the_sizes(small_run):
    out, printed = small_run
    (warning,) = [line for line in printed.splitlines() if line.startswith("warning:")]
    assert "only 5 validation and 5 test edges" in warning and "85 training edges" in warning

    def strict(constant):  # JSON has no NaN or Infinity (the sibling baseline's -inf)
        raise ValueError(f"metrics.json holds {constant}")

    metrics = json.loads((out / "metrics.json").read_text(), parse_constant=strict)
    assert metrics["chosen_on"] == {"validation_edges": 5, "training_edges": 85}
    assert metrics["config"]["batch_size"] == 11  # 85 edges in 8 steps


def test_no_false_is_a_to_an_unrelated_top_node_and_the_parent_ranks_in_the_first_3(small_run):
    run = load_run(small_run[0])
    parents = {}
    for child, parent in read_edge_file(str(EDGES)).pairs:
        parents.setdefault(child, []).append(parent)
    false, missed = [], []
    for node in sorted(parents):
        ancestors = _ancestors(parents, node)
        (top,) = ancestors & set(TOPS)
        other = next(t for t in TOPS if t != top)
        false += [(node, general) for general in TOPS[other] if run.is_a(node, general)]
        if parents[node][0] not in [name for name, _ in run.neighbors(node, k=3)]:
            missed.append(node)
    assert not false, false
    assert not missed, missed


def test_the_first_epochs_are_stable(small_run):
    """Every epoch after the first ends below the first (one step an epoch of AdaGrad's
    first, learning-rate-long step made epoch 2's loss 10x epoch 1's)."""
    history = read_history(small_run[0])
    losses = history["loss"]
    assert len(losses) == 10 and all(b < losses[0] for b in losses[1:]), losses
    # the KL default misses one of the 180 pairs it chooses on (containment: none)
    assert history["val_accuracy"][-1] >= 0.99


def test_a_small_given_split_names_its_files_not_the_split_sizes(small_run, tmp_path):
    """With `--train-edges` the split is the files: `--val-size` is refused there, so the
    warning's remedy names `--val-edges` and `--test-edges` instead."""
    split = small_run[0] / "split"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        train_hierarchy(WordNetConfig(train_edges=str(split / "train.tsv"),
                                      val_edges=str(split / "val.tsv"),
                                      test_edges=str(split / "test.tsv"), epochs=1),
                        tmp_path / "given", verbose=2)
    (warning,) = [line for line in printed.getvalue().splitlines() if "warning" in line]
    assert "only 5 validation and 5 test edges" in warning
    assert "larger --val-edges and --test-edges files" in warning and "--val-size" not in warning
