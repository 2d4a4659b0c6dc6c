"""Checkpoints of a training run, and resuming a killed run from the latest one.

A run being trained into `OUT` keeps its latest checkpoint in one file,
`OUT/.checkpoint/state.npz`: the tables, the optimizer's variables
(AdaGrad accumulators, step counter), the loss metric's state, the
position in the data (epoch, and chunk or step within it) and the running
totals (pairs, per-epoch losses, training seconds), with the run's identity:
its settings, the digest of the data it read (`data`) and the engine.
A new `OUT` gets the marker of an interrupted run of ours before its first
checkpoint (`keras_gauss.io.RUN_IN_PROGRESS`). Every write goes to a
temporary sibling that replaces the file only when complete
(`keras_gauss.io.atomic_file`), so a kill at any moment leaves the previous
checkpoint usable, and a write the file system refuses (no space) stops the
run with one line, the previous checkpoint kept. The data streams draw
from counter-based seeds (seed, epoch, chunk or pass), so the position is
the whole random state. When the run is written, `OUT` is replaced by it
and the checkpoint is gone.

Example:

>>> checkpointer = Checkpointer("runs/x", minutes=10, kind="corpus",
...                             settings={"epochs": 5})
>>> if checkpointer.due():
...     checkpointer.save({"epoch": 1, "step": 40}, {"table/0": means})
"""

import json
import os
import threading
import time
from pathlib import Path

import numpy as np

from keras_gauss.checks import CommandError
from keras_gauss.io import RUN
from keras_gauss.io import RUN_IN_PROGRESS
from keras_gauss.io import atomic_file
from keras_gauss.io import not_writable
from keras_gauss.io import output_content
from keras_gauss.io import write_marker

DIRECTORY = ".checkpoint"
STATE_FILE = "state.npz"
# A checkpoint every this many minutes unless told otherwise.
DEFAULT_MINUTES = 10.0
# 2: the state holds the digest of the data read (`data`); 1 did not.
FORMAT = 2


class CheckpointError(ValueError):
    """A checkpoint cannot be resumed (missing, finished run, other settings)."""


def checkpoint_file(out_dir):
    """`OUT/.checkpoint/state.npz`."""
    return Path(out_dir) / DIRECTORY / STATE_FILE


def has_checkpoint(out_dir):
    return checkpoint_file(out_dir).is_file()


def resume_command(out_dir):
    """`keras-gauss COMMAND --resume OUT_DIR`: how to finish the interrupted run
    in `out_dir`, its command read from the checkpoint (`train-corpus`,
    `train-hierarchy` or `train-wordnet`); `None` without a checkpoint.

    Example:

    >>> resume_command("runs/x")  # doctest: +SKIP
    'keras-gauss train-corpus --resume runs/x'
    """
    if not has_checkpoint(out_dir):
        return None
    try:  # the state alone (the tables are not read)
        with np.load(checkpoint_file(out_dir), allow_pickle=False) as data:
            state = json.loads(data["__state__"].tobytes().decode("utf-8"))
        settings = state.get("settings") or {}
        command = {"corpus": "train-corpus"}.get(state.get("kind")) or (
            "train-hierarchy" if settings.get("edges") or settings.get("train_edges")
            else "train-wordnet")
    except Exception:  # damaged: the resuming command names it
        command = "train-wordnet, train-hierarchy or train-corpus (its command)"
    return f"keras-gauss {command} --resume {out_dir}"


def interrupted_note(out_dir):
    """The line of a run in `out_dir` whose training stopped before it was
    written, and how to finish it; `None` without a checkpoint there.

    Example:

    >>> interrupted_note("runs/never-trained") is None  # no checkpoint there
    True
    """
    command = resume_command(out_dir)
    if command is None:
        return None
    return (f"{out_dir} holds an interrupted run (its training stopped at the checkpoint in "
            f"{DIRECTORY}/ before the run was written): finish it with `{command}` and the "
            "settings it started with")


def check_minutes(minutes):
    """Raises `ValueError` unless `minutes` is a finite number >= 0."""
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) \
            or not np.isfinite(minutes) or minutes < 0:
        raise ValueError(f"--checkpoint-every must be a finite number of minutes >= 0 "
                         f"(0: no checkpoints), got {minutes}.")


def refuse_unfinished(out_dir, overwrite):
    """A fresh run may not silently start over an interrupted one."""
    if has_checkpoint(out_dir) and not overwrite:
        raise CheckpointError(
            f"{out_dir} holds an interrupted run (.checkpoint/): continue it with "
            f"--resume {out_dir}, or pass --overwrite to start again.")


def _run_directory(out_dir):
    """Makes `out_dir` an interrupted run of ours (its marker first) unless it
    holds an output of ours already."""
    out_dir = Path(out_dir)
    if out_dir.is_dir() and any(out_dir.iterdir()):
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    write_marker(out_dir, RUN_IN_PROGRESS)


def write_checkpoint(out_dir, state, arrays):
    """Writes `state` (JSON-able) and `arrays` (name -> array) atomically.

    Raises:
        keras_gauss.io.OutputNotWritableError: the file system refused the
            data (no space, ...); the previous checkpoint is kept.
    """
    path = checkpoint_file(out_dir)
    try:
        _run_directory(out_dir)
        path.parent.mkdir(exist_ok=True)
        with atomic_file(path, overwrite=True, mode="wb") as handle:
            blob = np.frombuffer(json.dumps(state).encode("utf-8"), np.uint8)
            np.savez(handle, __state__=blob, **arrays)
            handle.flush()
            os.fsync(handle.fileno())
    except Exception as error:
        refused = not_writable(path, error, "the checkpoint",
                               "the previous checkpoint is kept (continue with --resume "
                               f"{out_dir} once it can be written)")
        if refused is not None:
            raise refused from None
        raise


def read_checkpoint(out_dir):
    """`(state, arrays)` of the checkpoint in `out_dir`; `CheckpointError` naming
    the file when it is damaged."""
    path = checkpoint_file(out_dir)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
        state = json.loads(arrays.pop("__state__").tobytes().decode("utf-8"))
        if not isinstance(state, dict):
            raise ValueError(f"its state is a {type(state).__name__}, not an object")
    except Exception as error:  # zip, JSON, key errors: one line naming the file
        raise CheckpointError(f"{path} is damaged ({type(error).__name__}: {error}); "
                              "start again with --overwrite.") from None
    if state.get("format") == 1:
        raise CheckpointError(f"{path} was written by an earlier keras-gauss (checkpoint "
                              "format 1, without the digest of its data), which this one "
                              "does not resume; start again with --overwrite.")
    if state.get("format") != FORMAT:
        raise CheckpointError(f"{path} is damaged (format {state.get('format')!r}, expected "
                              f"{FORMAT}); start again with --overwrite.")
    return state, arrays


# Settings whose flag is not their name with dashes.
FLAGS = {"include_lemmas": "--lemmas"}

# Settings that name input files (`train-hierarchy --edges`, a given split's
# files): a resumed run must have read the same content (the data's digest,
# `check_data`), not the same path, so that it resumes from another working
# directory (`--edges ../edges.tsv` for the run's `--edges edges.tsv`).
FILE_SETTINGS = frozenset({"edges", "train_edges", "val_edges", "test_edges"})


def _flag(name):
    return FLAGS.get(name, "--" + name.replace("_", "-"))


def load_for_resume(out_dir, kind, settings, defaults=None):
    """The checkpoint to continue in `out_dir`, checked against the run's settings.

    Args:
        out_dir: the directory of the interrupted run (`--resume DIR`).
        kind: `"corpus"` or `"hierarchy"`.
        settings: the settings of this command (a JSON-able dict); every one
            must equal the checkpoint's, except the paths of `FILE_SETTINGS`.
        defaults: `{name: value}` of settings added after checkpoints were
            first written: a checkpoint without `name` was trained with
            `value` (default: none).

    Returns:
        `(state, arrays)` as `read_checkpoint`.

    Raises:
        CheckpointError: no directory, a finished run, a directory without a
            checkpoint, another kind of run or other settings (one line).
    """
    path = Path(out_dir)
    if not path.is_dir():
        what = "a file, not a run directory" if path.exists() else "no such directory"
        raise CheckpointError(f"--resume {out_dir}: {what}.")
    if not checkpoint_file(path).is_file():
        if output_content(path) == RUN:
            raise CheckpointError(
                f"--resume {out_dir}: this run finished (run.json, no checkpoint); "
                "there is nothing to resume.")
        raise CheckpointError(
            f"--resume {out_dir}: no checkpoint of an interrupted keras-gauss run "
            f"there ({DIRECTORY}/{STATE_FILE} is missing).")
    state, arrays = read_checkpoint(path)
    if state.get("kind") != kind:
        raise CheckpointError(f"--resume {out_dir}: that is a {state.get('kind')} run, "
                              f"not a {kind} run.")
    saved = {**(defaults or {}), **state.get("settings", {})}
    settings = json.loads(json.dumps(settings))  # tuples as lists, as saved
    differ = [name for name in sorted(set(saved) | set(settings))
              if name not in FILE_SETTINGS and saved.get(name) != settings.get(name)]
    if differ:
        raise CheckpointError(
            f"--resume {out_dir}: the run was started with "
            f"{' and '.join(f'{_flag(name)} {saved.get(name)}' for name in differ)}, this "
            f"command has {' and '.join(str(settings.get(name)) for name in differ)}; resume "
            "with the same settings.")
    return state, arrays


def check_data(out_dir, state, digest, what="data"):
    """Raises `CheckpointError` unless the checkpoint `state` was trained on
    data of the same `digest` (`keras_gauss.job`'s digest of what was read).

    Args:
        out_dir: the run directory (for the message).
        state: the checkpoint's state.
        digest: the digest of the data read now.
        what: how the message names the data (`"corpus"`, `"hierarchy"`).
    """
    saved = state.get("data")
    if saved != digest:
        raise CheckpointError(
            f"--resume {out_dir}: the {what} differs from the one the run started on (its "
            f"content digest {str(saved)[:19]}..., now {digest[:19]}...); resume with the "
            "same data, or start again with --overwrite.")


def variable_arrays(prefix, variables):
    """`{prefix/i: value}` of a list of variables: copies, which later steps
    (some update the tables in place) do not change."""
    return {f"{prefix}/{i}": np.array(v.numpy() if hasattr(v, "numpy") else v, copy=True)
            for i, v in enumerate(variables)}


def restore_variables(prefix, variables, arrays):
    """Assigns the saved `prefix/i` arrays to `variables` (same count and shapes)."""
    saved = sorted((k for k in arrays if k.startswith(prefix + "/")),
                   key=lambda k: int(k.rsplit("/", 1)[1]))
    if len(saved) != len(variables):
        raise CheckpointError(f"the checkpoint holds {len(saved)} {prefix} variables, the "
                              f"model {len(variables)}.")
    for key, variable in zip(saved, variables):
        value = arrays[key]
        if tuple(value.shape) != tuple(variable.shape):
            raise CheckpointError(f"the checkpoint's {key} has shape {value.shape}, the "
                                  f"model's {tuple(variable.shape)}.")
        variable.assign(value)


class Checkpointer:
    """Writes a checkpoint when `minutes` have passed since the last one.

    Training pauses only to copy the arrays: the file is written by a
    background thread (one at a time; `wait` joins it and raises its error).

    Args:
        out_dir: the run directory being built.
        minutes: minutes between checkpoints (0: never).
        kind: `"corpus"` or `"hierarchy"`.
        settings: the run's settings (JSON-able), saved with every checkpoint.
        extra: more state saved with every checkpoint (a dict).
    """

    def __init__(self, out_dir, minutes, kind, settings, extra=None):
        check_minutes(minutes)
        self.out_dir = out_dir
        self.seconds = float(minutes) * 60.0
        self.kind = kind
        self.settings = json.loads(json.dumps(settings))
        self.extra = dict(extra or {})
        self.count = 0
        self.last = time.monotonic()
        self._thread = None
        self._error = None

    def due(self):
        """True when a checkpoint should be written now (one clock read)."""
        return self.seconds > 0 and time.monotonic() - self.last >= self.seconds

    def save(self, position, arrays):
        """Starts writing the checkpoint: `position` (JSON-able) and `arrays`
        (copies, not to be changed)."""
        self.wait()
        self.count += 1
        state = {"format": FORMAT, "kind": self.kind, "settings": self.settings,
                 **self.extra, **json.loads(json.dumps(position))}

        def write():
            try:
                write_checkpoint(self.out_dir, state, arrays)
            except BaseException as error:  # raised by `wait` (no space: one line)
                self._error = error

        self._thread = threading.Thread(target=write, name="keras-gauss-checkpoint",
                                        daemon=True)
        self._thread.start()
        self.last = time.monotonic()

    def wait(self):
        """Waits for the checkpoint being written; raises its error, if any."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error


def fit_by_epoch(trainer, epoch_dataset, epochs, callbacks=(), start=(0, 0),
                 on_epoch_begin=None):
    """`trainer.fit` one epoch at a time, each from its own dataset, so that an
    epoch's data depend on its number only (and a resumed run can start in
    the middle of one).

    Args:
        trainer: a compiled Keras model.
        epoch_dataset: `epoch -> ` that epoch's batches: a `tf.data.Dataset`
            or a `keras.utils.PyDataset` (e.g. `keras_gauss.hierarchy.dataset.EdgeBatches`),
            either with a `skip(count)` method.
        epochs: the number of epochs of the run.
        callbacks: Keras callbacks; they see one training (one
            `on_train_begin` and `on_train_end`), as in a single `fit`.
        start: `(epoch, step)`: skip the first `step` batches of `epoch`.
        on_epoch_begin: optional `epoch -> None`, called before each epoch's fit.

    Returns:
        The `keras.callbacks.History` of the epochs trained here.
    """
    import keras

    class OneTraining(keras.callbacks.CallbackList):
        begun = False

        def on_train_begin(self, logs=None):
            if not self.begun:
                self.begun = True
                super().on_train_begin(logs)

        def on_train_end(self, logs=None):
            pass

        def finish(self, logs=None):
            super().on_train_end(logs)

    history = keras.callbacks.History()
    callback_list = OneTraining([*callbacks, history], model=trainer)
    callback_list.set_params({"epochs": epochs, "steps": None, "verbose": 0})
    first, skip = start
    logs = None
    for epoch in range(first, epochs):
        if on_epoch_begin is not None:
            on_epoch_begin(epoch)
        data = epoch_dataset(epoch)
        if epoch == first:
            _build_without_reading(trainer, data)
        if epoch == first and skip:
            data = data.skip(skip)
        trainer.history = history  # what `fit` returns
        trainer.fit(data, initial_epoch=epoch, epochs=epoch + 1, verbose=0, shuffle=False,
                    callbacks=callback_list)
        logs = {name: values[-1] for name, values in history.history.items()}
        if trainer.stop_training:
            break
    callback_list.finish(logs)
    return history


def _build_without_reading(trainer, data):
    """Builds `trainer`'s loss and metrics from `data`'s element spec.

    Else the first `fit` on JAX or torch reads a batch to build them and
    starts the dataset again: it trains on the dataset's second pass, whose shuffle
    and draws differ from the first's (`reshuffle_each_iteration`), so a
    run resumed in epoch `e` would train other batches than the
    uninterrupted run, whose first `fit` was epoch 0's.
    A `keras.utils.PyDataset` (no `element_spec`) needs none of this: its
    batches are read by index, the same however often.
    """
    import keras

    if (keras.backend.backend() not in ("jax", "torch")
            or not hasattr(trainer, "_symbolic_build")
            or not hasattr(data, "element_spec")):
        return
    spec = keras.tree.map_structure(
        lambda s: keras.KerasTensor(tuple(s.shape), s.dtype.name), data.element_spec)
    trainer._symbolic_build(data_batch=spec)


def epoch_seed(seed, epoch):
    """The data seed of an epoch: a function of the run's seed and the epoch only."""
    return (int(seed) << 16) + int(epoch)


def model_arrays(model, optimizer, trainer=None):
    """The arrays of a checkpoint of a Keras model: its weights (`table/i`), the
    optimizer's variables (`optimizer/i`) and `trainer`'s metric states
    (`metric/i`)."""
    arrays = {**variable_arrays("table", model.weights),
              **variable_arrays("optimizer", optimizer.variables)}
    if trainer is not None:
        arrays.update(variable_arrays("metric", trainer.metrics_variables))
    return arrays


def restore_model(model, optimizer, arrays):
    """Assigns a checkpoint's tables and optimizer variables (build the
    optimizer first)."""
    restore_variables("table", model.weights, arrays)
    restore_variables("optimizer", optimizer.variables, arrays)


def fit_checkpoint(checkpointer, model, trainer, start=(0, 0), arrays=None, position=None):
    """A Keras callback that writes checkpoints of a `fit_by_epoch` training.

    Args:
        checkpointer: a `Checkpointer` (or `None`: restores, never writes).
        model: the model whose weights are the tables.
        trainer: the model `fit` runs (its optimizer and loss metric).
        start: `(epoch, step)` the training starts at.
        arrays: the checkpoint resumed from (its metric states are restored
            when the resumed epoch begins), or `None`.
        position: `() -> dict`, the caller's totals to save with the position.
    """
    import keras

    class FitCheckpoint(keras.callbacks.Callback):
        epoch, offset = start[0], 0

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch
            self.offset = start[1] if epoch == start[0] else 0
            if arrays is not None and epoch == start[0]:
                restore_variables("metric", trainer.metrics_variables, arrays)

        def on_train_batch_end(self, batch, logs=None):
            if checkpointer is not None and checkpointer.due():
                state = {"epoch": self.epoch, "step": self.offset + batch + 1,
                         **(position() if position else {})}
                # On JAX, `fit` holds the variables' values itself between
                # two epochs (the variables are emptied): put them back.
                sync = getattr(trainer, "jax_state_sync", None)
                if sync is not None:
                    sync()
                checkpointer.save(state, model_arrays(model, trainer.optimizer, trainer))

    return FitCheckpoint()


def checkpoint_arguments(parser):
    """`--checkpoint-every MINUTES` and `--resume DIR` (train-corpus, train-wordnet,
    train-hierarchy)."""
    parser.add_argument("--checkpoint-every", type=float, default=DEFAULT_MINUTES,
                        metavar="MINUTES",
                        help="save the tables, optimizer state and position in the data "
                             "to OUT/.checkpoint/ this often, between two steps (0: never; "
                             "removed when the run is written; default: %(default)s)")
    parser.add_argument("--resume", default=None, metavar="DIR",
                        help="continue the killed run in DIR from its checkpoint; give the "
                             "command's other settings as before (--out may be left out). "
                             "--engine native with --threads 1, --engine keras and the hierarchy "
                             "trainers end with the tables of an uninterrupted run, bit for bit")


def output_dir(args):
    """The run directory of a training command: `--out`, or `--resume`'s."""
    import os


    if args.resume is None and args.out is None:
        raise CommandError("give --out DIR (the run directory to write), or --resume DIR.")
    if args.resume is not None and args.out is not None \
            and os.path.abspath(args.out) != os.path.abspath(args.resume):
        raise CommandError(f"--resume {args.resume} continues the run in that directory; "
                           f"leave out --out {args.out} (or give the same directory).")
    return args.resume if args.resume is not None else args.out


def run_training_command(train, args, *positional, **keywords):
    """`train(*positional, **keywords)` with a training command's job flags
    (`--overwrite`, `--quiet`, `--checkpoint-every`, `--resume`, the
    distribution flags), a job's errors each one `CommandError` line."""
    from keras_gauss.distribution import DistributionError
    from keras_gauss.distribution import from_arguments
    from keras_gauss.io import OutputExistsError, OutputNotWritableError

    try:
        return train(*positional, overwrite=args.overwrite, verbose=0 if args.quiet else 1,
                     checkpoint_every=args.checkpoint_every, resume=args.resume is not None,
                     distribution=from_arguments(args), **keywords)
    except (CheckpointError, DistributionError) as error:
        raise CommandError(str(error)) from None
    except (OutputExistsError, OutputNotWritableError) as error:
        raise CommandError(f"--out {error}") from None
