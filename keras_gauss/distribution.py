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
  plain TCP (`rendezvous`): a missing coordinator or peer is one
  `DistributionError` after `--distribution-timeout` seconds.

The rendezvous is safe on a port others can reach. Process 0 serves every
connection at once, each for at most a few seconds, and counts a process
only when it proves the job token: an HMAC-SHA256, keyed by the job's
secret (`KERAS_GAUSS_JOB_SECRET`, the same on every process; empty by
default), of a random challenge process 0 sent and of everything the
process says; process 0 answers with an HMAC of the process's own
challenge. So an idle connection (a port scan, a health check), a foreign
program, a replayed conversation or, with a secret, anyone who does not
know it is ignored and cannot join or impersonate process 0; without a
secret the token still keeps out everything that is not a keras-gauss
process of this protocol. Then the processes compare their settings (the
trainer's config, the distribution, the version): a difference is one line
on every process naming the setting (`--dim 16 on process 1, 8 on process
0`), before any collective.

The connections of the rendezvous stay open for the whole job (`_Link`):
every process sends a heartbeat each second, and a process that ends
before the job is done (killed, crashed, or stopped by an error), or sends
nothing for `--distribution-timeout` seconds, becomes one line on every
other process within seconds (process 0 relays it), which then stops:
without it a process would wait in a collective until JAX's coordination
service aborts it with a C++ stack, minutes later. A process whose part is
done (`Distribution.finish`, after training) is not stopped by another's
end; process 0 waits for nothing then (it writes the run), and the others
wait, at their exit, for process 0 to finish.

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

import atexit
import contextlib
import dataclasses
import hashlib
import hmac
import json
import math
import os
import secrets
import selectors
import socket
import sys
import threading
import time

from keras_gauss import __version__

KINDS = ("data", "model")
ENVIRONMENT = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "KERAS_DISTRIBUTION_NUM_PROCESSES",
               "KERAS_DISTRIBUTION_PROCESS_ID")
# The job's shared secret (optional): the key of the job token.
SECRET = "KERAS_GAUSS_JOB_SECRET"
# The longest --distribution-timeout (a day): waiting longer is a mistake.
MAX_TIMEOUT = 86400.0
PROTOCOL = "keras-gauss-job/1"
_LINE_LIMIT = 1 << 16  # bytes of one line of the rendezvous
_HANDSHAKE_SECONDS = 10.0  # how long process 0 waits for a connection's hello


class DistributionError(ValueError):
    """A distribution that cannot run here; the message is one line naming the setting.

    The command lines print it as one error line (exit status 2).

    Example:

    >>> raise DistributionError("--num-processes 0 must be >= 1.")  # doctest: +SKIP
    """


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


def check_timeout(timeout):
    """Returns `timeout` if it is a number of seconds in `(0, MAX_TIMEOUT]`;
    else `DistributionError` naming `--distribution-timeout`.

    Example:

    >>> check_timeout(float("inf"))
    Traceback (most recent call last):
    keras_gauss.distribution.DistributionError: --distribution-timeout must be a number of seconds > 0 and at most 86400 (a day), got inf.
    """
    ok = (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
          and math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT)
    if not ok:
        raise DistributionError(f"--distribution-timeout must be a number of seconds > 0 "
                                f"and at most {MAX_TIMEOUT:g} (a day), got {timeout}.")
    return timeout


def _env_int(environ, name, flag, default):
    text = environ.get(name)
    if text in (None, ""):
        return default
    try:
        return int(text)
    except ValueError:
        raise DistributionError(f"{name}={text!r} ({flag}) is not an integer.") from None


def split_address(address):
    """`(host, port)` of `HOST:PORT`, or `DistributionError` naming `--coordinator`.

    Example:

    >>> split_address("10.0.0.1:7777")
    ('10.0.0.1', 7777)
    """
    host, _, port = str(address).rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DistributionError(f"--coordinator {address}: give HOST:PORT, e.g. "
                                "10.0.0.1:7777.")
    return host.strip("[]"), int(port)


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


def rendezvous(coordinator, num_processes, process_id, timeout, settings=None,
               environ=None):
    """Meets the other processes at `coordinator` over TCP, or raises `DistributionError`.

    Process 0 listens on the coordinator's port and serves every connection
    at once: it sends a random challenge and counts the connection as a
    process of the job only when, within a few seconds, it answers with the
    job token (see the module docstring) and its id and settings. When all
    `num_processes - 1` others are in, it compares their settings with its
    own and tells each to go on (with its own token) or why not, and
    closes the port (for the JAX coordination service to take); the
    connections stay open (`_Link`). The others connect, retrying, until
    answered. Every wait ends after `timeout` seconds.

    Args:
        coordinator: `HOST:PORT` of process 0.
        num_processes: processes of the job.
        process_id: this process.
        timeout: seconds to wait.
        settings: what every process must agree on (a JSON-able dict whose
            keys are settings, e.g. `{"dim": 16}`; `num_processes` is
            always compared).
        environ: the environment (`KERAS_GAUSS_JOB_SECRET`; default
            `os.environ`).

    Returns:
        The `_Link` to the other processes (not yet watching them).

    Raises:
        DistributionError: a coordinator or process missing after `timeout`,
            a differing setting (on every process, naming it), a wrong job
            token, or an address that cannot be used.

    Example:

    >>> link = rendezvous("127.0.0.1:7777", 2, 1, timeout=60)  # doctest: +SKIP
    """
    host, port = split_address(coordinator)
    check_timeout(timeout)
    environ = os.environ if environ is None else environ
    # As the others will see them (JSON: tuples as lists, other values as text).
    settings = json.loads(json.dumps({**(settings or {}), "num_processes": num_processes},
                                     sort_keys=True, default=str))
    job = _Job(coordinator, num_processes, process_id, timeout, settings,
               (environ.get(SECRET) or "").encode("utf-8"))
    deadline = time.monotonic() + timeout
    if process_id == 0:
        sockets = _rendezvous_chief(host, port, job, deadline)
    else:
        sockets = _rendezvous_worker(host, port, job, deadline)
    return _Link(process_id, num_processes, sockets, timeout)


@dataclasses.dataclass
class _Job:
    coordinator: str
    num_processes: int
    process_id: int
    timeout: float
    settings: dict
    secret: bytes

    def mac(self, *parts):
        """The job token of `parts`: HMAC-SHA256 keyed by the job's secret."""
        return hmac.new(b"keras-gauss job token\0" + self.secret, b"\0".join(parts),
                        hashlib.sha256).hexdigest()


def _show(value):
    return json.dumps(value) if not isinstance(value, str) else value


def _difference(mine, theirs, pid):
    """The first setting on which process `pid` differs from process 0, as a phrase."""
    keys = ["num_processes"] + sorted((set(mine) | set(theirs)) - {"num_processes"})
    for key in keys:
        if mine.get(key) != theirs.get(key):
            flag = "--" + key.replace("_", "-")
            return (f"the processes' settings differ: {flag} {_show(theirs.get(key))} on "
                    f"process {pid}, {_show(mine.get(key))} on process 0; give every "
                    "process the same settings")
    return None


class _Pending:
    """A connection to process 0 that has not proved the job token yet."""

    def __init__(self, connection, nonce, until):
        self.connection, self.nonce, self.until, self.data = connection, nonce, until, b""


def _rendezvous_chief(host, port, job, deadline):
    try:
        server = socket.create_server((host, port), reuse_port=False)
    except OSError as error:
        raise DistributionError(f"--coordinator {job.coordinator}: process 0 cannot listen "
                                f"there ({error.strerror or error}); give an address of this "
                                "host and a free port.") from None
    server.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ)
    pending, peers, extra, ignored = {}, {}, [], 0
    try:
        while len(peers) < job.num_processes - 1:
            now = time.monotonic()
            if now >= deadline:
                break
            wake = min([deadline] + [p.until for p in pending.values()])
            for key, _ in selector.select(max(wake - now, 0.0)):
                if key.fileobj is server:
                    ignored += _accept(server, selector, pending, deadline)
                    continue
                connection = key.fileobj
                if connection in pending:
                    hello = _pending_line(pending[connection])
                    if hello is None:
                        continue
                    selector.unregister(connection)
                    entry = pending.pop(connection)
                    if hello is False or not _admit(hello, entry, job, peers, extra):
                        ignored += 1
                        with contextlib.suppress(OSError):
                            connection.sendall(b"denied\n")
                        connection.close()
                    else:  # watched until the answer: it may leave and come again
                        selector.register(connection, selectors.EVENT_READ)
                    continue
                try:
                    closed = not connection.recv(4096)
                except OSError:
                    closed = True
                if closed:  # an admitted process left before the answer
                    selector.unregister(connection)
                    connection.close()
                    for pid, (other, _, _) in list(peers.items()):
                        if other is connection:
                            del peers[pid]
                    extra[:] = [e for e in extra if e[0] is not connection]
            for connection, entry in list(pending.items()):
                if time.monotonic() >= entry.until:  # idle: not a process of the job
                    selector.unregister(connection)
                    connection.close()
                    del pending[connection]
                    ignored += 1
        problems = [_difference(job.settings, settings, pid)
                    for pid, (_, settings, _) in sorted(peers.items())]
        problems += [_difference(job.settings, settings, pid) for _, settings, _, pid in extra]
        problem = next((p for p in problems if p), None)
        if problem is None and extra:
            problem = (f"--process-id {extra[0][3]}: another process of the job has it (or "
                       f"it is not in 0..{job.num_processes - 1})")
        if problem is None and len(peers) < job.num_processes - 1:
            strays = (f" ({ignored} other connection(s) to the port were ignored: not "
                      "processes of this job)" if ignored else "")
            raise DistributionError(
                f"--num-processes {job.num_processes}: only {len(peers) + 1} of them reached "
                f"--coordinator {job.coordinator} within {job.timeout:g} s "
                f"(--distribution-timeout); start every process{strays}.")
        answers = [(c, nonce) for c, _, nonce in peers.values()]
        answers += [(c, nonce) for c, _, nonce, _ in extra]
        for connection, nonce in answers:
            if problem is None:
                line = f"go {job.mac(b'go', nonce)}\n"
            else:
                text = problem.encode("utf-8")
                line = f"error {job.mac(b'error', nonce, text)} {problem}\n"
            with contextlib.suppress(OSError):
                connection.settimeout(5.0)
                connection.sendall(line.encode("utf-8"))
        if problem is not None:
            raise DistributionError(problem + ".")
        sockets = {pid: connection for pid, (connection, _, _) in peers.items()}
        peers = {}  # kept open: the link
        return sockets
    finally:
        for connection in list(pending) + [c for c, _, _ in peers.values()] + [
                c for c, _, _, _ in extra]:
            connection.close()
        selector.close()
        server.close()


def _accept(server, selector, pending, deadline):
    """Accepts every waiting connection and sends it a challenge; returns how
    many could not be served."""
    failed = 0
    while True:
        try:
            connection, _ = server.accept()
        except (BlockingIOError, InterruptedError):
            return failed
        except OSError:  # e.g. out of file descriptors: refuse this one
            return failed + 1
        nonce = secrets.token_bytes(16)
        try:
            connection.settimeout(1.0)
            connection.sendall(f"{PROTOCOL} {nonce.hex()}\n".encode("ascii"))
            connection.setblocking(False)
        except OSError:
            connection.close()
            failed += 1
            continue
        until = min(deadline, time.monotonic() + _HANDSHAKE_SECONDS)
        pending[connection] = _Pending(connection, nonce, until)
        selector.register(connection, selectors.EVENT_READ)


def _pending_line(entry):
    """The hello of a pending connection once complete: bytes, None (not yet)
    or False (closed, or too long)."""
    try:
        data = entry.connection.recv(4096)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return False
    if not data:
        return False
    entry.data += data
    if b"\n" in entry.data:
        return entry.data.split(b"\n", 1)[0]
    return None if len(entry.data) < _LINE_LIMIT else False


def _admit(hello, entry, job, peers, extra):
    """Checks a hello (`MAC JSON`); records an authentic process in `peers`
    (or `extra`: an id taken or out of range); False when not authentic."""
    mac, _, payload = hello.partition(b" ")
    if not hmac.compare_digest(mac, job.mac(b"hello", entry.nonce, payload).encode()):
        return False
    try:
        hello = json.loads(payload)
        pid, nonce = int(hello["process_id"]), bytes.fromhex(hello["nonce"])
        settings = dict(hello["settings"])
    except (ValueError, KeyError, TypeError):
        return False
    connection = entry.connection
    connection.setblocking(True)
    if 0 < pid < job.num_processes and pid not in peers:
        peers[pid] = (connection, settings, nonce)
    else:
        extra.append((connection, settings, nonce, pid))
    return True


def _rendezvous_worker(host, port, job, deadline):
    seen = None  # what answered at the address, for the timeout message
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            detail = {None: "start process 0 there first, or check the address",
                      "other": "something else answers at that address, not process 0 of "
                               "a keras-gauss job"}[seen]
            raise DistributionError(
                f"--coordinator {job.coordinator}: process 0 did not answer within "
                f"{job.timeout:g} s (--distribution-timeout); {detail}.")
        try:
            connection = socket.create_connection((host, port), timeout=min(left, 5.0))
        except OSError:
            time.sleep(min(0.2, max(left, 0)))
            continue
        keep, greeted = False, False
        try:
            connection.settimeout(max(min(deadline - time.monotonic(), 10.0), 0.1))
            greeting = _read_line(connection).split()
            greeted = True
            if len(greeting) != 2 or greeting[0] != PROTOCOL:
                seen = "other"
                continue
            challenge = bytes.fromhex(greeting[1])
            nonce = secrets.token_bytes(16)
            payload = json.dumps({"process_id": job.process_id, "nonce": nonce.hex(),
                                  "settings": job.settings}, sort_keys=True).encode("utf-8")
            mac = job.mac(b"hello", challenge, payload)
            connection.sendall(mac.encode("ascii") + b" " + payload + b"\n")
            connection.settimeout(max(deadline - time.monotonic(), 0.1))
            answer = _read_line(connection)
            kind, _, rest = answer.partition(" ")
            if kind == "denied":
                raise DistributionError(
                    f"--coordinator {job.coordinator}: process 0 refused this process's job "
                    f"token; give every process the same {SECRET} (or none).")
            if kind == "go" and hmac.compare_digest(rest, job.mac(b"go", nonce)):
                keep = True
                connection.settimeout(None)
                return {0: connection}
            mac, _, text = rest.partition(" ")
            if kind == "error" and hmac.compare_digest(
                    mac, job.mac(b"error", nonce, text.encode("utf-8"))):
                raise DistributionError(f"--coordinator {job.coordinator}: {text}.")
            if answer:
                seen = "other"  # not process 0 of this job
        except DistributionError:
            raise
        except TimeoutError:
            if not greeted:  # it accepts connections but says nothing: not process 0
                seen = "other"
        except (OSError, ValueError):
            pass  # closed, garbage: try again until the deadline
        finally:
            if not keep:
                connection.close()
        time.sleep(0.2)


def _read_line(connection, limit=_LINE_LIMIT):
    data = b""
    while not data.endswith(b"\n") and len(data) < limit:
        chunk = connection.recv(256)
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace").strip()


# --- the link: heartbeats, and a process's end as one line on every other ---

_ACTIVE = []  # the `_Link` of this process's job (at most one)
_LINE = threading.Lock()  # held by whoever prints this process's last line
_PREFIX = ["keras-gauss: error: "]


def set_error_prefix(prefix):
    """How the watchdog's one line starts (the CLI: `keras-gauss COMMAND: error: `)."""
    _PREFIX[0] = prefix


class _Link:
    """The open connections of a multi-process job (process 0 to each other).

    `start()` begins the watchdog thread: heartbeats every second, and a
    peer that ends before the job is done (its connection closes without
    `exit`, it sends `fail REASON`, or nothing for `timeout` seconds) stops
    this process with one line (`_stop`), unless this process's part is
    done. Process 0 relays such an end to every other process.

    States of this process: `running` (in the job), `done` (its collectives
    are over: `Distribution.finish`), `failed` (an error; the others are
    told).
    """

    def __init__(self, process_id, num_processes, sockets, timeout):
        self.process_id, self.num_processes, self.timeout = process_id, num_processes, timeout
        self.sockets = dict(sockets)
        self.state, self.code, self.reason = "running", 1, None
        self.peers = {pid: "running" for pid in self.sockets}
        self.heard = {pid: time.monotonic() for pid in self.sockets}
        self.broken = None  # why the job broke after this process's part was done
        self.exiting = False  # at exit, waiting for process 0
        self.chief_exited = threading.Event()
        self._send_lock = threading.Lock()
        self._thread = threading.Thread(target=self._watch, daemon=True,
                                        name="keras-gauss job watchdog")

    @property
    def is_chief(self):
        return self.process_id == 0

    def start(self):
        for connection in self.sockets.values():
            connection.settimeout(5.0)  # sends; reads wait in the selector
        _ACTIVE[:] = [self]
        atexit.register(_at_exit)  # runs before JAX's own (registered at import)
        self._thread.start()
        return self

    # -- what this process says

    def _send(self, pid, text):
        with self._send_lock:
            connection = self.sockets.get(pid)
            if connection is None:
                return
            try:
                connection.sendall((text.replace("\n", " ") + "\n").encode("utf-8"))
            except OSError:
                pass

    def _broadcast(self, text, skip=None, everyone=False):
        for pid in list(self.sockets):
            if pid != skip and (everyone or self.peers.get(pid) == "running"):
                self._send(pid, text)

    def finish(self):
        """This process's part of the job is done (no more collectives)."""
        if self.state == "running":
            self.state = "done"

    def fail(self, reason, code=1):
        """This process stops with `reason` (one line): the others are told."""
        self.code = code
        if self.state == "failed":
            return
        self.state = "failed"
        self.reason = f"process {self.process_id} of {self.num_processes} stopped: {reason}"
        self._broadcast(f"fail {self.reason}")

    # -- what the others say

    def _watch(self):
        selector = selectors.DefaultSelector()
        for pid, connection in self.sockets.items():
            selector.register(connection, selectors.EVENT_READ, pid)
        buffers = {pid: b"" for pid in self.sockets}
        interval = min(1.0, self.timeout / 10)
        beat = 0.0
        while True:
            now = time.monotonic()
            if now >= beat and self.state != "failed":
                self._broadcast("hb")
                beat = now + interval
            for key, _ in selector.select(interval):
                pid = key.data
                try:
                    data = key.fileobj.recv(4096)
                except (BlockingIOError, InterruptedError, socket.timeout):
                    continue
                except OSError:
                    data = b""
                if not data:
                    selector.unregister(key.fileobj)
                    self._peer_ended(pid, None)
                    continue
                self.heard[pid] = time.monotonic()
                buffers[pid] += data
                while b"\n" in buffers[pid]:
                    line, buffers[pid] = buffers[pid].split(b"\n", 1)
                    self._message(pid, line.decode("utf-8", "replace"))
            now = time.monotonic()
            for pid, heard in self.heard.items():
                if self.peers[pid] == "running" and now - heard > self.timeout:
                    self._peer_ended(pid, f"process {pid} of {self.num_processes} sent "
                                          f"nothing for {self.timeout:g} s "
                                          "(--distribution-timeout): it hangs or is cut off")

    def _message(self, pid, line):
        kind, _, text = line.partition(" ")
        if kind == "exit":
            self.peers[pid] = "exited"
            if pid == 0:
                self.chief_exited.set()
        elif kind == "fail" and self.peers[pid] == "running":
            self._peer_ended(pid, text or f"process {pid} of {self.num_processes} stopped")

    def _peer_ended(self, pid, reason):
        if self.peers[pid] != "running":
            return  # it said goodbye first (exit or fail)
        self.peers[pid] = "failed" if reason else "lost"
        if reason is None:
            reason = (f"process {pid} of {self.num_processes} ended before the job finished "
                      "(killed or crashed: its own output says why)")
        if self.is_chief:  # the others wait for it too
            self._broadcast(f"fail {reason}", skip=pid)
        if self.state == "running" or (pid == 0 and self.exiting):
            self._stop(reason)
        if pid == 0:
            self.chief_exited.set()
        self.broken = self.broken or reason

    def _stop(self, reason, code=2):
        """Ends this process with one line; returns if another line won."""
        if not _LINE.acquire(blocking=False):
            return  # the main thread prints its own error and exits
        if self.is_chief:  # the others hear it first, then the service goes
            self._wait_for_others(min(5.0, self.timeout))
        phase = sys.modules.get("keras_gauss.callbacks.progress_phase")
        if phase is not None:  # end an open "doing X..." line first
            with contextlib.suppress(Exception):
                phase.Phase.break_line()
        _flush()
        sys.stderr.write(f"{_PREFIX[0]}{reason}; this process stops too.\n")
        _flush()
        os._exit(code)

    def _wait_for_others(self, seconds):
        end = time.monotonic() + seconds
        for connection in list(self.sockets.values()):
            left = end - time.monotonic()
            if left <= 0:
                return
            with contextlib.suppress(OSError):
                connection.settimeout(left)
                while connection.recv(4096):
                    pass

    def peer_failure(self, wait, lost_only=False):
        """Why a peer stopped the job (`lost_only`: ended without a word),
        waiting up to `wait` seconds for one; or None."""
        end = time.monotonic() + wait
        kinds = ("lost",) if lost_only else ("failed", "lost")
        while True:
            failed = [pid for pid, state in self.peers.items() if state in kinds]
            if failed or time.monotonic() >= end:
                return self.broken if failed else None
            time.sleep(0.05)


def _flush():
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _at_exit():
    """This process ends: tell the others, and never wait in JAX's shutdown
    for a process that is gone (it would abort this one, minutes later)."""
    if not _ACTIVE:
        return
    link = _ACTIVE[0]
    if link.state == "running":
        link.fail("it ended before the job finished")
    if link.state == "failed":
        if link.is_chief:
            link._wait_for_others(min(5.0, link.timeout))
        _flush()
        os._exit(link.code)
    link._broadcast("exit", everyone=True)
    if not link.is_chief:  # process 0 may still evaluate and write the run
        link.exiting = True
        if link.peers.get(0) == "running":
            link.chief_exited.wait()
    if link.broken:
        _flush()
        os._exit(0)


def job_failed(message, code=2):
    """The CLI's error line is about to be printed: tells the job's other
    processes (one line each) and makes this process exit with `code`
    without waiting for them. Returns at once without a job; blocks (the
    process ends) if the watchdog is printing its own line."""
    if not _ACTIVE:
        return
    link = _ACTIVE[0]
    if link.state != "failed":  # a collective that failed because a peer is gone
        reason = link.peer_failure(wait=min(2.0, link.timeout / 4), lost_only=True)
        if reason is not None:  # ... reaches here as an error of its own: the cause wins
            link._stop(reason)
    _LINE.acquire()
    link.fail(message, code)


def job_crashed(error):
    """An unexpected exception reached the top: when a peer's end caused it
    (a collective failed because the peer is gone), the watchdog's line
    replaces the traceback; otherwise the others are told and it is raised."""
    if not _ACTIVE or _ACTIVE[0].state == "failed":
        return
    link = _ACTIVE[0]
    reason = link.peer_failure(wait=min(3.0, link.timeout / 2))
    if reason is not None:
        link._stop(reason)
        _LINE.acquire()  # the watchdog is printing its line; the process ends
    link.fail(f"{type(error).__name__}: {_one_line(error)}")


def _one_line(error):
    text = str(error).strip().splitlines()
    return text[0][:300] if text else ""


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

    Example:

    >>> job = Distribution("data", num_processes=2, process_id=1, devices=2)
    >>> job.active, job.is_chief
    (True, False)
    """

    def __init__(self, kind=None, num_processes=1, process_id=0, devices=1, model_shards=1,
                 keras_distribution=None, strategy=None, link=None):
        self.kind = kind
        self._link = link
        self.strategy = strategy
        self.num_processes = num_processes
        self.process_id = process_id
        self.devices = devices
        self.model_shards = model_shards
        self.keras_distribution = keras_distribution

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
        if self._link is not None:
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
            link = self._link
            reason = link.peer_failure(wait=min(2.0, link.timeout / 4), lost_only=True)
            if reason is not None:  # a collective broken by a peer's end: the cause wins
                link._stop(reason)
            if isinstance(error, ValueError):  # our one-line errors
                link.fail(_one_line(error))
            else:  # a bug
                job_crashed(error)
            raise

    def finish(self):
        """This process's part of the job is done: no more collectives. From
        then on another process's end no longer stops this one (process 0
        goes on to evaluate and write the run); at exit the others wait for
        process 0. Nothing without several processes."""
        if self._link is not None:
            self._link.finish()

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


def add_arguments(parser):
    """Adds the distribution flags to an `argparse` parser.

    Example:

    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> from_arguments(parser.parse_args(["--distribution", "data"])).distribution
    'data'
    """
    defaults = DistributionConfig()
    group = parser.add_argument_group(
        "several devices and processes (KERAS_BACKEND=jax; see docs/scaling-out.md)")
    group.add_argument("--distribution", choices=KINDS, default=None,
                       help="data: DataParallel over every device of every process; model: "
                            "ModelParallel, the tables split by rows over --model-shards "
                            "devices (default: one device)")
    group.add_argument("--model-shards", type=int, default=defaults.model_shards,
                       help="devices each table is split over (--distribution model; "
                            "default: %(default)s)")
    group.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                       help="address of process 0 (default: KERAS_DISTRIBUTION_JOB_ADDRESSES); "
                            "on a network others reach, give every process the same secret "
                            f"in {SECRET}")
    group.add_argument("--num-processes", type=int, default=None,
                       help="processes of the job (default: KERAS_DISTRIBUTION_NUM_PROCESSES "
                            "or 1)")
    group.add_argument("--process-id", type=int, default=None,
                       help="this process, 0..N-1; 0 writes the run (default: "
                            "KERAS_DISTRIBUTION_PROCESS_ID or 0)")
    group.add_argument("--distribution-timeout", type=float, default=defaults.timeout,
                       help="seconds to wait for the coordinator and the other processes, "
                            "and to hear from a running one before stopping (default: "
                            f"%(default)s; at most {MAX_TIMEOUT:g})")


def from_arguments(args):
    """The `DistributionConfig` of parsed `add_arguments` flags.

    Example:

    >>> config = from_arguments(args)  # doctest: +SKIP
    """
    return DistributionConfig(args.distribution, args.model_shards, args.coordinator,
                              args.num_processes, args.process_id, args.distribution_timeout)
