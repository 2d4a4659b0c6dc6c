"""Issue 12's guarantees end to end through `keras-gauss`: nothing is
destroyed, nothing non-finite or partial gets out, every run loads, and a
damaged run file gives one line naming it."""

import gzip
import json
import os
import shutil

import keras
import numpy as np
import pytest

from keras_gauss.cli import main
from keras_gauss.run_format import DamagedRunError
from keras_gauss.runs import load_run
from cli_errors import cli_exit

TRAIN = ["--dim", "4", "--epochs", "1", "--window", "2", "--min-count", "1",
         "--sample", "0", "--batch-size", "64", "--seed", "0"]


@pytest.fixture(scope="module")
def corpus(two_topic_corpus):
    return two_topic_corpus(120, 6)


@pytest.fixture(scope="module")
def runs(corpus):
    out = {}
    for engine in ("keras", "native"):
        out[engine] = corpus.parent / f"run-{engine}"
        assert main(["train-corpus", "--corpus", str(corpus), "--out", str(out[engine]),
                     "--engine", engine, *TRAIN]) == 0
    return out


def test_overwrite_never_deletes_what_is_not_a_run(corpus, tmp_path, capsys):
    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    (runs / "a" / "run.json").write_text("{}")
    (runs / "notes.txt").write_text("keep me")
    code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out", str(runs),
                       "--overwrite", *TRAIN], capsys)
    assert code == 2 and "--out" in err and "notes.txt" in err and "not a keras-gauss run" in err
    assert (runs / "notes.txt").read_text() == "keep me" and (runs / "a" / "run.json").exists()
    code, err = cli_exit(["train-wordnet", "--out", str(runs), "--overwrite"], capsys)
    assert code == 2 and "notes.txt" in err


def test_out_is_checked_before_training(corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x").write_text("x")
    for out, message in ((".", "working directory"), ("/proc/kg/run", "cannot write"),
                         ("x/run", "not a directory")):
        code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out", out,
                           "--overwrite", *TRAIN], capsys)
        assert code == 2 and message in err, err
    assert sorted(os.listdir(tmp_path)) == ["x"]


@pytest.mark.parametrize("flag,value,message", [
    ("--learning-rate", "inf", "--learning-rate must be finite"),
    ("--learning-rate", "nan", "--learning-rate must be finite"),
    ("--max-variance", "inf", "--max-variance must be finite"),
    ("--margin", "-inf", "--margin must be finite"),
    ("--sample", "nan", "--sample must be finite"),
    ("--seed", "8388608", "--seed must be in"),
    ("--seed", "-1", "--seed must be in"),
    # Past 2**31 - 1 too, the bound named is the flag's own, not every integer's.
    ("--seed", "3000000000", "--seed must be in [0, 8,388,607], got 3000000000."),
    ("--epochs", "3000000000", "--epochs must be in [1, 65,535], got 3000000000."),
    ("--window", "3000000000", "--window must be"),
    ("--dim", "10000000000", "--dim must be"),
    ("--dim", "2000000000", "--dim 2000000000: 2 table(s)"),
])
def test_bad_settings_fail_up_front_naming_the_flag(corpus, tmp_path, capsys, flag, value,
                                                    message):
    args = [a for a in TRAIN]
    if flag in args:
        i = args.index(flag)
        del args[i:i + 2]
    code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out",
                       str(tmp_path / "run"), *args, f"{flag}={value}"], capsys)
    assert code == 2 and message in err and "--corpus" not in err, err
    assert not (tmp_path / "run").exists()


def test_truncated_gzip_corpus_fails_naming_file_and_offset(corpus, tmp_path, capsys):
    data = gzip.compress(corpus.read_bytes() * 200)
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    code, err = cli_exit(["train-corpus", "--corpus", str(path), "--out",
                       str(tmp_path / "run"), *TRAIN], capsys)
    assert code == 2 and "cut.txt.gz" in err and "byte" in err
    assert not (tmp_path / "run").exists()


def test_divergence_stops_training_and_writes_no_run(corpus, tmp_path, monkeypatch):
    import tensorflow as tf

    from keras_gauss.checks import TrainingDivergedError
    from keras_gauss.pipelines.train import CorpusConfig, train_corpus

    class Poison(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            table = self.model.get_layer("words").means
            table.assign(np.full(table.shape, np.nan, "float32"))

    config = CorpusConfig(dim=4, window=2, min_count=1, sample=0, batch_size=64,
                          engine="keras")
    with pytest.raises(TrainingDivergedError, match="loss is nan"):
        train_corpus(config, str(corpus), tmp_path / "keras", verbose=0,
                     callbacks=[Poison()])
    from keras_gauss.fused import native

    real_native = native.NativeTables.train

    def native_nan_loss(*args, **kwargs):
        loss, pairs = real_native(*args, **kwargs)
        return loss * float("nan"), pairs

    # The native engine, on text files (no TensorFlow) and on a dataset of lines.
    monkeypatch.setattr(native.NativeTables, "train", native_nan_loss)
    for name, source in (("native", str(corpus)),
                         ("lines", tf.data.Dataset.from_tensor_slices(
                             corpus.read_text().splitlines()))):
        with pytest.raises(TrainingDivergedError, match="loss is nan in epoch 1, chunk 1"):
            train_corpus(CorpusConfig(dim=4, window=2, min_count=1, sample=0),
                         source, tmp_path / name, verbose=0, checkpoint_every=0)
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.parametrize("engine", ["keras", "native"])
def test_runs_of_every_engine_load_everywhere(runs, tmp_path, capsys, engine):
    run = runs[engine]
    assert load_run(run).table.name == "words"
    assert main(["neighbors", str(run), "cat", "--k", "2"]) == 0
    sim = tmp_path / "sim.tsv"
    sim.write_text("cat\tdog\t9\ncat\tsaw\t1\nsaw\tdrill\t8\n")
    assert main(["evaluate", str(run), "--similarity", str(sim)]) == 0
    for fmt in ("serving", "word2vec", "projector"):
        assert main(["export", str(run), "--format", fmt,
                     "--out", str(tmp_path / fmt)]) == 0


def _copy(run, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(run, target)
    return target


def test_a_run_of_the_removed_fused_step_engine_says_what_to_do(runs, tmp_path):
    """Its model.keras names FusedRankingModel, which is gone: one line, not a
    Keras traceback."""
    import zipfile

    run = _copy(runs["keras"], tmp_path)
    with zipfile.ZipFile(runs["keras"] / "model.keras") as old, \
            zipfile.ZipFile(run / "model.keras", "w") as new:
        for item in old.infolist():
            data = old.read(item)
            if item.filename == "config.json":
                config = json.loads(data)
                config.update(module="keras_gauss.fused.model", class_name="FusedRankingModel",
                              registered_name="keras_gauss>FusedRankingModel")
                data = json.dumps(config).encode()
            new.writestr(item, data)
    with pytest.raises(DamagedRunError, match="--engine fused-step, which this version no "
                                              "longer has; train the run again"):
        load_run(run)


@pytest.mark.parametrize("damage,file,message", [
    ("run.json", "run.json", "not valid JSON"),
    ("run.json-keys", "run.json", "'table' is missing"),
    ("vocab", "vocab.tsv", "line 2"),
    ("vocab-short", "vocab.tsv", "entries for a table of"),
    ("vocab-repeated", "vocab.tsv", "line 3: 'the' repeats line 1"),
    ("vocab-binary", "vocab.tsv", "not UTF-8"),
    ("metrics", "metrics.json", "not valid JSON"),
    # before: "cannot load the model (ValueError: File not found: filepath=...)"
    ("model", "model.keras", r"cannot load the model: not a \.keras file \(a zip archive\)"),
    ("nan", "model.keras", "non-finite means"),
    ("variance", "model.keras", "non-positive variances"),
    ("bounds", "model.keras", "norm above max_norm 4"),
])
def test_damaged_run_file_gives_one_line_naming_it(runs, tmp_path, capsys, damage, file,
                                                   message):
    run = _copy(runs["keras"], tmp_path)
    path = run / file
    if damage == "run.json":
        path.write_text('{"kind": "corpus", ')
    elif damage == "run.json-keys":
        info = json.loads(path.read_text())
        del info["table"]
        path.write_text(json.dumps(info))
    elif damage == "vocab":
        lines = path.read_text().splitlines()
        lines[1] = lines[1].split("\t")[0] + "\tmany"
        path.write_text("\n".join(lines) + "\n")
    elif damage == "vocab-repeated":  # before: loaded, 'the' answered for row 2
        lines = path.read_text().splitlines()
        lines[2] = lines[0]
        path.write_text("\n".join(lines) + "\n")
    elif damage == "vocab-short":
        path.write_text("\n".join(path.read_text().splitlines()[:-1]) + "\n")
    elif damage == "vocab-binary":
        path.write_bytes(b"\xff\xfe\x00cat\t3\n")
    elif damage == "metrics":
        path.write_text("{")
    elif damage == "model":
        path.write_bytes(path.read_bytes()[:1000])
    else:
        model = load_run(run).model
        layer = model.get_layer("words")
        table = layer.variances if damage == "variance" else layer.means
        values = table.numpy()
        values[1] = {"nan": np.nan, "variance": 0.0, "bounds": 100.0}[damage]
        table.assign(values)
        model.save(path)
    with pytest.raises(DamagedRunError, match=message):
        load_run(run)
    for argv in (["neighbors", str(run), "cat"],
                 ["export", str(run), "--out", str(tmp_path / "serve")]):
        code, err = cli_exit(argv, capsys)
        assert code == 2 and file in err and message.split()[0] in err, err
    assert not (tmp_path / "serve").exists()


def _snapshot(*roots):
    return {str(p): p.read_bytes() for root in roots for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_overwrite_and_export_replace_only_their_own_kind_of_output(corpus, runs, tmp_path,
                                                                    capsys):
    sacred = tmp_path / "sacred"  # a Sacred experiment: run.json is not ours
    sacred.mkdir()
    for name in ("run.json", "config.json", "results.csv"):
        (sacred / name).write_text("{}")
    thesis = tmp_path / "thesis"  # a projector file beside the user's work
    thesis.mkdir()
    (thesis / "projector_config.pbtxt").write_text("embeddings {}")
    (thesis / "thesis.pdf").write_text("three years")
    run = _copy(runs["native"], tmp_path)
    before = _snapshot(sacred, thesis, run)
    for argv, message in [
            (["train-corpus", "--corpus", str(corpus), "--out", str(sacred), "--overwrite",
              *TRAIN], "is not a keras-gauss run"),
            (["export", str(run), "--format", "projector", "--out", str(thesis),
              "--overwrite"], "is not a keras-gauss projector export"),
            (["export", str(run), "--format", "projector", "--out", str(run), "--overwrite"],
             "holds a keras-gauss run, which a projector export never replaces"),
            (["export", str(run), "--format", "word2vec", "--out", str(run / "vocab.tsv"),
              "--overwrite"], "is inside the keras-gauss run"),
            (["export", str(run), "--out", str(run), "--overwrite"],
             "is inside the keras-gauss run")]:
        code, err = cli_exit(argv, capsys)
        assert code == 2 and message in err, err
    assert _snapshot(sacred, thesis, run) == before
    assert load_run(run).words  # the source is whole


def test_runs_written_before_the_marker_load_and_are_replaced_only_whole(corpus, runs,
                                                                         tmp_path, capsys):
    run = _copy(runs["native"], tmp_path)
    for name in (".keras-gauss", "history.csv", "history.png"):
        (run / name).unlink()  # as written by an earlier keras-gauss (no marker, no history)
    assert load_run(run).words
    notes = tmp_path / "notes"
    shutil.copytree(run, notes)
    (notes / "notes.txt").write_text("mine")  # no longer a run's files alone
    code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out", str(notes),
                       "--overwrite", *TRAIN], capsys)
    assert code == 2 and "not a keras-gauss run" in err and "notes.txt" in err
    assert main(["train-corpus", "--corpus", str(corpus), "--out", str(run), "--overwrite",
                 *TRAIN, "--seed", "1"]) == 0
    assert json.loads((run / "metrics.json").read_text())["config"]["seed"] == 1
