"""Ganea et al.'s WordNet split (`--split ganea`) and splits given as files (issue 24, item 1)."""

import json
import os

import numpy as np
import pytest

from cli_errors import cli_error
from keras_gauss.cli import main
from keras_gauss.hierarchy import hierarchy_from_parents
from keras_gauss.hierarchy.edgefile import EdgeFileError
from keras_gauss.hierarchy.given_split import read_given_split
from keras_gauss.hierarchy.split import drop_root, ganea_split
from keras_gauss.runs import load_run


def keys(n, edges):
    return np.asarray(edges, np.int64)[:, 0] * n + np.asarray(edges, np.int64)[:, 1]


@pytest.fixture(scope="module")
def mammals(mammal):
    return drop_root(mammal, "mammal.n.01")


def test_wordnet_nouns_without_the_root_have_the_published_sizes(full):
    # dalab/hyperbolic_cones data/maxn/noun_closure.tsv.*: 82,114 nodes,
    # 661,127 closure edges; train_0percent 84,363 lines, train_10percent
    # 142,039, valid and test 28,838 each with 288,380 negatives.
    h = drop_root(full, "entity.n.01")
    assert (h.num_nodes, len(h.edges), len(h.basic_edges)) == (82114, 661127, 84363)
    s = ganea_split(h, 10, seed=0)
    assert (len(s.train), len(s.val), len(s.test)) == (142039, 28838, 28838)
    assert len(s.val_neg) == len(s.test_neg) == 288380


@pytest.mark.parametrize("percent", [0, 10, 50])
def test_training_is_the_reduction_plus_a_percent_of_the_rest(mammals, percent):
    h = mammals
    n = h.num_nodes
    s = ganea_split(h, percent, seed=3)
    basic, closure = set(keys(n, h.basic_edges)), set(keys(n, h.edges))
    non_basic = closure - basic
    train, val, test = (set(keys(n, a)) for a in (s.train, s.val, s.test))
    assert basic <= train <= closure  # every basic edge, nothing outside the closure
    assert len(train - basic) == int(percent * len(non_basic) / 100)
    assert len(val) == len(test) == len(s.val) == int(5 * len(non_basic) / 100)
    assert val | test <= non_basic
    assert not (train & val) and not (train & test) and not (val & test)
    assert (s.num_basic, s.eligible) == (len(basic), len(non_basic))


def test_ten_negatives_per_held_out_edge_none_in_the_closure(mammals):
    h = mammals
    s = ganea_split(h, 25, seed=1)
    for pos, neg in ((s.val, s.val_neg), (s.test, s.test_neg)):
        assert len(neg) == 10 * len(pos)
        assert not h.index.contains(neg[:, 0], neg[:, 1]).any()
        assert not (neg[:, 0] == neg[:, 1]).any()
        per_edge = neg.reshape(len(pos), 10, 2)
        child_side, parent_side = per_edge[:, :5], per_edge[:, 5:]
        assert (child_side[:, :, 1] == pos[:, None, 1]).all()  # (w, p): the child corrupted
        assert (parent_side[:, :, 0] == pos[:, None, 0]).all()  # (c, w): the parent corrupted
        for side, col in ((child_side, 0), (parent_side, 1)):  # distinct within each five
            drawn = np.sort(side[:, :, col], axis=1)
            assert (drawn[:, 1:] != drawn[:, :-1]).all()


def test_held_out_edges_depend_on_the_seed_only(mammals):
    a, b = ganea_split(mammals, 0, seed=5), ganea_split(mammals, 50, seed=5)
    for name in ("val", "val_neg", "test", "test_neg"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.val, ganea_split(mammals, 0, seed=6).val)


def test_a_tiny_taxonomy_takes_every_allowed_negative():
    # A chain a <- b <- c <- d <- e: few nodes to corrupt with.
    h = hierarchy_from_parents({"b": ["a"], "c": ["b"], "d": ["c"], "e": ["d"], "x": ["a"]})
    s = ganea_split(h, 0, seed=0, held_out_percent=20)
    assert len(s.val) == len(s.test) == 1
    for neg in (s.val_neg, s.test_neg):
        assert not h.index.contains(neg[:, 0], neg[:, 1]).any()
        assert len(np.unique(keys(h.num_nodes, neg))) == len(neg)


@pytest.mark.parametrize("percent", [-1, 90.5, float("nan")])
def test_percent_out_of_range(mammals, percent):
    with pytest.raises(ValueError, match="--non-basic-percent"):
        ganea_split(mammals, percent)


def test_drop_root_only_takes_a_top_node(mammal):
    with pytest.raises(ValueError, match="has ancestors"):
        drop_root(mammal, "dog.n.01")
    with pytest.raises(ValueError, match="not a node"):
        drop_root(mammal, "entity.n.01")
    h = drop_root(mammal, "mammal.n.01")
    # female_mammal.n.01 and tusker.n.01 had no other edge: 1,179 nodes, as dalab's mammal vocab.
    assert "mammal.n.01" not in h.node_ids and "tusker.n.01" not in h.node_ids
    assert h.num_nodes == mammal.num_nodes - 3 == 1179
    assert len(h.edges) == len(mammal.edges) - (mammal.num_nodes - 1)
    assert (h.index.num_ancestors + h.index.num_descendants > 0).all()


# --- given splits --------------------------------------------------------------------


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.fixture
def files(tmp_path):
    train = _write(tmp_path / "train.tsv", ["child\tparent", "b\ta", "c\tb", "d\tc", "e\ta"])
    val = _write(tmp_path / "val.tsv", ["c\ta\t1", "a\tc\t0", "e\tb\t0"])
    test = _write(tmp_path / "test.tsv", ["d\ta\t1", "d\tb\t1", "a\td\t0", "b\te\t0", "b\te\t0"])
    return train, val, test


def test_given_split_trains_exactly_the_given_pairs(files):
    given = read_given_split(*files)
    h, s = given.hierarchy, given.split

    def names(pairs):
        return [(h.nodes[c], h.nodes[p]) for c, p in pairs]

    assert sorted(names(s.train)) == [("b", "a"), ("c", "b"), ("d", "c"), ("e", "a")]
    assert len(h.edges) == 7  # the closure is the hierarchy's, not the training pairs
    assert names(s.val) == [("c", "a")] and names(s.val_neg) == [("a", "c"), ("e", "b")]
    assert names(s.test) == [("d", "a"), ("d", "b")] and len(s.test_neg) == 3  # repeats kept
    assert s.method == "given" and "no closure edge added" in given.summary


def test_a_given_split_says_what_it_prepares(files, tmp_path, capsys):
    train, val, test = files
    assert main(["train-hierarchy", "--train-edges", str(train), "--val-edges", str(val),
                 "--test-edges", str(test), "--dim", "2", "--epochs", "1",
                 "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert f"preparing {train}..." in out and "WordNet" not in out


def test_resume_of_a_given_split_takes_the_same_files_only(tmp_path, capsys, monkeypatch):
    # The identity of a run on a given split is every pair of its files, in
    # order: each change below keeps the nodes and the closure of the
    # training pairs (all the digest held before), and is refused.
    import keras_gauss.checkpoint as checkpoint

    lines = {"train.tsv": ["b\ta", "c\tb", "d\tc", "e\ta", "c\ta"],  # c-a: implied
             "val.tsv": ["d\ta\t1", "a\td\t0", "e\tb\t0", "b\te\t0"],
             "test.tsv": ["d\tb\t1", "b\td\t0"]}
    paths = {name: _write(tmp_path / name, text) for name, text in lines.items()}
    argv = ["train-hierarchy", "--train-edges", paths["train.tsv"], "--val-edges",
            paths["val.tsv"], "--test-edges", paths["test.tsv"], "--dim", "2", "--epochs", "3",
            "--batch-size", "2", "--quiet"]
    out = tmp_path / "run"
    save = checkpoint.Checkpointer.save

    def save_and_stop(self, *args):  # as a kill after the first checkpoint
        save(self, *args)
        self.wait()
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint.Checkpointer, "save", save_and_stop)
    with pytest.raises(SystemExit) as info:
        main([str(a) for a in argv] + ["--out", str(out), "--checkpoint-every", "1e-9"])
    assert info.value.code == 130 and (out / ".checkpoint").is_dir()
    capsys.readouterr()
    monkeypatch.undo()
    resume = [str(a) for a in argv] + ["--resume", str(out)]
    for name, changed in [
            ("train.tsv", lines["train.tsv"][::-1]),  # the training order
            ("train.tsv", lines["train.tsv"][:-1]),  # an implied pair dropped
            ("val.tsv", ["d\ta\t1", "a\td\t0", "e\tb\t1", "b\te\t0"]),  # a label flipped
            ("val.tsv", ["d\ta\t1", "e\tb\t0", "b\te\t0"]),  # a negative dropped
            ("test.tsv", ["d\tb\t1", "b\td\t0", "b\td\t0"])]:  # a negative repeated
        _write(paths[name], changed)
        err = cli_error(resume, capsys)
        assert "differs from the one the run started on" in err, (name, changed, err)
        _write(paths[name], lines[name])
    assert main(resume) == 0 and not (out / ".checkpoint").exists()


@pytest.mark.parametrize("which, lines, message", [
    (1, ["c\ta\t1", "a\tz\t0"], "val.tsv: line 2: 'z' is not a node of --train-edges"),
    (1, ["c\tb\t1", "a\tc\t0"], "val.tsv: line 1: (c, b) is also a training pair"),
    (2, ["c\ta\t1", "a\td\t0"], "test.tsv: line 1: the positive (c, a) is also in --val-edges"),
    (2, ["d\ta\t1", "a\tc\t1"], "test.tsv: line 2: (a, c) is labelled 1 here and 0 in --val-edges"),
    (2, ["d\ta\t1", "a\td\tyes"], "test.tsv: line 2: the label must be 1 (is-a) or 0"),
    (2, ["d\ta\t1", "a\td"], "test.tsv: line 2: expected child<TAB>parent<TAB>label"),
    (2, ["d\ta\t1"], "test.tsv: needs both positives (label 1) and negatives"),
    (2, ["d\td\t0", "d\ta\t1"], "test.tsv: line 1: a self pair"),
    (2, ["d\ta\tyes"], "test.tsv: no labelled pairs: its only line, line 1 ('d\\ta\\tyes'), "
                       "is read as a header, its label not 1 or 0"),
])
def test_bad_given_splits_name_the_file_and_line(files, which, lines, message):
    paths = list(files)
    _write(paths[which], lines)
    with pytest.raises(EdgeFileError) as info:
        read_given_split(*paths)
    assert message in str(info.value)


@pytest.mark.parametrize("extra, message", [
    (["--val-edges", "VAL"], "--train-edges, --val-edges and --test-edges go together"),
    (["--val-edges", "VAL", "--test-edges", "TEST", "--split", "ganea"],
     "--split ganea does not apply to --train-edges"),
    (["--val-edges", "VAL", "--test-edges", "TEST", "--edges", "TRAIN"], "not both"),
    (["--val-edges", "VAL", "--test-edges", "BAD"], "bad.tsv: line 1: 'zz' is not a node"),
    (["--val-edges", "VAL", "--test-edges", "OVERLAP"],
     "overlap.tsv: line 2: the positive (c, a) is also in --val-edges"),
    (["--val-edges", "VAL", "--test-edges", "FIFO"],
     "--test-edges {FIFO}: a named pipe (FIFO), not a regular file"),
])
def test_given_split_bad_options_are_one_line_and_write_nothing(files, tmp_path, capsys, extra,
                                                                message):
    train, val, test = files
    bad = _write(tmp_path / "bad.tsv", ["zz\ta\t1", "a\tb\t0"])
    overlap = _write(tmp_path / "overlap.tsv", ["d\ta\t1", "c\ta\t1", "a\td\t0"])
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # no writer: reading it would hang
    names = {"VAL": str(val), "TEST": str(test), "TRAIN": str(train), "BAD": str(bad),
             "OVERLAP": str(overlap), "FIFO": str(fifo)}
    out = tmp_path / "run"
    err = cli_error(["train-hierarchy", "--train-edges", str(train), "--out", str(out),
                     *[names.get(a, a) for a in extra]], capsys)
    assert message.format(FIFO=fifo) in err, err
    assert not out.exists()


@pytest.mark.parametrize("args, message", [
    (["--split", "ganea"], "--split ganea needs --non-basic-percent"),
    (["--split", "ganea", "--non-basic-percent", "95"], "--non-basic-percent must lie in [0, 90]"),
    (["--split", "ganea", "--non-basic-percent", "-5"], "--non-basic-percent must lie in [0, 90]"),
    (["--non-basic-percent", "10"], "--non-basic-percent applies to --split ganea only"),
    (["--split", "ganea", "--non-basic-percent", "10", "--val-size", "100"],
     "--val-size does not apply to --split ganea"),
    (["--split", "ganea", "--non-basic-percent", "10", "--drop-root", "dog.n.01"],
     "--drop-root 'dog.n.01' has ancestors"),
    (["--patience", "-1"], "--patience must be an integer >= 0"),
])
def test_bad_ganea_options_are_one_line_and_write_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "run"
    err = cli_error(["train-wordnet", "--root", "mammal.n.01", "--out", str(out), *args], capsys)
    assert message in err, err
    assert not out.exists()


def test_ganea_run_is_written_scored_by_f1_and_loads(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train-wordnet", "--root", "mammal.n.01", "--split", "ganea",
                 "--non-basic-percent", "25", "--dim", "5", "--epochs", "3", "--batch-size",
                 "256", "--reconstruction-nodes", "20", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "root mammal.n.01 dropped: 1,179 nodes" in printed
    assert "training = the 1,176 basic edges (transitive reduction) + 1,046 of the 4,185" in printed
    assert "Not added to training: the other non-basic edges" in printed
    assert "test F1, --split ganea" in printed
    metrics = json.loads((out / "metrics.json").read_text())
    for key in ("test_f1", "val_f1", "test_auc", "test_accuracy", "f1_threshold"):
        assert 0 <= metrics[key] <= 1 or key == "f1_threshold", key
    assert metrics["evaluation"]["closure_lookup"]["random"]["test_f1"] == 1.0
    assert metrics["selection"]["monitor"] == "val_f1"
    assert metrics["selection"]["epochs_trained"] == 3
    run = load_run(out)
    assert "mammal.n.01" not in run.words and len(run.words) == 1179
    # The split's files train and score a run exactly (no closure added).
    again = tmp_path / "again"
    assert main(["train-hierarchy", "--train-edges", str(out / "split" / "train.tsv"),
                 "--val-edges", str(out / "split" / "val.tsv"), "--test-edges",
                 str(out / "split" / "test.tsv"), "--dim", "5", "--epochs", "1",
                 "--reconstruction-nodes", "20", "--out", str(again), "--quiet"]) == 0
    given = json.loads((again / "metrics.json").read_text())
    assert given["num_train_edges"] == metrics["num_train_edges"] == 1176 + 1046
    assert given["evaluation"]["sizes"]["test"] == metrics["evaluation"]["sizes"]["test"]
    assert load_run(again).kind == "hierarchy"


def test_containment_run_is_scored_loaded_and_served_with_its_energy(tmp_path):
    import tensorflow as tf

    from keras_gauss.export.serving import export_run
    from keras_gauss.hierarchy.evaluate import edge_scores

    edges = _write(tmp_path / "tree.tsv", [f"n{i}\tn{(i - 1) // 3}" for i in range(1, 121)])
    out = tmp_path / "run"
    assert main(["train-hierarchy", "--edges", str(edges), "--split", "ganea",
                 "--non-basic-percent", "25", "--energy", "containment", "--loss", "threshold",
                 "--margin", "0.25", "--dim", "3", "--epochs", "3", "--batch-size", "32",
                 "--reconstruction-nodes", "10", "--out", str(out), "--quiet"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["evaluation"]["energy"] == "containment"
    assert metrics["config"]["energy"] == "containment"
    run = load_run(out)
    assert run.energy_name == "containment"
    words = ["n5", "n1", "n40", "n2"]
    pairs = np.array([[run.words.index(a), run.words.index(b)] for a in words for b in words])
    means, variances = run.tables()
    want = edge_scores(means, variances, pairs, energy="containment")
    got = run.energy([run.words[i] for i in pairs[:, 0]], [run.words[j] for j in pairs[:, 1]])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    target = export_run(out, tmp_path / "serving")
    served = tf.saved_model.load(str(target)).signatures["energy"](
        query=tf.constant([run.words[i] for i in pairs[:, 0]]),
        candidate=tf.constant([run.words[j] for j in pairs[:, 1]]))["energy"].numpy()
    np.testing.assert_allclose(served, want, rtol=1e-4, atol=1e-6)
    assert run.is_a("n40", "n1") == (run.energy("n40", "n1") >= metrics["threshold"])
