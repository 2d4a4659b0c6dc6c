"""keras_gauss.checkpoint: atomic checkpoint files, the checks of a resume,
and `fit_by_epoch` (one training seen by the callbacks)."""

import math

import keras
import numpy as np
import pytest

from keras_gauss import checkpoint
from keras_gauss.checkpoint import CheckpointError, Checkpointer
from keras_gauss.io import RUN, write_marker


def test_write_and_read_round_trip(tmp_path):
    arrays = {"table/0": np.arange(6, dtype=np.float32).reshape(2, 3),
              "optimizer/0": np.array(7, dtype=np.int64)}
    state = {"format": checkpoint.FORMAT, "kind": "corpus", "epoch": 1, "loss": 0.1 + 0.2}
    checkpoint.write_checkpoint(tmp_path, state, arrays)
    read_state, read_arrays = checkpoint.read_checkpoint(tmp_path)
    assert read_state == state  # floats exactly
    assert sorted(read_arrays) == sorted(arrays)
    for key, value in arrays.items():
        np.testing.assert_array_equal(read_arrays[key], value)
        assert read_arrays[key].dtype == value.dtype


def test_a_new_checkpoint_replaces_the_old_one_whole(tmp_path):
    saver = Checkpointer(tmp_path, 1e-9, "corpus", {"epochs": 2})
    for step in (1, 2):
        saver.save({"epoch": 0, "step": step}, {"table/0": np.full(3, step)})
    saver.wait()
    state, arrays = checkpoint.read_checkpoint(tmp_path)
    assert state["step"] == 2 and arrays["table/0"].tolist() == [2, 2, 2]
    assert [p.name for p in (tmp_path / ".checkpoint").iterdir()] == ["state.npz"]
    # The directory it made is an interrupted run of ours (its marker came first).
    assert sorted(p.name for p in tmp_path.iterdir()) == [".checkpoint", ".keras-gauss"]


def test_write_errors_surface_in_wait(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    saver = Checkpointer(tmp_path / "file", 1, "corpus", {})
    saver.save({}, {"table/0": np.zeros(2)})  # training goes on meanwhile
    with pytest.raises(OSError):
        saver.wait()
    saver.wait()  # raised once


def test_due_follows_the_clock_and_zero_never(tmp_path):
    assert not Checkpointer(tmp_path, 0, "corpus", {}).due()
    assert not Checkpointer(tmp_path, 10, "corpus", {}).due()
    assert Checkpointer(tmp_path, 1e-9, "corpus", {}).due()


@pytest.mark.parametrize("minutes", [-1, math.nan, math.inf, "5", True])
def test_bad_minutes_are_refused(minutes):
    with pytest.raises(ValueError, match="--checkpoint-every"):
        checkpoint.check_minutes(minutes)


def test_load_for_resume_checks(tmp_path):
    settings = {"epochs": 2, "dim": 4, "max_size": None}
    with pytest.raises(CheckpointError, match="no such directory"):
        checkpoint.load_for_resume(tmp_path / "missing", "corpus", settings)
    with pytest.raises(CheckpointError, match="no checkpoint"):
        checkpoint.load_for_resume(tmp_path, "corpus", settings)
    write_marker(tmp_path, RUN)  # a finished run of ours
    with pytest.raises(CheckpointError, match="finished"):
        checkpoint.load_for_resume(tmp_path, "corpus", settings)
    saver = Checkpointer(tmp_path, 1, "corpus", settings)
    saver.save({"epoch": 0}, {})
    saver.wait()
    assert checkpoint.load_for_resume(tmp_path, "corpus", settings)[0]["epoch"] == 0
    with pytest.raises(CheckpointError, match="not a hierarchy run"):
        checkpoint.load_for_resume(tmp_path, "hierarchy", settings)
    with pytest.raises(CheckpointError, match=r"started with --dim 4, this command has 8"):
        checkpoint.load_for_resume(tmp_path, "corpus", {**settings, "dim": 8})
    # A setting the checkpoint predates takes its default.
    newer = {**settings, "schedule": "constant"}
    assert checkpoint.load_for_resume(tmp_path, "corpus", newer,
                                      defaults={"schedule": "constant"})[0]["epoch"] == 0
    with pytest.raises(CheckpointError, match="started with --schedule constant, this command "
                                              "has linear"):
        checkpoint.load_for_resume(tmp_path, "corpus", {**newer, "schedule": "linear"},
                                   defaults={"schedule": "constant"})
    with pytest.raises(CheckpointError, match="--schedule None"):
        checkpoint.load_for_resume(tmp_path, "corpus", newer)
    checkpoint.checkpoint_file(tmp_path).write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="state.npz is damaged"):
        checkpoint.load_for_resume(tmp_path, "corpus", settings)


def test_refuse_unfinished(tmp_path):
    checkpoint.refuse_unfinished(tmp_path, overwrite=False)  # nothing there
    saver = Checkpointer(tmp_path, 1, "corpus", {})
    saver.save({}, {})
    saver.wait()
    with pytest.raises(CheckpointError, match="--resume"):
        checkpoint.refuse_unfinished(tmp_path, overwrite=False)
    checkpoint.refuse_unfinished(tmp_path, overwrite=True)


@pytest.mark.parametrize("kind, settings, command", [
    ("corpus", {"dim": 4}, "train-corpus"),
    ("hierarchy", {"edges": "tree.tsv", "train_edges": None}, "train-hierarchy"),
    ("hierarchy", {"root": "mammal.n.01", "edges": None}, "train-wordnet")])
def test_an_interrupted_run_says_how_to_finish_it(tmp_path, capsys, monkeypatch, kind,
                                                   settings, command):
    # evaluate, export and neighbors said "holds no trained run ... create one
    # with train-wordnet"; Ctrl-C said "interrupted" alone.
    from cli_errors import cli_error, cli_exit

    out = tmp_path / "run"
    checkpoint.write_checkpoint(out, {"format": 2, "kind": kind, "settings": settings},
                                {"table/0": np.zeros(1)})
    resume = f"finish it with `keras-gauss {command} --resume {out}` and the settings it"
    sims = tmp_path / "sim.tsv"
    sims.write_text("cat\tdog\t1\n")
    for argv in (["neighbors", out, "cat"], ["export", out, "--out", tmp_path / "x"],
                 ["evaluate", out, "--similarity", sims]):
        err = cli_error(argv, capsys)
        assert f"{out} holds an interrupted run" in err and resume in err, err

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint, "run_training_command", stopped)
    code, err = cli_exit(["train-corpus", "--resume", out], capsys)
    assert code == 130 and err.startswith("interrupted; the latest checkpoint is in ") \
        and f"`keras-gauss {command} --resume {out}`" in err, err
    code, err = cli_exit(["train-corpus", "--out", tmp_path / "fresh"], capsys)
    assert (code, err) == (130, "interrupted\n")  # no checkpoint to resume from


def test_restore_variables_checks_count_and_shapes():
    variables = [keras.Variable(np.zeros((2, 3), "float32")), keras.Variable(np.zeros(4))]
    arrays = checkpoint.variable_arrays("table", [np.ones((2, 3), "float32"), np.ones(4)])
    checkpoint.restore_variables("table", variables, arrays)
    assert float(variables[0].numpy().sum()) == 6
    with pytest.raises(CheckpointError, match="holds 2 table variables, the model 1"):
        checkpoint.restore_variables("table", variables[:1], arrays)
    arrays["table/1"] = np.ones(5)
    with pytest.raises(CheckpointError, match="shape"):
        checkpoint.restore_variables("table", variables, arrays)


def test_fit_by_epoch_is_one_training_for_the_callbacks():
    import tensorflow as tf

    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    events = []
    spy = keras.callbacks.LambdaCallback(
        on_train_begin=lambda logs: events.append("begin"),
        on_epoch_begin=lambda epoch, logs: events.append(epoch),
        on_train_end=lambda logs: events.append("end"))

    def epoch_dataset(epoch):
        x = np.full((8, 1), epoch + 1.0, "float32")
        return tf.data.Dataset.from_tensor_slices((x, x)).batch(2)

    history = checkpoint.fit_by_epoch(model, epoch_dataset, 3, [spy], start=(1, 3))
    assert events == ["begin", 1, 2, "end"]
    assert len(history.history["loss"]) == 2
    assert model.optimizer.iterations.numpy() == 1 + 4  # epoch 1 from its 4th step


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_first_fit_builds_from_the_element_spec_on_jax_and_torch(backend, monkeypatch):
    # Keras's fit on JAX and on torch reads a batch to build the loss and
    # metrics, then starts the dataset again: its second pass, other draws.
    # On torch train-corpus --engine keras trained other pairs than on
    # TensorFlow and counted the read batch too (47,858 pairs for an epoch
    # of 44,033; tables 0.90 apart, 2e-7 once built from the spec).
    import tensorflow as tf

    from keras_gauss.checkpoint import _build_without_reading

    built = []

    class Trainer:
        def _symbolic_build(self, data_batch=None, iterator=None):
            built.append(data_batch)

    data = tf.data.Dataset.from_tensor_slices(
        ({"word": np.zeros(4, "int32")}, np.zeros((4, 2), "float32"))).batch(2)
    monkeypatch.setattr(keras.backend, "backend", lambda: backend)
    _build_without_reading(Trainer(), data)
    (batch,) = built
    assert batch[0]["word"].shape == (None,) and batch[1].shape == (None, 2)
