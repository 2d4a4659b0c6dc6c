"""The link between the processes of a job: where they meet (`rendezvous`),
prove they belong to it, compare their settings, and how the end of one
becomes one line on every other (`Link`).

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

The connections of the rendezvous stay open for the whole job (`Link`):
every process sends a heartbeat each second, and a process that ends
before the job is done (killed, crashed, or stopped by an error), or sends
nothing for `--distribution-timeout` seconds, becomes one line on every
other process within seconds (process 0 relays it), which then stops:
without it a process would wait in a collective until JAX's coordination
service aborts it with a C++ stack, minutes later. A process whose part is
done (`Distribution.finish`, after training) is not stopped by another's
end; process 0 waits for nothing then (it writes the run), and the others
wait, at their exit, for process 0 to finish.
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

def check_timeout(timeout):
    """Returns `timeout` if it is a number of seconds in `(0, MAX_TIMEOUT]`;
    else `DistributionError` naming `--distribution-timeout`.

    Example:

    >>> check_timeout(float("inf"))
    Traceback (most recent call last):
    keras_gauss.distribution.link.DistributionError: --distribution-timeout must be a number of seconds > 0 and at most 86400 (a day), got inf.
    """
    ok = (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
          and math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT)
    if not ok:
        raise DistributionError(f"--distribution-timeout must be a number of seconds > 0 "
                                f"and at most {MAX_TIMEOUT:g} (a day), got {timeout}.")
    return timeout


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
    connections stay open (`Link`). The others connect, retrying, until
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
        The `Link` to the other processes (not yet watching them).

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
    return Link(process_id, num_processes, sockets, timeout)


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

_ACTIVE = []  # the `Link` of this process's job (at most one)
_LINE = threading.Lock()  # held by whoever prints this process's last line
_PREFIX = ["keras-gauss: error: "]


def set_error_prefix(prefix):
    """How the watchdog's one line starts (the CLI: `keras-gauss COMMAND: error: `)."""
    _PREFIX[0] = prefix


class Link:
    """The open connections of a multi-process job (process 0 to each other).

    `start()` begins the watchdog thread: heartbeats every second, and a
    peer that ends before the job is done (its connection closes without
    `exit`, it sends `fail REASON`, or nothing for `timeout` seconds) stops
    this process with one line (`stop`), unless this process's part is
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
            self.stop(reason)
        if pid == 0:
            self.chief_exited.set()
        self.broken = self.broken or reason

    def stop(self, reason, code=2):
        """Ends this process with one line; returns if another line won."""
        if not _LINE.acquire(blocking=False):
            return  # the main thread prints its own error and exits
        if self.is_chief:  # the others hear it first, then the service goes
            self._wait_for_others(min(5.0, self.timeout))
        phase = sys.modules.get("keras_gauss.callbacks.progress")
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
            link.stop(reason)
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
        link.stop(reason)
        _LINE.acquire()  # the watchdog is printing its line; the process ends
    link.fail(f"{type(error).__name__}: {one_line(error)}")


def one_line(error):
    text = str(error).strip().splitlines()
    return text[0][:300] if text else ""
