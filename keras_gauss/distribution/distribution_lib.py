"""Training on several devices and processes: settings into a Keras distribution.

`DistributionConfig` holds the command-line settings (`--distribution`,
`--model-shards`, `--coordinator`, `--num-processes`, `--process-id`,
`--distribution-timeout`); `start_distribution` checks them, joins the
processes of a multi-process job and returns a `Distribution`: the scope
the trainers build, compile and fit in, which process writes the run (the
chief, process 0) and how each process takes its part of a batch.

- `--distribution data`: `keras.distribution.DataParallel` over every
  device of every process (JAX backend): each step's global batch is split
  over the devices, the tables are replicated.
- `--distribution model --model-shards N`: `keras.distribution.ModelParallel`
  on a `(batch, model)` mesh of `devices / N` by `N` of one process; the
  embedding tables and their AdaGrad accumulators are split by rows over
  the `model` axis (`LayoutMap`: `('model', None)`), for vocabularies that
  do not fit one device.
- Several processes (on one or several hosts): `--coordinator HOST:PORT
  --num-processes N --process-id I`, or Keras's `KERAS_DISTRIBUTION_JOB_ADDRESSES`,
  `KERAS_DISTRIBUTION_NUM_PROCESSES` and `KERAS_DISTRIBUTION_PROCESS_ID`.
  Before `keras.distribution.initialize` (which aborts the process, after a
  long wait, when a peer is missing) the processes meet at HOST:PORT over
  plain TCP (`keras_gauss.distribution.link.rendezvous`): a missing coordinator or peer is one
  `DistributionError` after `--distribution-timeout` seconds.

Each process of a multi-process job reads its own shard of the data
(`Distribution.shard`: elements `i::N` of the corpus's lines or of the
training edges), draws its own seeded stream from it
(`Distribution.process_seed`) and feeds its `batch_size / N` rows of every
global batch. The processes agree on what they must share over the JAX
job (`Distribution.allgather`): the word counts (one vocabulary) and the
steps of an epoch (`Distribution.agree_steps`: the fewest full local
batches any process has, so that all take the same number of steps;
`Distribution.local_batches` cuts every process's stream to them).

On the TensorFlow backend, `--distribution data` is
`tf.distribute.MirroredStrategy` over the local devices (the GPUs, else the
logical CPUs); Keras 3 runs no multi-worker TensorFlow strategy in
`model.fit` (keras-team/keras#20585), so several processes and
`--distribution model` need `KERAS_BACKEND=jax`.
"""

import contextlib
import dataclasses
import json
import os

from keras_gauss import __version__
from keras_gauss.distribution.link import DistributionError
from keras_gauss.distribution.link import check_timeout
from keras_gauss.distribution.link import job_crashed
from keras_gauss.distribution.link import one_line
from keras_gauss.distribution.link import rendezvous
from keras_gauss.distribution.link import split_address

KINDS = ("data", "model")
ENVIRONMENT = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "KERAS_DISTRIBUTION_NUM_PROCESSES",
               "KERAS_DISTRIBUTION_PROCESS_ID")


@dataclasses.dataclass
class DistributionConfig:
    """Distribution settings of a trainer (none set: one device, as before).

    Attributes:
        distribution: `None` (one device), `"data"` (`DataParallel`) or
            `"model"` (`ModelParallel`).
        model_shards: devices each table is split over (`"model"` only; 1).
        coordinator: `HOST:PORT` of process 0 (several processes), or `None`
            (`KERAS_DISTRIBUTION_JOB_ADDRESSES`, else one process).
        num_processes: processes of the job (`None`: the environment, else 1).
        process_id: this process, `0..num_processes-1` (`None`: the
            environment, else 0). Process 0 is the chief: it alone writes
            the run directory and the checkpoints.
        timeout: seconds to wait for the coordinator and the other
            processes, and to hear from a running one (60; at most a day).

    Example:

    >>> DistributionConfig("data", coordinator="10.0.0.1:7777", num_processes=2,
    ...                    process_id=1)  # doctest: +SKIP
    """

    distribution: str | None = None
    model_shards: int = 1
    coordinator: str | None = None
    num_processes: int | None = None
    process_id: int | None = None
    timeout: float = 60.0

    @property
    def active(self):
        return self.distribution is not None


def resolve(config, environ=None):
    """`config` with the job settings filled from the environment and checked.

    Pure: reads `environ` (default `os.environ`), touches no device.

    Returns:
        A `DistributionConfig` with `num_processes` and `process_id` set
        (and `coordinator` when `num_processes > 1`).

    Raises:
        DistributionError: a bad setting (one line naming it).

    Example:

    >>> resolve(DistributionConfig("data"), {"KERAS_DISTRIBUTION_NUM_PROCESSES": "1"}).process_id
    0
    """
    environ = os.environ if environ is None else environ
    check_timeout(config.timeout)
    if config.num_processes is not None and config.num_processes < 1:
        raise DistributionError(f"--num-processes must be >= 1, got {config.num_processes}.")
    if config.distribution is None:  # the job's flags alone mean nothing
        if ((config.num_processes or 1) > 1 or config.coordinator or config.model_shards != 1
                or config.process_id):
            raise DistributionError(
                "--num-processes, --process-id, --coordinator and --model-shards need "
                "--distribution data or model.")
        if _env_int(environ, ENVIRONMENT[1], "--num-processes", 1) > 1:
            raise DistributionError(  # else every process would train and write alone
                f"{ENVIRONMENT[1]}={environ[ENVIRONMENT[1]]} needs --distribution data.")
        return dataclasses.replace(config, num_processes=1, process_id=0)
    coordinator = config.coordinator
    if coordinator is None and environ.get(ENVIRONMENT[0]):
        coordinator = environ[ENVIRONMENT[0]].split(",")[0].strip()
    num = config.num_processes
    if num is None:
        num = _env_int(environ, ENVIRONMENT[1], "--num-processes", 1)
    pid = config.process_id
    if pid is None:
        pid = _env_int(environ, ENVIRONMENT[2], "--process-id", 0)
    if config.distribution not in KINDS:
        raise DistributionError(f"--distribution must be 'data' or 'model', got "
                                f"{config.distribution!r}.")
    if num < 1:
        raise DistributionError(f"--num-processes must be >= 1, got {num}.")
    if not 0 <= pid < num:
        raise DistributionError(f"--process-id must be in 0..{num - 1} (--num-processes "
                                f"{num}), got {pid}.")
    if config.model_shards < 1:
        raise DistributionError(f"--model-shards must be >= 1, got {config.model_shards}.")
    if config.model_shards > 1 and config.distribution != "model":
        raise DistributionError("--model-shards splits the tables: it needs --distribution model.")
    if config.distribution == "model" and num > 1:
        raise DistributionError(
            f"--distribution model runs on the devices of one process, not --num-processes "
            f"{num} (several processes: --distribution data).")
    if num > 1:
        if not coordinator:
            raise DistributionError(f"--num-processes {num} needs --coordinator HOST:PORT "
                                    "(the address of process 0).")
        split_address(coordinator)
    return dataclasses.replace(config, num_processes=num, process_id=pid,
                               coordinator=coordinator if num > 1 else None)


def _env_int(environ, name, flag, default):
    text = environ.get(name)
    if text in (None, ""):
        return default
    try:
        return int(text)
    except ValueError:
        raise DistributionError(f"{name}={text!r} ({flag}) is not an integer.") from None


def check_mesh(devices, model_shards):
    """`(batch, model)` mesh shape of `devices` split into `model_shards`, or the error.

    Args:
        devices: devices of the job.
        model_shards: devices each table is split over (`--model-shards`).

    Example:

    >>> check_mesh(4, 2)
    (2, 2)
    """
    if devices % model_shards:
        raise DistributionError(f"--model-shards {model_shards} does not divide the "
                                f"{devices} devices of the job.")
    return devices // model_shards, model_shards


def check_batch(batch_size, devices, num_processes, model_shards=1):
    """Checks that a global batch of `batch_size` splits over the job.

    Each process feeds `batch_size / num_processes` rows of every batch and
    each of the `devices / model_shards` data replicas its own equal part.

    Args:
        batch_size: rows of a global batch (`--batch-size`).
        devices: devices of the job.
        num_processes: processes of the job.
        model_shards: devices each table is split over (1).

    Raises:
        DistributionError: a batch that does not split evenly.

    Example:

    >>> check_batch(256, devices=2, num_processes=2)
    """
    if num_processes > batch_size:
        raise DistributionError(f"--num-processes {num_processes} is more than the "
                                f"--batch-size {batch_size} rows of a step to share.")
    replicas = max(devices // model_shards, num_processes)
    if batch_size % replicas:
        raise DistributionError(
            f"--batch-size {batch_size} does not split evenly over {replicas} data "
            f"shards ({devices} devices / --model-shards {model_shards}, "
            f"--num-processes {num_processes}); give a multiple of {replicas}.")

@dataclasses.dataclass(eq=False)
class Distribution:
    """A started distribution: its scope, the chief and this process's rows.

    Made by `start_distribution`; `Distribution()` is the one-device
    no-op (`scope()` does nothing, every batch is kept whole).

    Attributes:
        kind: `None`, `"data"` or `"model"`.
        num_processes, process_id: the job (1 and 0 without one).
        devices: devices of the whole job.
        model_shards: devices a table is split over.
        keras_distribution: the `keras.distribution.Distribution` (or `None`).
        strategy: the `tf.distribute.MirroredStrategy` on TensorFlow (or `None`).
        link: the processes' link of a multi-process job (or `None`).

    Example:

    >>> job = Distribution("data", num_processes=2, process_id=1, devices=2)
    >>> job.active, job.is_chief
    (True, False)
    """

    kind: str | None = None
    num_processes: int = 1
    process_id: int = 0
    devices: int = 1
    model_shards: int = 1
    keras_distribution: object = None
    strategy: object = None
    link: object = dataclasses.field(default=None, repr=False)

    @property
    def active(self):
        return self.kind is not None

    @property
    def is_chief(self):
        """Process 0: it alone writes the run directory and the checkpoints."""
        return self.process_id == 0

    def scope(self):
        """The scope to build, compile and fit the model in.

        With several processes, an error inside it is told to the others
        (each prints one line and stops); one caused by another process's
        end gives the line naming that process.
        """
        if self.strategy is not None:
            return self.strategy.scope()
        if self.link is not None:
            return self._job_scope()
        if self.keras_distribution is None:
            return contextlib.nullcontext()
        return self.keras_distribution.scope()

    @contextlib.contextmanager
    def _job_scope(self):
        try:
            with self.keras_distribution.scope():
                yield
        except BaseException as error:
            link = self.link
            reason = link.peer_failure(wait=min(2.0, link.timeout / 4), lost_only=True)
            if reason is not None:  # a collective broken by a peer's end: the cause wins
                link.stop(reason)
            if isinstance(error, ValueError):  # our one-line errors
                link.fail(one_line(error))
            else:  # a bug
                job_crashed(error)
            raise

    def finish(self):
        """This process's part of the job is done: no more collectives. From
        then on another process's end no longer stops this one (process 0
        goes on to evaluate and write the run); at exit the others wait for
        process 0. Nothing without several processes."""
        if self.link is not None:
            self.link.finish()

    def check_batch(self, batch_size):
        """`check_batch` of the job's devices and processes (nothing without a job)."""
        if self.active:
            check_batch(batch_size, self.devices, self.num_processes, self.model_shards)

    def check_rows(self, rows, what="--max-size"):
        """Checks that the tables' `rows` split evenly over `model_shards` devices."""
        if self.model_shards > 1 and rows % self.model_shards:
            raise DistributionError(
                f"--model-shards {self.model_shards} does not divide the {rows:,} rows of the "
                f"tables; give a --model-shards that divides it ({what} can set the rows).")

    def shard(self, dataset):
        """This process's share of `dataset`: its elements `i::N`.

        Process `i` of `N` keeps elements `i, i + N, i + 2N, ...` (lines of
        a corpus, rows of an edge array); unchanged with one process.

        Args:
            dataset: a `tf.data.Dataset` (e.g. of lines).

        Example:

        >>> import tensorflow as tf
        >>> job = Distribution("data", num_processes=2, process_id=1, devices=2)
        >>> [int(i) for i in job.shard(tf.data.Dataset.range(5)).as_numpy_iterator()]
        [1, 3]
        """
        if self.num_processes == 1:
            return dataset
        return dataset.shard(self.num_processes, self.process_id)

    def process_seed(self, seed):
        """The data seed of this process: `seed * N + i` (`seed` with one process).

        Every process draws its own stream (its shuffle, windows and
        negatives), all fixed by `seed`.

        Example:

        >>> Distribution("data", num_processes=2, process_id=1).process_seed(5)
        11
        """
        return int(seed) * self.num_processes + self.process_id

    def allgather(self, value):
        """Every process's `value` (JSON-able), in process order.

        Runs over the JAX job (`jax.experimental.multihost_utils`); every
        process must call it, with its own value. `[value]` with one
        process.

        Example:

        >>> Distribution().allgather({"lines": 3})
        [{'lines': 3}]
        """
        if self.num_processes == 1:
            return [value]
        import numpy as np
        from jax.experimental import multihost_utils

        data = np.frombuffer(json.dumps(value).encode("utf-8"), np.uint8)
        sizes = np.asarray(multihost_utils.process_allgather(
            np.array([data.size], np.int64))).reshape(-1)
        padded = np.zeros(int(sizes.max()), np.uint8)
        padded[:data.size] = data
        rows = np.asarray(multihost_utils.process_allgather(padded))
        return [json.loads(bytes(rows[i, :sizes[i]]).decode("utf-8"))
                for i in range(self.num_processes)]

    def agree_steps(self, local_steps, rows, what="data"):
        """The steps of an epoch every process takes: the fewest `local_steps` of any.

        Every process must call it (`allgather`). All of them raise the
        same `DistributionError` when a process has no full batch.

        Args:
            local_steps: full local batches this process's shard gives an epoch.
            rows: rows of a local batch (`--batch-size / N`), for the error.
            what: the data, for the error (e.g. "corpus").

        Returns:
            `(steps, every)`: the agreed steps and every process's `local_steps`.

        Example:

        >>> Distribution().agree_steps(7, rows=256)
        (7, [7])
        """
        every = [int(n) for n in self.allgather(int(local_steps))]
        steps = min(every)
        if steps < 1:
            empty = every.index(steps)
            raise DistributionError(
                f"--num-processes {self.num_processes}: process {empty}'s shard of the "
                f"{what} gives no full batch of {rows} rows (--batch-size / "
                f"--num-processes) an epoch; give fewer "
                "processes, a smaller --batch-size or more data.")
        return steps, every

    def local_batches(self, dataset, batch_size, steps=None):
        """This process's batches of an epoch: full batches, `steps` of them.

        Partial batches are dropped. With `steps` (several processes: each
        reads its own shard, `agree_steps`), exactly `steps` batches: a
        stream that runs short (fewer pairs than expected this epoch)
        continues into its next pass, at most `steps + 1` passes.

        Args:
            dataset: this process's `(x, y)` batches.
            batch_size: rows of a full batch of this process.
            steps: the agreed steps of an epoch (`None`: every full batch).

        Example:

        >>> import tensorflow as tf
        >>> data = tf.data.Dataset.range(5).map(lambda i: ({"w": i}, i)).batch(2)
        >>> [len(y) for _, y in Distribution("data").local_batches(data, 2, steps=3)]
        [2, 2, 2]
        """
        if not self.active:
            return dataset
        import tensorflow as tf

        def full(x, y):
            return tf.shape(y)[0] == batch_size

        dataset = dataset.filter(full)
        if steps is not None:
            dataset = dataset.repeat(steps + 1).take(steps)
        return dataset


def table_layout_map(device_mesh):
    """The `LayoutMap` that splits every embedding table (and its AdaGrad
    accumulator) by rows over the mesh's `model` axis.

    Args:
        device_mesh: a `keras.distribution.DeviceMesh` with a `model` axis.

    Example:

    >>> mesh = keras.distribution.DeviceMesh((1, 2), ["batch", "model"])  # doctest: +SKIP
    >>> table_layout_map(mesh)["words/means"]  # doctest: +SKIP
    """
    import keras

    layout_map = keras.distribution.LayoutMap(device_mesh)
    layout_map[r".*(means|variances).*"] = ("model", None)
    return layout_map


def start_distribution(config, environ=None, settings=None):
    """Checks `config`, joins the job and returns the `Distribution`.

    Call it before anything else touches JAX (the multi-process
    initialisation must come first).

    Args:
        config: a `DistributionConfig`.
        environ: the environment to read (default `os.environ`).
        settings: the trainer's settings every process must share (a
            JSON-able dict, e.g. the config's fields; file paths, which may
            differ between hosts, left out): compared at the rendezvous.

    Raises:
        DistributionError: a bad or impossible setting, a backend that
            cannot do it, an unreachable coordinator or missing process.

    Example:

    >>> job = start_distribution(DistributionConfig("data"))  # doctest: +SKIP
    >>> with job.scope():  # doctest: +SKIP
    ...     model = build_model()
    """
    config = resolve(config, environ)
    if not config.active:
        return Distribution()
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow" and config.distribution == "data" and config.num_processes == 1:
        return _mirrored(config)
    if backend != "jax":
        what = (f"--num-processes {config.num_processes}" if config.num_processes > 1
                else f"--distribution {config.distribution}")
        raise DistributionError(
            f"{what} needs KERAS_BACKEND=jax (the {backend} backend runs --distribution data "
            "on one process only: Keras 3 has no multi-worker TensorFlow strategy in "
            "model.fit, keras-team/keras#20585).")
    link = None
    if config.num_processes > 1:
        settings = {"keras_gauss": __version__, "backend": backend,
                    "distribution": config.distribution, "model_shards": config.model_shards,
                    **(settings or {})}
        link = rendezvous(config.coordinator, config.num_processes, config.process_id,
                          config.timeout, settings, environ).start()
        _quiet_jax()
        try:
            keras.distribution.initialize(config.coordinator, config.num_processes,
                                          config.process_id)
        except Exception as error:  # the backend's own errors
            message = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise DistributionError(f"--coordinator {config.coordinator}: the JAX job did not "
                                    f"start ({type(error).__name__}: {message}).") from None
    devices = keras.distribution.list_devices()
    if config.distribution == "data":
        distribution = keras.distribution.DataParallel(devices=devices,
                                                       auto_shard_dataset=False)
        shards = 1
    else:
        shards = config.model_shards
        shape = check_mesh(len(devices), shards)
        mesh = keras.distribution.DeviceMesh(shape, ["batch", "model"], devices)
        distribution = keras.distribution.ModelParallel(
            layout_map=table_layout_map(mesh), batch_dim_name="batch",
            auto_shard_dataset=False)
    return Distribution(config.distribution, config.num_processes, config.process_id,
                        len(devices), shards, distribution, link=link)



def _quiet_jax():
    """JAX's multi-process runtime as quiet as TensorFlow: its C++ log obeys
    `TF_CPP_MIN_LOG_LEVEL` (the CLI sets 3: fatal errors only), so a peer's
    end is this process's one line, not the runtime's error lines too; and
    its preemption service (unused here, its barrier logs an error when a
    process ends) is off."""
    import jax

    jax.config.update("jax_enable_preemption_service", False)
    level = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "")
    if level in ("0", "1", "2", "3"):
        try:
            from jax._src.lib import utils  # no public way to set the C++ level alone
            utils.absl_set_min_log_level(int(level))
        except (ImportError, AttributeError):  # pragma: no cover - another JAX
            pass


_STRATEGIES = {}


def _mirrored(config):
    """`tf.distribute.MirroredStrategy` over the GPUs, else the logical CPUs."""
    import tensorflow as tf

    devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
    names = tuple(d.name for d in devices)
    # One strategy per process and devices: two over the same devices would
    # share collective op keys (a second run in the same process fails).
    if names not in _STRATEGIES:
        _STRATEGIES[names] = tf.distribute.MirroredStrategy(list(names))
    strategy = _STRATEGIES[names]
    return Distribution("data", 1, 0, strategy.num_replicas_in_sync, 1, strategy=strategy)
