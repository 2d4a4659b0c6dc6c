"""train-hierarchy: a user's own is-a pairs (TSV/CSV), their closure, bad files, and EDAM."""

import json

import numpy as np
import pytest

from keras_gauss.cli import main
from keras_gauss.hierarchy.closure import transitive_closure
from keras_gauss.hierarchy.edgefile import EdgeFileError, hierarchy_from_edge_file, read_edge_file


def tree_pairs(depth=6):
    """A complete binary tree of depth `depth` (node 'n1' the root, 'n{2i}', 'n{2i+1}' its children)."""
    return [(f"n{c}", f"n{c // 2}") for c in range(2, 2 ** (depth + 1))]


def test_tsv_with_header_comments_self_loops_and_duplicates(tmp_path):
    path = tmp_path / "animals.tsv"
    path.write_text("child\tparent\n# a comment\n\ndog\tmammal\n cat \t mammal\n"
                    "mammal\tanimal\ndog\tdog\ndog\tmammal\ndog\tanimal\n")
    edge_file = read_edge_file(path)
    assert edge_file.header == ("child", "parent")
    assert edge_file.pairs == (("dog", "mammal"), ("cat", "mammal"), ("mammal", "animal"),
                               ("dog", "animal"))
    assert edge_file.lines == (4, 5, 6, 9)
    assert (edge_file.self_loops, edge_file.duplicates) == (1, 1)
    assert "1 self-loops, 1 duplicate pairs dropped" in edge_file.summary()
    h, _ = hierarchy_from_edge_file(path)
    names = {(h.nodes[c], h.nodes[p]) for c, p in h.edges.tolist()}
    assert names == {("dog", "mammal"), ("cat", "mammal"), ("mammal", "animal"),
                     ("dog", "animal"), ("cat", "animal")}
    # dog -> animal is implied by dog -> mammal -> animal: not a reduction edge
    assert {(h.nodes[c], h.nodes[p]) for c, p in h.basic_edges.tolist()} == names - {
        ("dog", "animal"), ("cat", "animal")}


def test_csv_quoting_and_first_pair_is_data_when_its_names_recur(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('"hot dog",sandwich\nsandwich,food\n"fish, fried",food\n')
    edge_file = read_edge_file(path)
    assert edge_file.header is None
    assert edge_file.pairs[0] == ("hot dog", "sandwich") and edge_file.pairs[2][0] == "fish, fried"


def test_closure_of_a_random_dag_matches_repeated_squaring():
    rng = np.random.default_rng(0)
    n = 60
    edges = np.array([(c, p) for c in range(1, n) for p in rng.choice(c, size=min(c, 2), replace=False)])
    reach = np.zeros((n, n), bool)
    reach[edges[:, 0], edges[:, 1]] = True
    for _ in range(7):  # 2**7 > n: paths of any length
        reach |= (reach.astype(int) @ reach.astype(int)) > 0
    expected = np.argwhere(reach)
    assert np.array_equal(transitive_closure(edges, n), expected)


BAD_FILES = [
    ("missing", None, "no such file"),
    ("empty", b"", "no is-a pairs"),
    ("comments", b"# only\n\n# comments\n", "no is-a pairs"),
    # before: "the is-a pair child -> parent has no negative to train against ... (--drop-root
    # parent)", of a file that holds a header alone
    ("header_only", b"# my taxonomy\nchild\tparent\n",
     "is a header with no pairs below it or a single pair"),
    ("binary", b"a\tb\n\x00\x01\x02\xff", "line 2 is binary"),
    ("latin1", b"a\tb\ncaf\xe9\tb\n", "line 2 is not UTF-8"),
    ("one_field", b"a\tb\nb\tc\nlonely\n", "line 3: expected two names"),
    ("three_fields", b"a,b\nb,c,d\n", "line 2: expected two names"),
    ("empty_name", b"a,b\n,c\n", "line 2: expected two names"),
    ("cycle", b"a\tb\nx\ty\nb\tc\nc\ta\n", "cycle: "),
    ("tab_in_name", b'a,b\n"b\tc",d\n', "line 2: a name holds a TAB"),
    ("parent_first", b"# pairs\nParent\tChild\nanimal\tdog\nanimal\tcat\n",
     "line 2: the header 'Parent', 'Child' puts the general node first"),
]


@pytest.mark.parametrize("name, content, message", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_edge_files_name_the_file_and_line(tmp_path, name, content, message):
    path = tmp_path / f"{name}.tsv"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(EdgeFileError, match=message) as error:
        hierarchy_from_edge_file(path)
    assert str(path) in str(error.value)


def test_cycle_error_names_the_cycle_and_its_lines(tmp_path):
    path = tmp_path / "cycle.tsv"
    path.write_text("a\tb\nx\ty\nb\tc\nc\ta\n")
    with pytest.raises(EdgeFileError) as error:
        hierarchy_from_edge_file(path)
    message = str(error.value)
    cycle = message.split("cycle: ")[1].split(" (")[0].split(" -> ")
    assert cycle[0] == cycle[-1] and sorted(cycle[:-1]) == ["a", "b", "c"]
    assert all(f"line {n}" in message for n in (1, 3, 4)) and "line 2" not in message


@pytest.mark.parametrize("name, content, args, message", [
    *[(n, c, [], m) for n, c, m in BAD_FILES],
    ("tree", None, ["--root", "zebra"], "--root 'zebra' is not a node of"),
    ("tree", None, ["--root", "n64"], "empty subtree"),
    # the README's example: mammal and animal are related to every node, so the pair
    # has no negative (the trainers failed on it after preparing, naming ids)
    ("single_top_child", b"dog\tmammal\ncat\tmammal\nmammal\tanimal\n", [],
     "the is-a pair mammal -> animal has no negative to train against: every node is an "
     "ancestor or a descendant of both mammal and animal (a top node with a single child); "
     "give a node unrelated to them, or leave out the top node animal (--drop-root animal)."),
], ids=[b[0] for b in BAD_FILES] + ["unknown_root", "leaf_root", "single_top_child"])
def test_train_hierarchy_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, name, content,
                                                              args, message):
    path = tmp_path / f"{name}.tsv"
    if name == "tree":
        path.write_text("".join(f"{c}\t{p}\n" for c, p in tree_pairs()))
    elif content is not None:
        path.write_bytes(content)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        main(["train-hierarchy", "--edges", str(path), "--out", str(out), *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("keras-gauss train-hierarchy: error: ") and message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ([path.name] if path.exists() else [])


def test_a_taxonomy_of_two_pairs_trains_and_says_its_steps(tmp_path, capsys):
    # 2 training edges: batches of 1, so 2 steps an epoch (the line said 8)
    path = tmp_path / "tiny.tsv"
    path.write_text("dog\tmammal\ncat\tmammal\n")
    assert main(["train-hierarchy", "--edges", str(path), "--out", str(tmp_path / "run"),
                 "--dim", "2", "--epochs", "1"]) == 0
    assert "batches of 1 edges, so that an epoch takes 2 steps" in capsys.readouterr().out


def test_names_beyond_ascii_are_written_in_utf8_whatever_the_locale(tmp_path, monkeypatch):
    """nodes.tsv is UTF-8 (as the run's readers expect) under a locale that is not:
    pathlib's default encoding made ASCII, as `LC_ALL=C PYTHONUTF8=0` makes it."""
    import io

    from keras_gauss.runs import load_run

    path = tmp_path / "tiny.tsv"
    path.write_text("café\tmammal\n狗\tmammal\n", encoding="utf-8")
    monkeypatch.setattr(io, "text_encoding", lambda encoding, stacklevel=2: encoding or "ascii")
    assert main(["train-hierarchy", "--edges", str(path), "--out", str(tmp_path / "run"),
                 "--dim", "2", "--epochs", "1", "-q"]) == 0
    assert sorted(load_run(tmp_path / "run").words) == ["café", "mammal", "狗"]
    # `neighbors café` there: the argument's UTF-8 bytes (kept as surrogates by an
    # ASCII locale) name the word; what ASCII cannot hold is printed escaped
    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr("sys.stdout", ascii_out)
    assert main(["neighbors", str(tmp_path / "run"), "caf\udcc3\udca9", "--k", "2"]) == 0
    ascii_out.flush()
    rows = ascii_out.buffer.getvalue().decode("ascii").splitlines()
    assert sorted(row.split()[0] for row in rows[1:]) == ["\\u72d7", "mammal"]


def test_train_hierarchy_on_a_csv_tree(tmp_path, capsys):
    path = tmp_path / "tree.csv"
    path.write_text("child,parent\n" + "".join(f"{c},{p}\n" for c, p in tree_pairs()))
    out = tmp_path / "run"
    assert main(["train-hierarchy", "--edges", str(path), "--out", str(out), "--split", "reduction",
                 "--dim", "4", "--epochs", "2", "--batch-size", "64"]) == 0
    printed = capsys.readouterr().out
    # 126 reduction edges, all eligible: 13 + 13 held out, and the output says why
    assert "13 validation + 13 test" in printed
    assert "default size: the smaller of 4,000 and 10% of 126 eligible edges" in printed
    assert "closure lookup" in printed and "depth difference" in printed
    metrics = json.loads((out / "metrics.json").read_text())
    evaluation = metrics["evaluation"]
    assert evaluation["split"] == "reduction"
    assert set(evaluation["model"]) == {"random", "reversed", "sibling"}
    assert evaluation["closure_lookup"]["random"]["test_accuracy"] == 0.5  # nothing to look up
    assert json.loads((out / "run.json").read_text())["kind"] == "hierarchy"
    # The split files name nodes; their positives are the held-out edges, none in train.tsv.
    train = {tuple(line.split("\t")) for line in (out / "split" / "train.tsv").read_text().splitlines()}
    rows = [line.split("\t") for line in (out / "split" / "test.tsv").read_text().splitlines()]
    positives = {(a, b) for a, b, label in rows if label == "1"}
    assert len(positives) == evaluation["sizes"]["test"][0] and not positives & train
    assert all(a.startswith("n") for a, _, _ in rows)


def test_edam_ontology_from_its_package(tmp_path):
    pytest.importorskip("edam_ontology")
    from keras_gauss.hierarchy.benchmark_data import write_edam_edges

    path = tmp_path / "edam.tsv"
    assert write_edam_edges(path) > 3000
    h, edge_file = hierarchy_from_edge_file(path)
    assert edge_file.header == ("child", "parent")
    assert h.num_nodes > 2000 and len(h.edges) > 3 * len(h.basic_edges)
    sub, _ = hierarchy_from_edge_file(path, root="operation_0004")  # "Operation"
    assert 300 < sub.num_nodes < h.num_nodes


def _train_tree(tmp_path, name, *args):
    path = tmp_path / "tree.csv"
    if not path.exists():
        path.write_text("".join(f"{c},{p}\n" for c, p in tree_pairs()))
    out = tmp_path / name
    # the training settings of the other splits (KL on --split reduction has its own defaults)
    assert main(["train-hierarchy", "--edges", str(path), "--out", str(out), "--split", "reduction",
                 "--dim", "4", "--epochs", "3", "--batch-size", "64", "-q", "--energy", "kl",
                 "--init", "tree", "--max-variance", "5", "--learning-rate", "0.3",
                 "--checkpoint-every", "0", *args]) == 0
    return out


def _split_parts(out, run):
    """`{part: (positives, negatives)}` as `(n, 2)` id arrays, read back from `split/*.tsv`."""
    parts = {}
    for path in (out / "split").glob("*.tsv"):
        if path.stem == "train":
            continue
        rows = [line.split("\t") for line in path.read_text().splitlines()]
        def pick(label, rows=rows):
            return run.ids([n for a, b, kind in rows if kind == label for n in (a, b)])

        parts[path.stem] = (pick("1").reshape(-1, 2), pick("0").reshape(-1, 2))
    return parts


def test_generality_is_the_energy_of_the_run_everywhere(tmp_path, capsys, monkeypatch):
    """--generality BETA: metrics, load_run, is_a, neighbors and the served signature all score
    `-KL(N_x || N_y) + BETA * (log det Sigma_y - log det Sigma_x)`; BETA 0 is the plain KL run;
    without the flag, KL on --split reduction takes its default 0.3 (`SPLIT_DEFAULTS`)."""
    import tensorflow as tf

    from keras_gauss.hierarchy import split as split_module

    # thresholds chosen on the validation edges alone, as the reference below
    # does (the small-taxonomy pooling has its own tests: test_small_taxonomy.py)
    pooled = split_module.with_training_pairs
    monkeypatch.setattr(split_module, "with_training_pairs",
                        lambda split, hierarchy, seed=0, given=False: pooled(
                            split, hierarchy, seed, minimum=0, given=given))

    from keras_gauss.export import export_run
    from keras_gauss.hierarchy.evaluate import reconstruction
    from keras_gauss.metrics import threshold_classification
    from keras_gauss.runs import load_run

    beta = 0.1
    plain, zero, gen = (_train_tree(tmp_path, "plain"), _train_tree(tmp_path, "zero", "--generality", "0"),
                        _train_tree(tmp_path, "gen", "--generality", str(beta)))
    printed = capsys.readouterr().out
    assert "keras-gauss (KL + 0.1 gen.)" in printed and printed.count("keras-gauss (KL)") == 1
    assert "keras-gauss (KL + 0.3 gen.)" in printed  # the split's default
    metrics = {d.name: json.loads((d / "metrics.json").read_text()) for d in (plain, zero, gen)}
    assert [metrics[n]["config"]["generality"] for n in ("plain", "zero", "gen")] == [0.3, 0.0, beta]
    assert json.loads((gen / "run.json").read_text())["generality"] == beta
    run, base = load_run(gen), load_run(zero)
    assert (run.generality, base.generality, load_run(plain).generality) == (beta, 0.0, 0.3)
    for other in (base, load_run(plain)):  # training is unchanged
        np.testing.assert_array_equal(run.means, other.means)
        np.testing.assert_array_equal(run.variances, other.variances)
    means, variances = run.means.astype(np.float64), run.variances.astype(np.float64)

    def reference(pairs, b=beta):  # plain NumPy, one pair at a time
        out = []
        for s, g in pairs:
            ms, vs, mg, vg = means[s], variances[s], means[g], variances[g]
            kl = 0.5 * (np.sum(vs / vg) + np.sum((mg - ms) ** 2 / vg) - len(ms)
                        + np.log(np.prod(vg)) - np.log(np.prod(vs)))
            out.append(-kl + b * (np.log(np.prod(vg)) - np.log(np.prod(vs))))
        return np.array(out)

    # the validation thresholds and test accuracies of every kind of negatives
    parts = _split_parts(gen, run)
    evaluation = metrics["gen"]["evaluation"]["model"]
    for kind, suffix in (("random", ""), ("reversed", "_reversed"), ("sibling", "_sibling")):
        (vp, vn), (tp, tn) = parts[f"val{suffix}"], parts[f"test{suffix}"]
        expected = threshold_classification(reference(vp), reference(vn), reference(tp), reference(tn))
        assert evaluation[kind]["test_accuracy"] == expected["test_accuracy"], kind
        assert evaluation[kind]["val_accuracy"] == expected["val_accuracy"], kind
        assert evaluation[kind]["threshold"] == pytest.approx(expected["threshold"], abs=1e-9), kind
    assert metrics["gen"]["threshold"] == pytest.approx(evaluation["random"]["threshold"])
    assert metrics["gen"]["threshold"] != metrics["zero"]["threshold"]

    # Run.energy and is_a
    pairs = np.concatenate(parts["test"] + parts["test_reversed"])
    a, b = [run.words[i] for i in pairs[:, 0]], [run.words[i] for i in pairs[:, 1]]
    np.testing.assert_allclose(run.energy(a, b), reference(pairs), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(run.is_a(a, b), reference(pairs) >= metrics["gen"]["threshold"])
    # reversed pairs (general side the narrower one, once trained) score lower than with beta 0
    positives, reversed_ = parts["test_reversed"]
    change = lambda p: (run.energy([run.words[i] for i in p[:, 0]], [run.words[i] for i in p[:, 1]])  # noqa: E731
                        - base.energy([run.words[i] for i in p[:, 0]], [run.words[i] for i in p[:, 1]]))
    assert change(reversed_).mean() < 0 < change(positives).mean()

    # reconstruction MAP
    from keras_gauss.hierarchy.edgefile import hierarchy_from_edge_file

    hierarchy, _ = hierarchy_from_edge_file(tmp_path / "tree.csv")
    recon = reconstruction(hierarchy, means, variances, max_nodes=2000, generality=beta)
    assert metrics["gen"]["map"] == pytest.approx(recon["map"], rel=1e-12)
    assert metrics["gen"]["map"] != metrics["zero"]["map"]

    # neighbors (Run and the CLI) rank by the same energy
    query = "n20"
    ids = [i for i in range(len(run.words)) if run.words[i] != query]
    scores = reference([(run.index[query], i) for i in ids])
    top = [run.words[ids[j]] for j in np.argsort(-scores, kind="stable")[:5]]
    assert [w for w, _ in run.neighbors(query, k=5)] == top
    assert main(["neighbors", str(gen), query, "--k", "5"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.strip().splitlines()[1:]] == top

    # the served signature gives the same numbers
    served = tf.saved_model.load(str(export_run(gen, tmp_path / "serve", k=5)))
    out = served.signatures["energy"](query=tf.constant(a), candidate=tf.constant(b))
    np.testing.assert_allclose(out["energy"].numpy(), run.energy(a, b), rtol=1e-5, atol=1e-5)
    near = served.signatures["neighbors"](query=tf.constant([query]))
    np.testing.assert_allclose(near["energies"].numpy()[0], [e for _, e in run.neighbors(query, k=5)],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("value", ["-0.1", "nan", "inf"])
def test_bad_generality_is_one_line_and_writes_nothing(tmp_path, capsys, value):
    path = tmp_path / "tree.tsv"
    path.write_text("".join(f"{c}\t{p}\n" for c, p in tree_pairs(3)))
    with pytest.raises(SystemExit) as exit_info:
        main(["train-hierarchy", "--edges", str(path), "--out", str(tmp_path / "run"),
              "--generality", value])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "--generality" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree.tsv"]


def test_a_resume_without_the_edges_file_asks_for_it(tmp_path, capsys):
    # the Ctrl-C line says `--resume DIR` "and the same settings": --edges among them
    with pytest.raises(SystemExit) as info:
        main(["train-hierarchy", "--resume", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "not both" not in err
    assert err.strip().endswith(f"(a given split) (--resume {tmp_path / 'run'}: the files the "
                                "run started with).")
