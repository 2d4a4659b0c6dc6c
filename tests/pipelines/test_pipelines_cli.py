"""`keras-gauss train-corpus`, `evaluate` and `neighbors` end to end on a tiny corpus."""

import json
import os
import re

import numpy as np
import pytest

from gpu_settings import check_cpu_kept, unset
from cli_errors import cli_exit
from keras_gauss.cli import main


@pytest.fixture(scope="module")
def corpus(two_topic_corpus):
    return two_topic_corpus(120, 6)


TRAIN = ["--dim", "6", "--epochs", "2", "--window", "2", "--min-count", "1",
         "--sample", "0", "--batch-size", "128", "--seed", "0"]


@pytest.fixture(scope="module")
def run_dir(corpus):
    out = corpus.parent / "run"
    assert main(["train-corpus", "--corpus", str(corpus), "--out", str(out), *TRAIN]) == 0
    return out


def test_train_writes_run(run_dir, capsys):
    assert {p.name for p in run_dir.iterdir()} == {
        "model.keras", "vocab.tsv", "run.json", "metrics.json", "history.csv",
        "history.png", ".keras-gauss"}
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["config"]["dim"] == 6 and metrics["config"]["window"] == 2


def test_evaluate_prints_table_and_writes_json(run_dir, tmp_path, capsys):
    sim = tmp_path / "animals.tsv"
    sim.write_text("# test\ncat\tdog\t9\ncat\thammer\t1\nsaw\tdrill\t8\ncat\tunicorn\t5\n")
    ent = tmp_path / "ent.tsv"
    ent.write_text("cat\tdog\tTrue\nsaw\tcat\tFalse\n")
    assert main(["evaluate", str(run_dir), "--similarity", str(sim),
                 "--entailment", str(ent)]) == 0
    out = capsys.readouterr().out
    assert "animals" in out and "3/4" in out and "ent" in out
    saved = json.loads((run_dir / "eval.json").read_text())
    assert saved["similarity"]["animals"]["n_covered"] == 3
    assert set(saved["entailment"]["ent"]) >= {"kl_ap", "kl_f1", "cos_ap", "cos_f1"}
    assert [p.name for p in run_dir.iterdir() if p.name.startswith(".")] == [".keras-gauss"]


def test_evaluate_bad_inputs(run_dir, tmp_path, capsys):
    code, err = cli_exit(["evaluate", str(run_dir), "--similarity", str(tmp_path / "nope.tsv")],
                      capsys)
    assert code == 2 and "nope.tsv" in err
    bad = tmp_path / "bad.tsv"
    bad.write_text("cat\tdog\n")
    code, err = cli_exit(["evaluate", str(run_dir), "--similarity", str(bad)], capsys)
    assert code == 2 and "line 1" in err
    code, err = cli_exit(["evaluate", str(tmp_path), "--similarity", str(bad)], capsys)
    assert code == 2 and "no trained run" in err


def test_neighbors(run_dir, capsys):
    assert main(["neighbors", str(run_dir), "cat", "--k", "3", "--by", "variance"]) == 0
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 4  # header + 3
    code, err = cli_exit(["neighbors", str(run_dir), "unicorn"], capsys)
    assert code == 2 and "unicorn" in err


def test_train_native_engine_and_the_engines_of_before(corpus, tmp_path, capsys):
    out = tmp_path / "native"
    assert main(["train-corpus", "--corpus", str(corpus), "--out", str(out), *TRAIN,
                 "--engine", "native", "--threads", "2"]) == 0
    assert "pairs/s" in capsys.readouterr().out
    config = json.loads((out / "metrics.json").read_text())["config"]
    assert (config["engine"], config["threads"]) == ("native", 2)
    for flags, line in ((["--engine", "gpu"], "--engine must be native or keras, got 'gpu'."),
                        (["--engine", "fused"], "--engine fused is gone: use --engine native"),
                        (["--fused"], "--engine fused is gone: use --engine native"),
                        (["--engine", "fused-step"],
                         "--engine fused-step is gone: use --engine keras")):
        code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out",
                           str(tmp_path / "x"), *TRAIN, *flags], capsys)
        assert code == 2 and line in err, err
    assert not (tmp_path / "x").exists()


def test_train_bad_inputs(corpus, run_dir, tmp_path, capsys):
    code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out", str(run_dir), *TRAIN],
                      capsys)
    assert code == 2 and "--overwrite" in err
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    code, err = cli_exit(["train-corpus", "--corpus", str(empty), "--out", str(tmp_path / "a"),
                       *TRAIN], capsys)
    assert code == 2 and "no tokens" in err
    binary = tmp_path / "data.bin"
    binary.write_bytes(b"\x00\x01\x02abc")
    code, err = cli_exit(["train-corpus", "--corpus", str(binary), "--out", str(tmp_path / "b"),
                       *TRAIN], capsys)
    assert code == 2 and "binary" in err
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9 na\xefve\n".encode("latin-1"))
    code, err = cli_exit(["train-corpus", "--corpus", str(latin), "--out", str(tmp_path / "c"),
                       *TRAIN], capsys)
    assert code == 2 and "UTF-8" in err
    code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "d"),
                       *TRAIN, "--min-count", "1000"], capsys)
    assert code == 2 and "min_count" in err
    code, err = cli_exit(["train-corpus", "--corpus", str(tmp_path / "missing.txt"),
                       "--out", str(tmp_path / "e"), *TRAIN], capsys)
    assert code == 2 and "missing.txt" in err
    code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "f"),
                       *TRAIN, "--window", "0"], capsys)
    assert code == 2 and "--window" in err
    assert not any((tmp_path / n).exists() for n in "abcdef")


def test_an_empty_corpus_setting_is_refused_not_the_working_directory(tmp_path, capsys,
                                                                      monkeypatch):
    # --corpus "$CORPUS" with CORPUS unset trained on the text files of the
    # working directory ("" is "."), whatever they were.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("the cat sat on the mat\n" * 20)
    for value in ("", " "):
        code, err = cli_exit(["train-corpus", "--corpus", value, "--out", "r", *TRAIN], capsys)
        assert code == 2 and "--corpus is empty: give a text file or directory" in err
    assert not (tmp_path / "r").exists()


def test_unknown_tfds_corpus(tmp_path, capsys):
    code, err = cli_exit(["train-corpus", "--corpus", "tfds:no_such_dataset_xyz",
                       "--out", str(tmp_path / "t"), *TRAIN], capsys)
    assert code == 2 and "no_such_dataset_xyz" in err


def _epoch_lines(out):
    assert not any(code in out for code in ("\r", "\b", "\x1b"))
    return [line for line in out.splitlines() if line.startswith("Epoch")]


@pytest.mark.parametrize("engine", ["keras", "native"])
def test_redirected_training_prints_one_line_per_epoch(engine, corpus, tmp_path, capsys):
    out = tmp_path / engine
    assert main(["train-corpus", "--corpus", str(corpus), "--out", str(out), *TRAIN,
                 "--engine", engine]) == 0
    printed = capsys.readouterr().out
    epochs = _epoch_lines(printed)
    assert [line.split(":")[0] for line in epochs] == ["Epoch 1/2", "Epoch 2/2"]
    assert all("pairs/s" in line and "loss" in line for line in epochs)
    assert "counting the vocabulary... " in printed
    assert f"saving the run to {out}... " in printed
    if engine == "native":  # the set-up line ends, with its time, when training starts
        assert re.search(r"setting up the native trainer\.\.\. \d+\.\d s\nEpoch 1/2", printed)
    assert main(["train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "q"),
                 *TRAIN, "--engine", engine, "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "Epoch" not in printed and "counting" not in printed and "run written" in printed


def test_eval_json_has_the_mode_of_the_other_run_files(run_dir, tmp_path, capsys):
    sim = tmp_path / "sim.tsv"
    sim.write_text("cat\tdog\t9\ncat\thammer\t1\nsaw\tdrill\t8\n")
    assert main(["evaluate", str(run_dir), "--similarity", str(sim)]) == 0
    modes = {p.name: os.stat(p).st_mode & 0o777 for p in run_dir.iterdir()}
    assert modes["eval.json"] == modes["metrics.json"] == 0o666 & ~_umask()


def test_evaluate_refuses_a_file_with_no_known_pair(run_dir, tmp_path, capsys):
    (run_dir / "eval.json").unlink(missing_ok=True)
    unknown = tmp_path / "unknown.tsv"
    unknown.write_text("unicorn\tgriffin\t5\nqwzx\tcat\t1\n")
    code, err = cli_exit(["evaluate", str(run_dir), "--similarity", str(unknown)], capsys)
    # the file as given (it said "--similarity unknown", its stem)
    assert code == 2 and f"--similarity {unknown}: none of its 2 pairs" in err
    assert not (run_dir / "eval.json").exists()


def test_ellipses_example_writes_beside_the_run_never_into_it(run_dir, tmp_path, monkeypatch):
    """Its figure goes to the working directory: a file of its own inside the run
    would keep `--out RUN --overwrite` from ever replacing the run."""
    import importlib.util

    pytest.importorskip("scipy")
    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ellipses.py")
    spec = importlib.util.spec_from_file_location("ellipses_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in run_dir.iterdir())
    example.main([str(run_dir), "cat", "--k", "3"])
    assert (tmp_path / "ellipses-cat.png").is_file()
    assert sorted(p.name for p in run_dir.iterdir()) == before
    (tmp_path / "ellipses-cat.png").unlink()
    example.main([str(run_dir), "cat", "--k", "3", "--out", str(tmp_path / "x.png")])
    assert (tmp_path / "x.png").is_file()


def _umask():
    umask = os.umask(0)
    os.umask(umask)
    return umask


def test_the_learning_rate_rule_scales_the_recipe_rate_with_the_batch():
    from keras_gauss.pipelines.train import GPU_SETTINGS
    from keras_gauss.pipelines.train import LR_BATCH_EXPONENT
    from keras_gauss.pipelines.train import LR_MAX
    from keras_gauss.pipelines.train import learning_rate_for_batch

    # the rule's rate at the CPU recipe's batch; the values chosen on
    # validation pairs (research/lr_batch_sweep.py) pinned, so a change is seen
    assert learning_rate_for_batch(16384) == 0.4
    assert [learning_rate_for_batch(b) for b in (32768, 65536, 262144)] == [0.566, 0.8, 0.8]
    assert GPU_SETTINGS["learning_rate"] == learning_rate_for_batch(GPU_SETTINGS["batch_size"])
    # a power law up to LR_MAX: each 4x of the batch multiplies the rate by
    # 4 ** exponent, then the rate stays
    for batch in (1024, 2048, 4096, 16384):
        ratio = learning_rate_for_batch(4 * batch) / learning_rate_for_batch(batch)
        assert abs(ratio / 4 ** LR_BATCH_EXPONENT - 1) < 1e-2  # 3 significant digits
    assert learning_rate_for_batch(65536) == learning_rate_for_batch(1 << 24) == LR_MAX
    assert learning_rate_for_batch(np.int64(16384)) == 0.4
    for bad in (0, -5, 1.5, True, "16384", None):
        with pytest.raises(ValueError, match="--batch-size must be a positive integer"):
            learning_rate_for_batch(bad)


def test_the_adagrad_floor_rule_divides_the_recipe_floor_by_the_batch_ratio_squared():
    from keras_gauss.pipelines.train import GPU_SETTINGS, CorpusConfig
    from keras_gauss.pipelines.train import adagrad_floor_for_batch

    # the recipe's (CorpusConfig's) floor at its batch; the chosen values pinned
    defaults = CorpusConfig()
    assert adagrad_floor_for_batch(16384) == {
        "initial_accumulator": defaults.initial_accumulator, "epsilon": defaults.epsilon}
    assert adagrad_floor_for_batch(262144) == {"initial_accumulator": 1e-6 / 256,
                                               "epsilon": 1e-7 / 256}
    assert {k: GPU_SETTINGS[k] for k in ("initial_accumulator", "epsilon")} == (
        adagrad_floor_for_batch(GPU_SETTINGS["batch_size"]))
    assert adagrad_floor_for_batch(100000)["initial_accumulator"] == 2.68435e-08  # 6 digits
    for bad in (0, -5, 1.5, True, None):
        with pytest.raises(ValueError, match="--batch-size must be a positive integer"):
            adagrad_floor_for_batch(bad)


def test_a_batch_s_optimizer_settings_are_its_rate_and_its_floor_together():
    from keras_gauss.pipelines.train import GPU_SETTINGS, adagrad_floor_for_batch
    from keras_gauss.pipelines.train import learning_rate_for_batch, optimizer_for_batch

    for batch in (1024, 16384, 65536, 262144):
        assert optimizer_for_batch(batch) == {"learning_rate": learning_rate_for_batch(batch),
                                              **adagrad_floor_for_batch(batch)}
    assert GPU_SETTINGS == {**GPU_SETTINGS, **optimizer_for_batch(GPU_SETTINGS["batch_size"])}
    with pytest.raises(ValueError, match="--batch-size must be a positive integer"):
        optimizer_for_batch(0)


def test_on_a_gpu_the_settings_not_given_are_the_gpu_recipe():
    from keras_gauss.pipelines.cli import device_settings
    from keras_gauss.pipelines.train import GPU_SETTINGS, CorpusConfig
    from keras_gauss.pipelines.train import learning_rate_for_batch

    args = unset(GPU_SETTINGS)
    line = device_settings(args, gpu="Fake GPU")
    assert vars(args) == GPU_SETTINGS
    assert line.startswith("GPU Fake GPU: --engine keras, --pairs device")
    # a setting given is kept; --engine native is the CPU trainer with its defaults
    # a batch given gets the rate of the rule for it; a rate given is kept
    args = unset(GPU_SETTINGS, batch_size=262144)
    device_settings(args, gpu="Fake GPU")
    assert (args.engine, args.batch_size, args.learning_rate) == (
        "keras", 262144, learning_rate_for_batch(262144))
    assert (args.initial_accumulator, args.epsilon) == (1e-6 / 256, 1e-7 / 256)
    args = unset(GPU_SETTINGS, batch_size=262144, learning_rate=0.3, epsilon=1e-7)
    device_settings(args, gpu="Fake GPU")
    assert (args.batch_size, args.learning_rate, args.initial_accumulator, args.epsilon) == (
        262144, 0.3, 1e-6 / 256, 1e-7)
    args = unset(GPU_SETTINGS, batch_size=0)  # left to CorpusConfig.validate's one line
    device_settings(args, gpu="Fake GPU")
    assert args.learning_rate == GPU_SETTINGS["learning_rate"]
    cpu = CorpusConfig()
    check_cpu_kept(device_settings, GPU_SETTINGS, {
        "engine": "native", "pairs": cpu.pairs, "batch_size": cpu.batch_size,
        "learning_rate": cpu.learning_rate, "initial_accumulator": cpu.initial_accumulator,
        "epsilon": cpu.epsilon})


def test_train_corpus_says_in_its_first_line_that_it_uses_the_gpu(corpus, tmp_path, capsys,
                                                                  monkeypatch):
    from keras_gauss import job
    from keras_gauss.pipelines import train

    seen = {}

    def fake_train(config, *args, **kwargs):
        seen["config"] = config
        return {"vocab_size": 1, "pairs": 1, "train_seconds": 1.0, "pairs_per_second": 1.0,
                "tokens_per_second": 1.0, "final_loss": 0.0}

    monkeypatch.setattr(job, "jax_gpu", lambda: "Fake GPU")
    monkeypatch.setattr(train, "train_corpus", fake_train)
    assert main(["train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "r")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("GPU Fake GPU: --engine keras, --pairs device, --batch-size 65536")
    config = seen["config"]
    assert (config.engine, config.pairs, config.batch_size) == ("keras", "device", 65536)
