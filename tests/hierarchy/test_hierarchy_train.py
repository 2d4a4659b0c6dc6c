"""train-wordnet and demo: run directories, metrics, bad input."""

import json
import shutil

import numpy as np
import pytest

from keras_gauss.hierarchy.config import learning_rate_schedule
from keras_gauss.hierarchy.train import WordNetConfig, train_wordnet
from keras_gauss.cli import main
from keras_gauss.runs import load_run
from cli_errors import cli_error
from gpu_settings import check_cpu_kept, unset

SMALL = dict(root="mammal.n.01", dim=5, epochs=2, batch_size=256, val_size=0.05,
             test_size=0.05, learning_rate=0.3, include_lemmas=False)


HYPERLEX = ("WORD1 WORD2 POS TYPE AVG_SCORE AVG_SCORE_0_10 STD\n"
            "dog mammal N hyp-2 5.5 9.2 0.4\nwhale mammal N hyp-1 5.0 8.3 0.4\n"
            "mammal dog N r-hyp-2 1.0 1.7 0.4\ncat dog N cohyp 0.5 0.8 0.4\n"
            "dog qwzx N no-rel 0.0 0.0 0.0\n")


@pytest.fixture(scope="module")
def mammal_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "mammals"
    hyperlex = out.parent / "hyperlex.txt"
    hyperlex.write_text(HYPERLEX)
    metrics = train_wordnet(WordNetConfig(**SMALL), out, hyperlex=hyperlex, verbose=0)
    hyperlex.unlink()
    return out, metrics


def test_run_directory_holds_model_vocabulary_and_metrics(mammal_run):
    out, metrics = mammal_run
    assert sorted(p.name for p in out.iterdir()) == [
        ".keras-gauss", "history.csv", "history.png", "metrics.json", "model.keras", "nodes.tsv",
        "run.json", "split"]
    saved = json.loads((out / "metrics.json").read_text())
    for key in ("test_accuracy", "val_accuracy", "threshold", "mean_rank", "map",
                "train_seconds", "config"):
        assert saved[key] is not None, key
    assert saved["config"]["root"] == "mammal.n.01"
    assert 0.5 <= saved["test_accuracy"] <= 1.0
    # No temporary directories are left beside the run.
    assert [p.name for p in out.parent.iterdir()] == ["mammals"]


def test_hyperlex_is_scored_with_kls_graded_settings_and_they_are_recorded(mammal_run, tmp_path):
    from keras_gauss.hierarchy import evaluate
    from keras_gauss.hierarchy.closure import build_hierarchy

    out, metrics = mammal_run
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["hyperlex_scoring"] == {"generality": 0.75, "sense_prior": 4.0}
    assert saved["hyperlex_coverage"] == 0.8
    run = load_run(out)
    hierarchy = build_hierarchy(root="mammal.n.01")
    assert list(hierarchy.nodes) == list(run.words)
    (tmp_path / "hl.txt").write_text(HYPERLEX)
    again = evaluate.hyperlex_spearman(tmp_path / "hl.txt", hierarchy, run.means, run.variances,
                                       generality=0.75, sense_prior=4.0)
    assert saved["hyperlex_spearman"] == pytest.approx(again["spearman"], abs=1e-12)


def test_evaluate_scores_hyperlex_on_a_saved_run_as_training_did(mammal_run, tmp_path, capsys):
    out, metrics = mammal_run
    run = tmp_path / "run"
    shutil.copytree(out, run)  # evaluate writes eval.json into the run
    (tmp_path / "hl.txt").write_text(HYPERLEX)
    assert main(["evaluate", str(run), "--hyperlex", str(tmp_path / "hl.txt"), "--quiet"]) == 0
    assert "graded  rho(KL)  coverage" in capsys.readouterr().out
    graded = json.loads((run / "eval.json").read_text())["graded"]["hl"]
    assert graded["n_covered"] == 4 and graded["n_pairs"] == 5
    assert graded["spearman"] == pytest.approx(metrics["hyperlex_spearman"], abs=1e-12)


def test_a_run_with_word_nodes_is_scored_on_the_synsets(tmp_path):
    from keras_gauss.hierarchy import evaluate
    from keras_gauss.hierarchy.closure import build_hierarchy

    (tmp_path / "hl.txt").write_text(HYPERLEX)
    config = WordNetConfig(**{**SMALL, "include_lemmas": None, "epochs": 1})  # the default: words
    metrics = train_wordnet(config, tmp_path / "run", hyperlex=tmp_path / "hl.txt", verbose=0)
    synsets = build_hierarchy("mammal.n.01")
    assert metrics["num_nodes"] == 3446 and metrics["config"]["include_lemmas"]
    held_out = [line.split("\t")[:2] for part in ("val", "test")
                for line in (tmp_path / "run" / "split" / f"{part}.tsv").read_text().splitlines()]
    assert {name for pair in held_out for name in pair} <= set(synsets.nodes)
    means, variances = load_run(tmp_path / "run").tables()
    alone = evaluate.reconstruction(synsets, means[:1182], variances[:1182], max_nodes=2000,
                                    seed=0, generality=0.1)  # words are not ranked
    assert (metrics["map"], metrics["reconstruction_queries"]) == (alone["map"], 1181)
    assert metrics["hyperlex_scoring"] == {"generality": 0.3}  # word 1's node, no sense prior


def test_saved_run_reloads_with_the_trained_tables(mammal_run):
    out, _ = mammal_run
    run = load_run(out)
    assert run.kind == "wordnet" and run.energy_name == "kl"  # the default energy
    means, variances = run.tables()
    assert means.shape == (len(run.words), 5)
    assert run.words[run.ids(["dog.n.01"])[0]] == "dog.n.01"
    config = WordNetConfig(**SMALL).resolved()
    assert np.linalg.norm(means, axis=1).max() <= config.max_norm + 1e-5
    assert variances.min() >= config.min_variance - 1e-7
    with pytest.raises(KeyError, match="cat.n.99"):
        run.ids(["cat.n.99"])


def test_training_learns_the_mammal_hierarchy(tmp_path):
    config = WordNetConfig(**{**SMALL, "epochs": 8, "dim": 10, "negatives": 3})
    metrics = train_wordnet(config, tmp_path / "run", verbose=0)
    # Random tables score ~0.5; a few epochs already separate true edges.
    assert metrics["test_accuracy"] > 0.75
    assert metrics["map"] > 0.2


def test_existing_run_is_refused_without_overwrite(mammal_run, capsys):
    out, _ = mammal_run
    with pytest.raises(SystemExit) as exit_info:
        main(["train-wordnet", "--out", str(out), "--root", "mammal.n.01"])
    assert exit_info.value.code == 2
    assert "--overwrite" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--root", "no_such.n.01"], "--root 'no_such.n.01' is not a WordNet noun synset"),
        (["--root", "dog.n.01", "--pos", "v"], "--root 'dog.n.01' is a noun synset, but --pos v "
         "embeds WordNet's verbs: give a verb synset such as 'change.v.01', or --pos n"),
        (["--root", "run.v.01"], "--root 'run.v.01' is a verb synset, but --pos n embeds"),
        (["--root", "puppy.n.01"], "empty subtree"),
        (["--dim", "0"], "--dim"),
        (["--min-variance", "2", "--max-variance", "1"], "--min-variance"),
        (["--min-variance", "1e-300"], "--min-variance 1e-300: the tables are float32"),
        (["--max-variance", "1e300"], "--max-variance 1e+300: the tables are float32"),
        (["--val-size", "0"], "--val-size"),
        (["--sibling-negatives", "1.5"], "--sibling-negatives"),
        (["--learning-rate-schedule", "step"], "--learning-rate-schedule"),
        (["--engine", "fused"], "--engine fused is gone: use --engine native"),
        (["--engine", "gpu"], "--engine must be native or keras, got 'gpu'."),
    ],
)
@pytest.mark.filterwarnings("error")  # a warning would be a second line
def test_bad_arguments_give_clear_errors(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["train-wordnet", "--out", str(tmp_path / "run"), *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("flag", [
    "--dim", "--epochs", "--patience", "--batch-size", "--negatives", "--sibling-negatives",
    "--margin", "--threshold", "--learning-rate", "--max-norm", "--min-variance",
    "--max-variance", "--val-size", "--test-size", "--reconstruction-nodes", "--seed",
    "--generality", "--non-basic-percent", "--checkpoint-every"])
def test_every_number_setting_is_checked_before_any_data_is_read(tmp_path, capsys, flag):
    # A negative value of every number flag is one line naming it, before the
    # (unreadable) edges file is read and before any training.
    edges = tmp_path / "edges.tsv"
    edges.write_text("one column only\n")
    split = ["--split", "ganea"] if flag == "--non-basic-percent" else []
    with pytest.raises(SystemExit) as exit_info:
        main(["train-hierarchy", "--edges", str(edges), "--out", str(tmp_path / "run"),
              *split, f"{flag}=-1"])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and len(err.splitlines()) == 1, err
    assert f"{flag} must" in err and "edges.tsv" not in err, err  # that flag, not a list
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edges.tsv"]


@pytest.mark.parametrize("flag", ["--val-size", "--test-size"])
def test_a_size_above_1_is_a_whole_number_of_edges(tmp_path, capsys, flag):
    # before: --val-size 1.5 held out 1 edge without a word
    edges = tmp_path / "edges.tsv"
    edges.write_text("one column only\n")
    for value in ("1.5", "1e300"):  # 1e300: the message printed its 301 digits
        err = cli_error(["train-hierarchy", "--edges", edges, "--out", tmp_path / "run",
                         f"{flag}={value}"], capsys)
        assert err.endswith(f"{flag} must be a number of edges (1, 2, ... 2147483647) or a "
                            f"fraction of them below 1, got {float(value):g}.")
    assert WordNetConfig(val_size=2.0, test_size=0.25).validate() is None


class _FailingOutput:
    """A stdout whose writes fail as a closed pipe or a full disk does."""

    def __init__(self, error):
        self.error = error

    def write(self, text):
        raise self.error

    def flush(self):
        raise self.error

    def isatty(self):
        return False


@pytest.mark.parametrize("error", [BrokenPipeError(32, "Broken pipe"),
                                   OSError(28, "No space left on device")])
def test_output_that_fails_never_loses_the_run(edges, tmp_path, capsys, monkeypatch, error):
    # `train-hierarchy ... | head -c 20`, `> /dev/full`: progress, phases and
    # the metrics table are dropped after one warning line; the run is written.
    import keras_gauss.callbacks.progress as progress

    monkeypatch.setattr(progress, "_warned", False, raising=False)
    capsys.readouterr()
    monkeypatch.setattr("sys.stdout", _FailingOutput(error))
    out = tmp_path / "run"
    assert main(["train-hierarchy", "--edges", str(edges), "--out", str(out), "--dim", "2",
                 "--epochs", "2", "--reconstruction-nodes", "20"]) == 0
    assert (out / ".keras-gauss").exists() and (out / "metrics.json").exists()
    err = capsys.readouterr().err.strip()
    assert err == f"keras-gauss: warning: output dropped: {error.strerror}; the job goes on"


def test_malformed_hyperlex_file_names_the_line(tmp_path, capsys):
    bad = tmp_path / "hyperlex.txt"
    bad.write_text("WORD1 WORD2 POS TYPE AVG_SCORE AVG_SCORE_0_10 STD\n"
                   "dog animal N hyp-1 5.5 9.1 0.2\n"
                   "cat animal N hyp-1 lots 9.0 0.2\n")
    with pytest.raises(SystemExit):
        main(["train-wordnet", "--out", str(tmp_path / "run"), "--root", "mammal.n.01",
              "--hyperlex", str(bad)])
    assert "line 3" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_hyperlex_without_wordnets_sense_counts_fails_before_training(tmp_path, capsys,
                                                                      monkeypatch):
    from keras_gauss.hierarchy import train as train_module
    from keras_gauss.hierarchy import wordnet

    def unreadable(data_dir=None, pos="n"):
        raise wordnet.WordNetUnavailableError("WordNet's index.sense ... cannot be read: gone")

    def never(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(wordnet, "read_sense_counts", unreadable)
    hyperlex = tmp_path / "hyperlex.txt"
    hyperlex.write_text(HYPERLEX)
    with monkeypatch.context() as patch:
        patch.setattr(train_module, "NativeHierarchyEngine", never)
        err = cli_error(["train-wordnet", "--out", tmp_path / "run", "--root", "mammal.n.01",
                         "--no-lemmas", "--hyperlex", hyperlex], capsys)
    assert "index.sense" in err and not (tmp_path / "run").exists()
    # containment's HyperLex score has no sense prior: it never reads them
    assert main(["train-wordnet", "--out", str(tmp_path / "box"), "--root", "mammal.n.01",
                 "--energy", "containment", "--epochs", "1", "--quiet",
                 "--hyperlex", str(hyperlex)]) == 0


@pytest.mark.parametrize("flag", ["--entailment", "--hyperlex"])
def test_a_benchmark_file_that_names_no_node_fails_before_training(tmp_path, capsys,
                                                                   monkeypatch, flag):
    # before: trained, wrote the run and left baroni2012_ap out of the table without a word
    from keras_gauss.hierarchy.engines import NativeHierarchyEngine

    def never(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(NativeHierarchyEngine, "build", never)
    path = tmp_path / "music.txt"
    path.write_text("piano\tmusic\tTrue\nsong\tpiano\tFalse\n" if flag == "--entailment" else
                    "piano music N hyp-1 5.5 9.1 0.2\nsong piano N cohyp 1.0 1.5 0.2\n")
    err = cli_error(["train-wordnet", "--out", tmp_path / "run", "--root", "mammal.n.01",
                     flag, path], capsys)
    assert err.endswith(f"{flag} {path}: none of its 2 pairs has both words in the hierarchy "
                        "(3,446 nodes); nothing to score.")  # synsets and words
    assert not (tmp_path / "run").exists()


def test_demo_writes_figure_and_model(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--epochs", "1"]) == 0
    assert (out / "synthetic_hierarchy.png").stat().st_size > 10_000
    metrics = json.loads((out / "metrics.json").read_text())
    assert 0.0 <= metrics["edge_accuracy"] <= 1.0
    assert "edge accuracy" in capsys.readouterr().out


@pytest.mark.parametrize("flag, value, message", [
    ("--seed", -4, "--seed must be >= 0, got -4."),  # before: numpy's traceback
    ("--seed", 2**32, f"--seed must be <= {2**31 - 1}, got {2**32}."),
    ("--epochs", 0, "--epochs must be >= 1, got 0."),
])
def test_demo_settings_are_one_line_before_anything_is_written(tmp_path, capsys, flag, value,
                                                               message):
    out = tmp_path / "demo"
    assert cli_error(["demo", "--out", out, flag, value], capsys).endswith(message)
    assert not out.exists()


def _epoch_negatives(edges, known, epochs=2):
    from keras_gauss.hierarchy.dataset import make_dataset

    ds = make_dataset(edges, known=known, batch_size=4096, negatives=5,
                      reversed_negatives=True, seed=7)
    return [np.concatenate([np.stack([x["neg_specific"], x["neg_general"]], -1) for x, _ in
                            ds.as_numpy_iterator()]) for _ in range(epochs)]


def test_negatives_come_from_training_knowledge_only(mammal):
    from keras_gauss.hierarchy import hierarchy_from_parents, split_edges
    from keras_gauss.hierarchy.data import training_edges

    split = split_edges(mammal, method="reduction", seed=0)
    held_out = np.concatenate([split.val, split.test])
    n = mammal.num_nodes

    def keys(e):
        return e[:, 0].astype(np.int64) * n + e[:, 1]

    assert not np.isin(keys(held_out), keys(split.train)).any()  # no held-out training positive
    # The hierarchy in which the held-out edges do not exist (its edges are the
    # training edges, same node ids), trained on all its edges.
    names = mammal.nodes
    parents = {name: [] for name in names}
    for c, p in split.train.tolist():
        parents[names[c]].append(names[p])
    without = hierarchy_from_parents(parents, nodes=names)
    assert np.array_equal(without.edges, split.train)

    with_held_out = _epoch_negatives(*training_edges(mammal, split))
    never_existed = _epoch_negatives(*training_edges(without, None))
    for a, b in zip(with_held_out, never_existed):
        assert np.array_equal(a, b)
    # The sampler does draw held-out edges as negatives: it cannot know them.
    drawn = np.concatenate([e.reshape(-1, 2) for e in with_held_out])
    assert np.isin(keys(held_out), keys(drawn)).any()
    # Knowing the full closure (the old behaviour) avoids them, so it draws other negatives.
    full_knowledge = _epoch_negatives(split.train, mammal)
    assert not np.array_equal(full_knowledge[0], with_held_out[0])


def test_metrics_hold_every_negative_kind_and_the_baselines(mammal_run):
    out, metrics = mammal_run
    evaluation = metrics["evaluation"]
    assert evaluation["split"] == "closure"
    for scorer in ("model", "closure_lookup", "depth_difference"):
        assert set(evaluation[scorer]) == {"random", "reversed", "sibling"}, scorer
    # Every closure-split test edge follows from training edges: a lookup passes it.
    assert evaluation["closure_lookup"]["random"]["test_accuracy"] == 1.0
    assert metrics["test_reversed_accuracy"] == evaluation["model"]["reversed"]["test_accuracy"]


def test_split_files_let_anyone_rescore_the_run(mammal_run):
    from keras_gauss.hierarchy.closure import closure_index
    from keras_gauss.metrics import threshold_classification

    out, metrics = mammal_run
    nodes = (out / "nodes.tsv").read_text().splitlines()
    ids = {name: i for i, name in enumerate(nodes)}

    def read(name):
        rows = [line.split("\t") for line in (out / "split" / f"{name}.tsv").read_text().splitlines()]
        pairs = np.array([[ids[r[0]], ids[r[1]]] for r in rows])
        labels = np.array([r[2] == "1" for r in rows]) if len(rows[0]) == 3 else None
        return pairs, labels

    train, _ = read("train")
    known = closure_index(train, len(nodes))
    for kind, suffix in (("random", ""), ("reversed", "_reversed"), ("sibling", "_sibling")):
        (vp, vl), (tp, tl) = read(f"val{suffix}"), read(f"test{suffix}")
        scores = [known.contains(p[:, 0], p[:, 1]).astype(float) for p in (vp, tp)]
        result = threshold_classification(scores[0][vl], scores[0][~vl], scores[1][tl], scores[1][~tl])
        assert result["test_accuracy"] == metrics["evaluation"]["closure_lookup"][kind]["test_accuracy"]
        assert len(tp) == sum(metrics["evaluation"]["sizes"][f"test{suffix}"])


def test_subtree_default_split_fits_and_says_so(tmp_path, capsys):
    # Used to fail: "cannot hold out 4000 + 4000 edges" for the 5,360 eligible mammal edges.
    out = tmp_path / "run"
    assert main(["train-wordnet", "--root", "mammal.n.01", "--epochs", "1", "--dim", "2",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "536 validation + 536 test" in printed
    assert "the smaller of 4,000 and 10% of 5,360 eligible edges" in printed
    assert json.loads((out / "metrics.json").read_text())["evaluation"]["sizes"]["test"] == [536, 536]


@pytest.mark.parametrize("kind", ["linear", "cosine"])
def test_learning_rate_schedule_follows_its_formula(kind):
    schedule = learning_rate_schedule(kind, 2.0, 40)
    for t in (0, 1, 13, 20, 39, 40, 55):
        u = min(t, 40) / 40
        want = 2.0 * (1 - u) if kind == "linear" else 2.0 * (1 + np.cos(np.pi * u)) / 2
        assert float(schedule(t)) == pytest.approx(want, abs=1e-6), t
    assert learning_rate_schedule("constant", 2.0, 40) == 2.0
    with pytest.raises(ValueError, match="--learning-rate-schedule"):
        learning_rate_schedule("exponential", 2.0, 40)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    path = tmp_path_factory.mktemp("tree") / "edges.tsv"
    path.write_text("".join(f"n{i}\tn{(i - 1) // 3}\n" for i in range(1, 120)))
    return path


@pytest.mark.parametrize("loss", ["ranking", "threshold"])
def test_schedule_decays_over_the_run_and_changes_only_decaying_runs(tree, tmp_path, loss):
    argv = ["train-hierarchy", "--edges", str(tree), "--dim", "4", "--epochs", "2",
            "--batch-size", "32", "--val-size", "0", "--test-size", "0", "--loss", loss,
            "--learning-rate", "0.5", "--reconstruction-nodes", "5", "--quiet",
            "--checkpoint-every", "0"]
    runs = {}
    for name, extra in [("default", []), ("constant", ["--learning-rate-schedule", "constant"]),
                        ("linear", ["--learning-rate-schedule", "linear"])]:
        assert main([*argv, *extra, "--out", str(tmp_path / name)]) == 0
        runs[name] = load_run(tmp_path / name)
    tables = {name: [w.numpy() for w in run.model.weights] for name, run in runs.items()}
    for a, b in zip(tables["default"], tables["constant"]):
        np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(a, b) for a, b in zip(tables["constant"], tables["linear"]))
    # The decay spans exactly the run's steps: 2 epochs of ceil(n / 32) batches.
    metrics = json.loads((tmp_path / "linear" / "metrics.json").read_text())
    assert metrics["config"]["learning_rate_schedule"] == "linear"
    optimizer = runs["linear"].model.optimizer
    steps = 2 * -(-metrics["num_train_edges"] // 32)
    assert int(optimizer.iterations.numpy()) == steps
    assert optimizer.get_config()["learning_rate"]["config"]["decay_steps"] == steps
    assert float(optimizer.learning_rate) == 0.0


def test_on_a_gpu_the_settings_not_given_are_the_gpu_ones():
    from keras_gauss.hierarchy.cli import device_settings
    from keras_gauss.hierarchy.config import GPU_SETTINGS

    args = unset(GPU_SETTINGS)
    line = device_settings(args, gpu="Fake GPU")
    assert vars(args) == GPU_SETTINGS == {"engine": "keras", "batch_size": 1024}
    assert line == ("GPU Fake GPU: --engine keras, --batch-size 1024 (--engine native: the "
                    "C++ trainer on the CPU)")
    # a setting given is kept; --engine native is the CPU trainer with its defaults
    args = unset(GPU_SETTINGS, batch_size=512)
    device_settings(args, gpu="Fake GPU")
    assert (args.engine, args.batch_size) == ("keras", 512)
    check_cpu_kept(device_settings, GPU_SETTINGS,
                   {"engine": "native", "batch_size": WordNetConfig().batch_size})


def test_on_a_gpu_without_tensorflow_the_hierarchy_takes_the_keras_engine(monkeypatch):
    """Its keras engine reads `EdgeBatches` on JAX (no TensorFlow: trained in
    `tests/keras_gauss/test_hierarchy_without_tensorflow.py`)."""
    import importlib.util

    from keras_gauss.hierarchy.cli import device_settings
    from keras_gauss.hierarchy.config import GPU_SETTINGS

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tensorflow" else find_spec(name, *a))
    args = unset(GPU_SETTINGS)
    line = device_settings(args, gpu="Fake GPU")
    assert (args.engine, args.batch_size) == ("keras", GPU_SETTINGS["batch_size"])
    assert line.startswith("GPU Fake GPU: --engine keras")


@pytest.mark.parametrize("command", ["train-wordnet", "train-hierarchy"])
def test_the_hierarchy_commands_say_in_their_first_line_that_they_use_the_gpu(
        edges, tmp_path, capsys, monkeypatch, command):
    from keras_gauss import job
    from keras_gauss.hierarchy import train

    seen = []

    def fake_train(config, *args, **kwargs):
        seen.append(config)
        return {"train_seconds": 1.0}

    monkeypatch.setattr(train, "train_wordnet", fake_train)
    source = ["--root", "mammal.n.01"] if command == "train-wordnet" else ["--edges", str(edges)]
    monkeypatch.setattr(job, "jax_gpu", lambda: "Fake GPU")
    assert main([command, *source, "--out", str(tmp_path / "gpu")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("GPU Fake GPU: --engine keras, --batch-size 1024")
    assert (seen[-1].engine, seen[-1].batch_size) == ("keras", 1024)
    # the CPU's defaults where --engine native is asked for, or where there is no GPU
    assert main([command, *source, "--out", str(tmp_path / "native"), "--engine", "native"]) == 0
    monkeypatch.setattr(job, "jax_gpu", lambda: None)
    assert main([command, *source, "--out", str(tmp_path / "cpu")]) == 0
    assert not capsys.readouterr().out.startswith("GPU")
    assert [(c.engine, c.batch_size) for c in seen[1:]] == [("native", 1024)] * 2


def test_the_keras_engines_uniform_start_is_the_same_on_every_backend(edges, tmp_path):
    # `--init uniform` drew the means with Keras's seeded RandomUniform, other
    # numbers on TensorFlow, JAX and torch (the same run on JAX ended 4.27
    # from TensorFlow's means); now NumPy's draw, the native engine's start.
    # A rate of 1e-12 leaves the start in place.
    from keras_gauss.fused.pairs import uniform_means

    run = tmp_path / "run"
    assert main(["train-hierarchy", "--edges", str(edges), "--engine", "keras", "--init",
                 "uniform", "--dim", "4", "--epochs", "1", "--batch-size", "1024",
                 "--learning-rate", "1e-12", "--seed", "2", "--val-size", "0", "--test-size",
                 "0", "--reconstruction-nodes", "10", "--quiet", "--out", str(run)]) == 0
    expected = uniform_means(300, 4, seed=2, max_norm=10.0).astype("float32")  # KL's C
    np.testing.assert_allclose(load_run(run).means, expected, rtol=0, atol=1e-9)
