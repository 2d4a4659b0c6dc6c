"""One training job: the sequence every trainer runs, with its engine plugged in.

`train_corpus` (every engine, the native trainer included) and
`train_wordnet` / `train_hierarchy` are a `Job` run with an `Engine`, the
part that differs: how the data are read, the tables built, trained and
written. `Job.run` does the rest, in this order, the same for all:

1. check every setting (the trainer's `check`, the checkpoint interval, the
   distribution flags): nothing is imported or read before;
2. take the output (process 0): `keras_gauss.io.OutputClaim` locks it for
   the whole job and repairs what a killed writer left;
3. start the distribution (`keras_gauss.distribution.start_distribution`);
4. resume (`--resume`: the checkpoint, checked against the settings) or
   refuse to start over an interrupted run; check the output may be
   written (`overwrite` replaces only a run of ours);
5. read the data (`Engine.read`): the table rows and the digest of the
   content read; a resumed run must have read data of the same digest;
6. check memory and disk space for the tables;
7. build (`Engine.build`), restoring a checkpoint: its tables must be
   finite and within their bounds;
8. train (`Engine.train`; it asks `job.checkpointer` between steps);
9. check the tables: finite and within their bounds;
10. the metrics (`Engine.metrics`);
11. write the run (process 0): `Engine.write`, `metrics.json`, `run.json`
    and the marker, last, into a directory that replaces the output whole.

An engine subclasses `Engine`; a trainer gives `Job.run` the engines that
may train its data, in order of preference. A run's identity for
`--resume` is its settings and the digest of the data it read (`Digest`),
which every engine of a trainer computes the same way.

Example: a toy engine whose training adds 0.1 to every mean of one table.

>>> import os
>>> class Toy(Engine):
...     name = "toy"
...     def read(self, job):  # the data: two lines
...         digest = Digest()
...         digest.update(b"a\\nb\\n")
...         return Data(rows=2, dim=3, tables=1, digest=digest.hexdigest())
...     def build(self, job, arrays):
...         self.means, self.variances = np.zeros((2, 3)), np.ones((2, 3))
...     def tables(self):
...         return [Table("nodes", self.means, self.variances, 4.0, 0.05, 5.0)]
...     def train(self, job):
...         self.means += 0.1
...     def metrics(self, job):
...         return {"mean": round(float(self.means.mean()), 6)}
...     def write(self, job, directory):
...         np.save(directory / "means.npy", self.means)
...         return {"kind": "hierarchy", "energy": "kl", "table": "nodes",
...                 "vocabulary": "nodes.tsv"}
>>> Job("hierarchy", "runs/toy", {"dim": 3}, verbose=0).run(lambda state: [Toy()])
{'mean': 0.1}
>>> sorted(os.listdir("runs/toy"))  # the marker, written last, makes it a run of ours
['.keras-gauss', 'means.npy', 'metrics.json', 'run.json']
"""

import dataclasses
import hashlib
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

from keras_gauss.callbacks.progress import Phase
from keras_gauss.checkpoint import CheckpointError
from keras_gauss.checkpoint import Checkpointer
from keras_gauss.checkpoint import check_data
from keras_gauss.checkpoint import check_minutes
from keras_gauss.checkpoint import has_checkpoint
from keras_gauss.checkpoint import FILE_SETTINGS
from keras_gauss.checkpoint import load_for_resume
from keras_gauss.checkpoint import refuse_unfinished
from keras_gauss.checks import TrainingDivergedError
from keras_gauss.checks import check_table_bounds
from keras_gauss.distribution import Distribution
from keras_gauss.distribution import resolve
from keras_gauss.distribution import start_distribution
from keras_gauss.history import write_history
from keras_gauss.io import RUN
from keras_gauss.io import RUN_IN_PROGRESS
from keras_gauss.io import OutputClaim
from keras_gauss.io import atomic_directory
from keras_gauss.io import check_writable
from keras_gauss.io import output_content
from keras_gauss.checks import check_table_memory
from keras_gauss.run_format import jsonable
from keras_gauss.run_format import write_run_info


class Digest:
    """The content digest of the data a run read (SHA-256), part of its identity.

    Example:

    >>> digest = Digest()
    >>> digest.update(b"the cat sat\\n")
    >>> digest.hexdigest()[:19]
    'sha256:f3e318b861f0'
    """

    def __init__(self, kind="data"):
        self._hash = hashlib.sha256(f"keras-gauss {kind} digest 1\n".encode("utf-8"))

    def update(self, data):
        """Adds bytes (or a numpy array's bytes, little-endian) in order."""
        if isinstance(data, np.ndarray):
            data = np.ascontiguousarray(data, data.dtype.newbyteorder("<")).tobytes()
        self._hash.update(data)

    def update_strings(self, strings):
        """Adds a sequence of strings, each ended by a NUL byte."""
        for text in strings:
            self._hash.update(text.encode("utf-8", "surrogatepass") + b"\0")

    def hexdigest(self):
        return "sha256:" + self._hash.hexdigest()


@dataclasses.dataclass
class Data:
    """What `Engine.read` read: the tables' size and the data's digest.

    Attributes:
        rows: rows of each table (vocabulary size, nodes).
        dim: the embedding dimension.
        tables: tables of `rows x dim` means and variances (memory estimate).
        digest: `Digest.hexdigest()` of the content read.
        rows_flag: the setting that sets the rows (messages).
    """

    rows: int
    dim: int
    tables: int
    digest: str
    rows_flag: str = "--max-size"


@dataclasses.dataclass
class Table:
    """A table to check: its name, `(n, d)` means and `(n, d)` or `(n, 1)`
    variances, and its bounds (None: unbounded)."""

    name: str
    means: object
    variances: object
    max_norm: float | None
    min_variance: float | None
    max_variance: float | None


class Engine:
    """The part of a training job that differs between trainers and engines.

    Subclass it and give the job a list of engines (`Job.run`). Every method
    gets the `Job`, whose attributes give what the job set up: `job.state`
    (a resumed checkpoint's position and totals, `{}` for a fresh run),
    `job.distribution`, `job.checkpointer` (call `due()` between two steps
    and `save(position, arrays)` when it is), `job.verbose`, `job.elapsed()`.

    Attributes:
        name: recorded in checkpoints; a run resumes only with the engine
            that started it.
    """

    name = None

    def read(self, job):
        """Reads the data; returns `Data` (with the digest of the content
        read, computed as every engine of the trainer computes it), or None
        when this engine cannot train it (the job takes the next one)."""
        raise NotImplementedError

    def build(self, job, arrays):
        """Builds the tables (inside their bounds) and the optimizer;
        restores a checkpoint's `arrays` when not None."""
        raise NotImplementedError

    def tables(self):
        """The `Table`s to check, with their bounds."""
        raise NotImplementedError

    def train(self, job):
        """Trains from `job.state`'s position, checkpointing when due."""
        raise NotImplementedError

    def metrics(self, job):
        """The metrics dict (`metrics.json`); raises when training produced
        nothing to write."""
        raise NotImplementedError

    def write(self, job, directory):
        """Writes the engine's run files into `directory` (the job adds
        `metrics.json`, `run.json` and the marker); returns `run.json`'s
        entries (`keras_gauss.run_format.write_run_info`)."""
        raise NotImplementedError

    def history(self):
        """`{column: [value per epoch]}` for the run's `history.csv` and
        `history.png` (`keras_gauss.history`): by default the `losses`
        attribute the engine's `train` leaves, as `loss`."""
        return {"loss": getattr(self, "losses", None)}


# The engines, in the order a job falls back from one that cannot start here
# to the next (`choose_engine`).
ENGINES = ("native", "keras")
# The engines of earlier versions, and what trains the same way now.
FORMER_ENGINES = {
    "fused": "--engine native (the C++ trainer that draws its own pairs)",
    "fused-step": "--engine keras (model.fit with the layers, whose compiled kernels are "
                  "the same step)",
}


def check_engine(engine, refusals=None):
    """Checks an `--engine` value, before any work: one line when it names no
    engine (an earlier engine's name says what to use instead) or an engine
    that cannot do one of the job's settings.

    Args:
        engine: `"native"` (the C++ trainer, no TensorFlow) or `"keras"`
            (`model.fit` with the layers).
        refusals: `{engine: reason}`: why that engine cannot train this job
            (a setting, a backend), a phrase; a false reason is no refusal.

    Raises:
        ValueError: one line naming `--engine`.

    Example:

    >>> check_engine("keras")
    >>> check_engine("fused")
    Traceback (most recent call last):
    ...
    ValueError: --engine fused is gone: use --engine native (the C++ trainer that draws its own pairs).
    >>> check_engine("native", {"native": "runs no Keras callbacks"})
    Traceback (most recent call last):
    ...
    ValueError: --engine native runs no Keras callbacks; use --engine keras.
    """
    if engine in FORMER_ENGINES:
        raise ValueError(f"--engine {engine} is gone: use {FORMER_ENGINES[engine]}.")
    if engine not in ENGINES:
        raise ValueError(f"--engine must be {' or '.join(ENGINES)}, got {engine!r}.")
    reason = (refusals or {}).get(engine)
    if reason:
        others = [f"--engine {name}" for name in ENGINES
                  if name != engine and not (refusals or {}).get(name)]
        raise ValueError(f"--engine {engine} {reason}"
                         + (f"; use {' or '.join(others)}." if others else "."))


def jax_gpu():
    """The kind of GPU that Keras's JAX backend would train on here
    (`"NVIDIA H200"`), or None: no GPU, or a backend other than JAX.

    Only with `KERAS_BACKEND=jax` in the environment is JAX imported (the
    native trainer's path imports neither Keras nor TensorFlow nor JAX).
    On a GPU the commands train with the keras engine on JAX, where its
    steps compile with XLA; TensorFlow does not compile our layers' steps.

    Example:

    >>> jax_gpu() is None  # this machine: no GPU, or not KERAS_BACKEND=jax
    True
    """
    if os.environ.get("KERAS_BACKEND") != "jax":
        return None
    try:
        import jax

        device = jax.devices()[0]
    except Exception:  # no usable backend: the CPU defaults
        return None
    return device.device_kind if device.platform == "gpu" else None


def device_settings(args, settings, defaults, gpu=None):
    """Fills in a command's settings left unset (None in `args`): on a GPU
    (`jax_gpu`, or `gpu`, its name) with `settings` (`{field: value}`, the
    keras engine first) unless `--engine native` or a `--distribution` was
    asked for, else with the values of `defaults` (the trainer's config).
    The one place where `train-corpus`, `train-wordnet` and
    `train-hierarchy` choose their GPU settings.

    Args:
        args: the command's `argparse.Namespace`; every field of `settings`
            is None unless given.
        settings: the GPU's values (`keras_gauss.pipelines.train.GPU_SETTINGS`,
            `keras_gauss.hierarchy.config.GPU_SETTINGS`).
        defaults: the CPU's values: an object with those fields.
        gpu: the GPU's name, or None to ask `jax_gpu`.

    Returns:
        The line that says the GPU is used, or None.

    Example:

    >>> from argparse import Namespace
    >>> gpu, cpu = {"engine": "keras", "batch_size": 4096}, Namespace(engine="native",
    ...                                                               batch_size=1024)
    >>> device_settings(Namespace(engine=None, batch_size=None), gpu, cpu, gpu="NVIDIA H200")
    'GPU NVIDIA H200: --engine keras, --batch-size 4096 (--engine native: the C++ trainer on the CPU)'
    >>> args = Namespace(engine="native", batch_size=None)
    >>> device_settings(args, gpu, cpu, gpu="NVIDIA H200") is None, args.batch_size
    (True, 1024)
    """
    # With --distribution the job starts JAX's distributed runtime first:
    # no device may be asked for before (and the settings stay the CPU's).
    distributed = getattr(args, "distribution", None) is not None
    if args.engine != "native" and gpu is None and not distributed:
        gpu = jax_gpu()
    use = gpu is not None and args.engine in (None, "keras") and not distributed
    for field, value in settings.items():
        if getattr(args, field) is None:
            setattr(args, field, value if use else getattr(defaults, field))
    if not use:
        return None
    chosen = ", ".join(f"--{field.replace('_', '-')} {getattr(args, field)}" for field in settings)
    return f"GPU {gpu}: {chosen} (--engine native: the C++ trainer on the CPU)"


def choose_engine(engine, engines):
    """The engine that trains a job: the one function that chooses.

    The named engine, or where it cannot start here the next one in the
    list that can (after one `RuntimeWarning` for each skipped).

    Args:
        engine: the checked `--engine` value (`check_engine`).
        engines: `[(name, make, unavailable)]` in `ENGINES` order: `make`,
            `() -> Engine`; `unavailable`, `() -> None` when the engine can
            start here, else the reason it cannot (a phrase), or None for
            an engine that always can.

    Returns:
        A list of one `Engine`, as `Job.run`'s `engines` returns it.

    Raises:
        RuntimeError: no engine from the named one on can start here.

    Example:

    >>> choose_engine("keras", [("native", list, None), ("keras", dict, None)])
    [{}]
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as said:
    ...     warnings.simplefilter("always")
    ...     choose_engine("native", [("native", list, lambda: "no g++"), ("keras", dict, None)])
    [{}]
    >>> str(said[0].message)
    'the native trainer is unavailable (no g++); training with --engine keras instead.'
    """
    names = [name for name, _, _ in engines]
    reasons = []
    for i, (name, make, unavailable) in enumerate(engines[names.index(engine):]):
        reason = unavailable() if unavailable is not None else None
        if reason is None:
            return [make()]
        reasons.append(f"{name}: {reason}")
        following = names[names.index(engine) + i + 1:]
        if following:
            warnings.warn(f"the {name} trainer is unavailable ({reason}); training with "
                          f"--engine {following[0]} instead.", RuntimeWarning, stacklevel=2)
    raise RuntimeError(f"no engine can train here ({'; '.join(reasons)}).")


def model_tables(model):
    """The `Table` of every `GaussianEmbedding` layer of a Keras model, with the
    layer's bounds (for the `tables` of an engine that trains one)."""
    from keras_gauss.layers import GaussianEmbedding  # (imports Keras: only for its engines)

    return [Table(layer.name, layer.means.numpy(), layer.variances.numpy(), layer.max_norm,
                  layer.min_variance, layer.max_variance)
            for layer in model._flatten_layers(include_self=False)
            if isinstance(layer, GaussianEmbedding)]


def check_tables(tables, where):
    """`keras_gauss.checks.check_table_bounds` of every `Table`; `ValueError`
    naming `where` and the table."""
    for table in tables:
        check_table_bounds(table.means, table.variances, f"{where}, table {table.name!r}",
                           table.max_norm, table.min_variance, table.max_variance)


class Job:
    """A training job: the settings, the output and the sequence of `run`.

    Args:
        kind: `"corpus"` or `"hierarchy"` (the checkpoint's kind).
        out_dir: the run directory.
        settings: the run's settings (JSON-able): with the data's digest,
            its identity for `--resume`.
        check: `() -> None`, raises `ValueError` naming a bad setting;
            called first, before anything is imported or read.
        data_name: how messages name the data (`"corpus"`, `"hierarchy"`).
        overwrite: replace a run of ours in `out_dir`.
        resume: continue the interrupted run in `out_dir`.
        checkpoint_every: minutes between checkpoints (0: none).
        verbose: as the trainers' `verbose`.
        distribution: a `keras_gauss.distribution.DistributionConfig`, or None.
        batch_size: checked against the distribution's devices.
        defaults: settings added after checkpoints were first written
            (`keras_gauss.checkpoint.load_for_resume`).

    Attributes (for the engine):
        distribution: the started `keras_gauss.distribution.Distribution`.
        state: the resumed checkpoint's state (`{}` for a fresh run).
        checkpointer: a `keras_gauss.checkpoint.Checkpointer`, or None.
        data: what `Engine.read` returned.
    """

    def __init__(self, kind, out_dir, settings, check=None, data_name="data",
                 overwrite=False, resume=False, checkpoint_every=0.0, verbose=1,
                 distribution=None, batch_size=None, defaults=None):
        self.kind = kind
        self.out_dir = out_dir
        self.settings = json.loads(json.dumps(settings))
        self._check = check
        self.data_name = data_name
        self.overwrite = bool(overwrite)
        self.resume = bool(resume)
        self.checkpoint_every = checkpoint_every
        self.verbose = verbose
        self.distribution_config = distribution
        self.batch_size = batch_size
        self.defaults = defaults
        self.distribution = Distribution()
        self.state = {}
        self.arrays = None
        self.checkpointer = None
        self.data = None
        self._start = None

    # ----------------------------------------------------------- for engines

    @property
    def is_chief(self):
        return self.distribution.is_chief

    def elapsed(self):
        """Training seconds so far, the interrupted run's included."""
        seconds = self.state.get("train_seconds", 0.0)
        if self._start is not None:
            seconds += time.perf_counter() - self._start
        return seconds

    def distribution_info(self):
        """`metrics.json`'s `distribution` entry (None without a distribution)."""
        job = self.distribution
        if not job.active:
            return None
        return {"kind": job.kind, "devices": job.devices, "processes": job.num_processes,
                "model_shards": job.model_shards}

    # ------------------------------------------------------------------- run

    def run(self, engines):
        """Runs the job (see the module docstring).

        Args:
            engines: `state -> [Engine, ...]`: the engines that may train it,
                in order of preference, given the resumed checkpoint's state
                (None for a fresh run); the first whose `read` returns data
                trains.

        Returns:
            The metrics dict.
        """
        if self._check is not None:
            self._check()
        check_minutes(self.checkpoint_every)
        config = None
        if self.distribution_config is not None:
            config = resolve(self.distribution_config)  # flags without --distribution: error
        chief = config is None or config.process_id == 0
        claim = OutputClaim(self.out_dir, RUN) if chief else None
        if claim is None:
            return self._run(engines, config, None)
        with claim:
            return self._run(engines, config, claim)

    def _run(self, engines, config, claim):
        if config is not None and config.active:
            self.distribution = start_distribution(  # before anything touches JAX;
                config, settings={"trainer": self.kind,  # the processes compare settings
                                  **{k: v for k, v in self.settings.items()
                                     if k not in FILE_SETTINGS}})  # (paths may differ)
            self.distribution.check_batch(self.batch_size)
            if not self.is_chief:  # process 0 writes the run and the checkpoints
                self.checkpoint_every, self.verbose = 0, 0
        state = self._resume_or_refuse()
        if claim is not None:
            claim.check(self.overwrite or self.resume)
        for engine in engines(state):
            self.data = engine.read(self)
            if self.data is not None:
                break
        else:  # pragma: no cover - the last engine reads any data
            raise ValueError(f"no engine can train this {self.data_name}.")
        self._check_identity(state, engine)
        self._check_resources(claim)
        engine.build(self, self.arrays)
        if self.arrays is not None:
            try:
                check_tables(engine.tables(), f"--resume {self.out_dir}: the checkpoint")
            except ValueError as error:
                raise CheckpointError(f"{error} The checkpoint is damaged; start again "
                                      "with --overwrite.") from None
        if self.checkpoint_every:
            self.checkpointer = Checkpointer(
                self.out_dir, self.checkpoint_every, self.kind, self.settings,
                extra={"data": self.data.digest, "engine": engine.name})
        self._start = time.perf_counter()
        try:
            engine.train(self)
            self.distribution.finish()  # no more collectives: another's end can't stop it
        finally:
            if self.checkpointer is not None:
                self.checkpointer.wait()  # before the run replaces the directory
        try:
            check_tables(engine.tables(), "training")
        except ValueError as error:
            raise TrainingDivergedError(f"{error} No run was written; try a lower "
                                        "--learning-rate.") from None
        metrics = jsonable(engine.metrics(self))
        if claim is None:
            return metrics  # process 0 writes the run
        self._write(engine, metrics)
        return metrics

    def _resume_or_refuse(self):
        """The checkpoint to continue (its state, None for a fresh run)."""
        out = Path(self.out_dir)
        if self.resume:
            if output_content(out) == RUN_IN_PROGRESS and not has_checkpoint(out):
                if self.verbose:
                    print(f"{out} holds no complete checkpoint (the run was stopped before its "
                          "first one): training from the start")
                return None
            state, self.arrays = load_for_resume(out, self.kind, self.settings, self.defaults)
            self.state = state
            return state
        if self.is_chief:
            refuse_unfinished(out, self.overwrite)
        return None

    def _check_identity(self, state, engine):
        if state is None:
            return
        check_data(self.out_dir, state, self.data.digest, self.data_name)
        if state.get("engine") != engine.name:
            raise CheckpointError(
                f"--resume {self.out_dir}: the run trained with the {state.get('engine')} "
                f"engine, this one would use {engine.name} (give --engine {state.get('engine')}; "
                "is the native trainer unavailable now?).")

    def _check_resources(self, claim):
        """Before any training: the tables fit in memory, the run on disk."""
        data = self.data
        check_table_memory(data.rows, data.dim, tables=data.tables)
        self.distribution.check_rows(data.rows, data.rows_flag)
        if claim is not None:
            per_value = 48 if self.checkpoint_every else 16  # tables, accumulators, copies
            check_writable(claim.path, per_value * data.tables * data.rows * data.dim
                           + (1 << 20))

    def _write(self, engine, metrics):
        with Phase(f"saving the run to {self.out_dir}", self.verbose), \
                atomic_directory(self.out_dir, overwrite=True, content=RUN) as tmp:
            info = engine.write(self, tmp)
            write_history(tmp, engine.history())  # the training curves: CSV and PNG
            (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
            write_run_info(tmp, **info)
