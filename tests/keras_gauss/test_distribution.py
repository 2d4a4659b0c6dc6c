"""Several devices and processes (issue 13, item 2): the settings, the
rendezvous, the errors, and real JAX jobs (two processes on localhost,
ModelParallel on two forced host devices) that train what one device trains."""

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from backends import forced_host_devices
from fault_injection import KILL_AFTER
from keras_gauss.distribution import Distribution
from keras_gauss.distribution import DistributionConfig
from keras_gauss.distribution import DistributionError
from keras_gauss.distribution import check_batch
from keras_gauss.distribution import check_mesh
from keras_gauss.distribution import rendezvous
from keras_gauss.distribution import resolve
from cli_errors import cli_exit

HERE = Path(__file__).parent
TOPICS = (["cat", "dog", "horse", "cow"], ["hammer", "saw", "drill", "wrench"])
TRAIN = ["--engine", "keras", "--dim", "4", "--epochs", "2", "--window", "2",
         "--min-count", "1", "--sample", "0", "--batch-size", "256", "--seed", "1",
         "--checkpoint-every", "0", "--quiet"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def jax_env(devices=1):
    # Under keras.distribution the layers run their keras.ops code (the
    # compiled kernels are not partitioned); the one-device references run it
    # too, so that the tables compare to float rounding.
    return dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3",
                XLA_FLAGS=forced_host_devices(devices),
                KERAS_GAUSS_KERNELS="reference")


CLI = [sys.executable, "-c", "import sys; from keras_gauss.cli import main; sys.exit(main())"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(TOPICS[i % 2] + ["the"], 8)) for i in range(300)]
    path = tmp_path_factory.mktemp("dist") / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- settings (pure) ---------------------------------------------------------

def test_resolve_reads_keras_environment_and_checks_the_job():
    env = {"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:7777,10.0.0.2:7777",
           "KERAS_DISTRIBUTION_NUM_PROCESSES": "2", "KERAS_DISTRIBUTION_PROCESS_ID": "1"}
    config = resolve(DistributionConfig("data"), env)
    assert (config.coordinator, config.num_processes, config.process_id) == (
        "10.0.0.1:7777", 2, 1)
    flags = resolve(DistributionConfig("data", coordinator="h:1", num_processes=3,
                                       process_id=2), env)  # flags win
    assert (flags.coordinator, flags.num_processes, flags.process_id) == ("h:1", 3, 2)
    assert resolve(DistributionConfig("data"), {}).num_processes == 1
    assert not resolve(DistributionConfig(), {}).active


@pytest.mark.parametrize("config, flag", [
    (DistributionConfig("data", coordinator="h:1", num_processes=2, process_id=2),
     "--process-id"),
    (DistributionConfig("data", coordinator="h:1", num_processes=2, process_id=-1),
     "--process-id"),
    (DistributionConfig("data", num_processes=2, process_id=0), "--coordinator"),
    (DistributionConfig("data", coordinator="nohost", num_processes=2, process_id=0),
     "--coordinator"),
    (DistributionConfig("data", model_shards=2), "--model-shards"),
    (DistributionConfig(None, num_processes=2), "--distribution"),
    (DistributionConfig("data", timeout=0), "--distribution-timeout"),
    (DistributionConfig("model", coordinator="h:1", num_processes=2, process_id=0),
     "--distribution model runs on the devices of one process"),
    (DistributionConfig("data", num_processes=0), "--num-processes"),
    # without --distribution too (before: accepted without a word)
    (DistributionConfig(None, num_processes=0), "--num-processes must be >= 1, got 0"),
    (DistributionConfig(None, num_processes=-1), "--num-processes must be >= 1, got -1"),
])
def test_bad_settings_name_the_flag(config, flag):
    with pytest.raises(DistributionError, match=flag) as info:
        resolve(config, {})
    assert "\n" not in str(info.value)


def test_bad_environment_names_the_variable():
    with pytest.raises(DistributionError, match="KERAS_DISTRIBUTION_NUM_PROCESSES"):
        resolve(DistributionConfig("data"), {"KERAS_DISTRIBUTION_NUM_PROCESSES": "two"})
    # A job's environment without --distribution: not two lone runs writing one --out.
    with pytest.raises(DistributionError, match="NUM_PROCESSES=2 needs --distribution data"):
        resolve(DistributionConfig(), {"KERAS_DISTRIBUTION_NUM_PROCESSES": "2"})


def test_mesh_and_batch_must_divide():
    assert check_mesh(4, 2) == (2, 2)
    with pytest.raises(DistributionError, match="--model-shards 3 .* 4 devices"):
        check_mesh(4, 3)
    check_batch(256, devices=2, num_processes=2)
    with pytest.raises(DistributionError, match="--num-processes 4 is more than the "
                                                "--batch-size 2"):
        check_batch(2, devices=4, num_processes=4)
    with pytest.raises(DistributionError, match="--batch-size 10 .* multiple of 4"):
        check_batch(10, devices=4, num_processes=1)
    with pytest.raises(DistributionError, match="--model-shards 2 does not divide the 51"):
        Distribution("model", devices=2, model_shards=2).check_rows(51)


def test_each_process_reads_its_shard_and_takes_the_agreed_steps():
    import tensorflow as tf

    lines = tf.data.Dataset.range(7)
    shards = [list(Distribution("data", num_processes=3, process_id=i, devices=3)
                   .shard(lines).as_numpy_iterator()) for i in range(3)]
    assert shards == [[0, 3, 6], [1, 4], [2, 5]]  # i::N: disjoint, their union is all
    assert list(Distribution().shard(lines).as_numpy_iterator()) == list(range(7))
    assert [Distribution("data", num_processes=3, process_id=i).process_seed(4)
            for i in range(3)] == [12, 13, 14]  # one stream each
    assert Distribution().process_seed(4) == 4  # one process: the seed as before

    data = tf.data.Dataset.from_tensor_slices(({"word": tf.range(10)}, tf.range(10))).batch(4)
    job = Distribution("data", num_processes=2, process_id=0, devices=2)
    assert [y.numpy().tolist() for _, y in job.local_batches(data, 4)] == [
        [0, 1, 2, 3], [4, 5, 6, 7]]  # the partial batch is dropped
    # Exactly the agreed steps: fewer, or more (the stream goes on into its next pass).
    assert [y.numpy().tolist() for _, y in job.local_batches(data, 4, steps=1)] == [
        [0, 1, 2, 3]]
    assert len(list(job.local_batches(data, 4, steps=5))) == 5
    assert len(list(Distribution().local_batches(data, 4))) == 3  # no job: unchanged


class _Peers(Distribution):
    """A process of a job whose other processes report `others` (no JAX job)."""

    def __init__(self, others):
        super().__init__("data", num_processes=1 + len(others), process_id=0, devices=2)
        self.others = others

    def allgather(self, value):
        return [value, *self.others]


def test_steps_agreement_takes_the_fewest_and_refuses_an_empty_shard():
    assert _Peers([5, 9]).agree_steps(7, rows=128) == (5, [7, 5, 9])
    with pytest.raises(DistributionError, match="--num-processes 3: process 2's shard of the "
                                                "corpus's lines gives no full batch of 128 "
                                                "rows") as info:
        _Peers([5, 0]).agree_steps(7, rows=128, what="corpus's lines")
    assert "\n" not in str(info.value)


def test_hierarchy_shards_agree_without_a_message():
    from keras_gauss.hierarchy.data import shard_steps

    jobs = [Distribution("data", num_processes=3, process_id=i, devices=3) for i in range(3)]
    # 100 edges over 3 processes: 34, 33, 33; batches of 12 / 3 = 4: 8 steps each.
    assert {shard_steps(100, 12, job) for job in jobs} == {8}
    with pytest.raises(DistributionError, match="--num-processes 3: process 2 trains 0 of the "
                                                "2 training edges"):
        shard_steps(2, 3, jobs[0])


# --- rendezvous ---------------------------------------------------------------

def test_rendezvous_meets_and_times_out():
    port = free_port()
    address = f"127.0.0.1:{port}"
    errors, links = [], []

    def worker(pid):
        try:
            links.append(rendezvous(address, 3, pid, 20))
        except DistributionError as error:  # pragma: no cover - a failure
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(pid,)) for pid in (1, 2)]
    for thread in threads:  # the workers come first and wait for process 0
        thread.start()
    chief = rendezvous(address, 3, 0, 20)
    for thread in threads:
        thread.join(20)
    assert not errors
    # The connections stay open (the job's link); the port takes a new
    # listener (the JAX coordination service) beside them.
    assert sorted(chief.sockets) == [1, 2] and [sorted(w.sockets) for w in links] == [[0], [0]]
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
    for link in [chief, *links]:
        for connection in link.sockets.values():
            connection.close()

    start = time.monotonic()
    with pytest.raises(DistributionError, match="--coordinator .* within 0.5 s"):
        rendezvous(f"127.0.0.1:{free_port()}", 2, 1, 0.5)
    with pytest.raises(DistributionError, match="only 1 of them reached --coordinator"):
        rendezvous(f"127.0.0.1:{free_port()}", 2, 0, 0.5)
    assert time.monotonic() - start < 5


def test_rendezvous_refuses_a_process_of_another_job():
    address = f"127.0.0.1:{free_port()}"
    chief = threading.Thread(target=lambda: pytest.raises(DistributionError, rendezvous,
                                                          address, 2, 0, 1.5))
    chief.start()
    with pytest.raises(DistributionError, match="the processes' settings differ: "
                                                "--num-processes 3 on process 1, 2 on "
                                                "process 0"):
        rendezvous(address, 3, 1, 5)
    chief.join(5)


def _connect(address, send=None):
    host, port = address.rsplit(":", 1)
    while True:
        try:
            connection = socket.create_connection((host, int(port)), timeout=5)
            break
        except OSError:
            time.sleep(0.05)
    if send is not None:
        connection.recv(256)  # the challenge
        connection.sendall(send)
    return connection


def test_stray_and_foreign_connections_never_break_the_rendezvous():
    """Process 0 serves every connection at once and counts only those that
    prove the job token: an idle connection (opened first and kept), an HTTP
    request, a forged token and an endless line are ignored, and the job
    meets at once, not after the idle connection's handshake window."""
    address = f"127.0.0.1:{free_port()}"
    result = {}
    chief = threading.Thread(target=lambda: result.update(
        link=rendezvous(address, 3, 0, 60)))
    chief.start()
    strays = [_connect(address), _connect(address, b"GET / HTTP/1.0\r\n\r\n"),
              _connect(address, b"0" * 64 + b' {"process_id": 1, "nonce": "00", '
                                          b'"settings": {"num_processes": 3}}\n'),
              _connect(address, b"x" * 70_000)]
    start = time.monotonic()
    links = []
    workers = [threading.Thread(target=lambda pid=pid: links.append(
        rendezvous(address, 3, pid, 60))) for pid in (1, 2)]
    for thread in workers:
        thread.start()
    for thread in [*workers, chief]:
        thread.join(60)
    assert time.monotonic() - start < 8  # < the 10 s an idle connection may take
    assert sorted(result["link"].sockets) == [1, 2] and len(links) == 2
    for connection in strays + [c for link in [result["link"], *links]
                                for c in link.sockets.values()]:
        connection.close()


def test_a_process_without_the_job_secret_is_refused_and_ignored():
    address = f"127.0.0.1:{free_port()}"
    errors = []
    chief = threading.Thread(target=lambda: errors.append(pytest.raises(
        DistributionError, rendezvous, address, 2, 0, 3,
        environ={"KERAS_GAUSS_JOB_SECRET": "ours"})))
    chief.start()
    with pytest.raises(DistributionError, match="refused this process's job token; give "
                                                "every process the same "
                                                "KERAS_GAUSS_JOB_SECRET"):
        rendezvous(address, 2, 1, 10, environ={"KERAS_GAUSS_JOB_SECRET": "theirs"})
    chief.join(10)
    assert "(1 other connection(s) to the port were ignored" in str(errors[0].value)


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0", "1e300"])
def test_distribution_timeout_must_be_a_sane_number_of_seconds(corpus, tmp_path, capsys,
                                                                value):
    code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "r"),
                       *TRAIN, "--distribution", "data", "--num-processes", "2",
                       "--coordinator", "127.0.0.1:1", "--distribution-timeout", value],
                      capsys)
    assert code == 2 and "--distribution-timeout must be a number of seconds > 0 and at " \
                         f"most 86400 (a day), got {float(value)}" in err
    code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "r"),
                       *TRAIN, "--distribution-timeout", value], capsys)
    assert code == 2 and "--distribution-timeout" in err


# --- the command line: one line, exit 2 -----------------------------------------


@pytest.mark.parametrize("extra, words", [
    (["--distribution", "data", "--num-processes", "2", "--process-id", "2",
      "--coordinator", "127.0.0.1:1"], "--process-id must be in 0..1"),
    (["--distribution", "data", "--num-processes", "2"], "needs --coordinator"),
    (["--model-shards", "2"], "need --distribution"),
    (["--process-id", "1"], "need --distribution"),
])
def test_cli_bad_distribution_is_one_line(corpus, tmp_path, capsys, extra, words):
    code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "r"),
                       *TRAIN, *extra], capsys)
    assert code == 2 and words in err
    assert not (tmp_path / "r").exists()


def test_cli_distribution_needs_the_keras_engine_and_jax(corpus, tmp_path, capsys):
    import keras

    code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "r"),
                       *TRAIN, "--engine", "native", "--distribution", "data"], capsys)
    assert code == 2 and "needs --engine keras" in err
    if keras.backend.backend() == "tensorflow":  # MirroredStrategy: one process, data only
        code, err = cli_exit(["train-corpus", "--corpus", str(corpus), "--out",
                           str(tmp_path / "r"), *TRAIN, "--distribution", "data",
                           "--num-processes", "2", "--process-id", "1", "--coordinator",
                           "127.0.0.1:1"], capsys)
        assert code == 2 and "--num-processes 2 needs KERAS_BACKEND=jax" in err
        assert "20585" in err
        code, err = cli_exit(["train-hierarchy", "--edges", str(corpus), "--out",
                           str(tmp_path / "r"), "--engine", "keras", "--distribution",
                           "model"], capsys)
        assert code == 2 and "--distribution model needs KERAS_BACKEND=jax" in err
    assert not (tmp_path / "r").exists()


def test_mirrored_strategy_on_two_logical_cpus_matches_one_device(corpus, tmp_path):
    """TensorFlow, `--distribution data`: MirroredStrategy over 2 logical CPU
    devices. The replicas' gradient rows are all-gathered and summed per row
    in the same order as on one device, so the tables are equal (to 1e-6);
    both replicas hold the same tables; train_corpus and train_hierarchy run
    under it."""
    edges = tmp_path / "edges.tsv"
    edges.write_text("".join(f"c{i}\tr\n" for i in range(16)))
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, str(HERE / "mirrored_run.py"),
                           str(tmp_path / "out.npz"), str(corpus), str(edges),
                           str(tmp_path / "runs")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = np.load(tmp_path / "out.npz")
    assert int(results["replicas"]) == 2 and float(results["replica_gap"]) == 0.0
    assert int(results["corpus_devices"]) == int(results["hierarchy_devices"]) == 2
    keys = [k for k in results.files if k.startswith("one/")]
    assert len(keys) == 4
    for key in keys:
        path = key.split("/", 1)[1]
        np.testing.assert_allclose(results[f"mirrored/{path}"], results[key], rtol=0,
                                   atol=1e-6, err_msg=path)
    assert (tmp_path / "runs" / "corpus" / "run.json").exists()


def _run(argv, env, timeout=300):
    return subprocess.run([*CLI, *argv], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_jax_mesh_error_and_unreachable_coordinator(corpus, tmp_path):
    pytest.importorskip("jax")
    base = ["train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "r"), *TRAIN]
    done = _run([*base, "--distribution", "model", "--model-shards", "3"], jax_env(2))
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip() == ("keras-gauss train-corpus: error: --model-shards 3 does "
                                   "not divide the 2 devices of the job.")
    start = time.monotonic()
    done = _run([*base, "--distribution", "data", "--num-processes", "2", "--process-id", "1",
                 "--coordinator", f"127.0.0.1:{free_port()}", "--distribution-timeout", "2"],
                jax_env(1), timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "--coordinator 127.0.0.1:" in done.stderr
    assert "did not answer within 2 s" in done.stderr
    assert time.monotonic() - start < 60  # the timeout, plus starting Python
    assert not (tmp_path / "r").exists()


# --- real jobs ----------------------------------------------------------------

def _tables(run):
    from keras_gauss.runs import load_run

    return {w.path: w.numpy() for w in load_run(run).model.weights}


# A corpus whose two shards (lines i::2) differ: process 0's lines are about
# animals and 8 tokens long, process 1's about tools and 5 long. Neither
# shard alone has the whole vocabulary, and their epochs have 23 and 12
# full batches of 128 pairs (the job must agree on 12).
def _uneven_lines():
    rng = np.random.default_rng(0)
    return [" ".join(rng.choice(TOPICS[i % 2] + ["the"], 8 if i % 2 == 0 else 5))
            for i in range(300)]


def _shard_job(kind, data, run, out, extra=(), env=None, kill_chief=None):
    """The two processes of `shard_run.py`, started (each writes `out`.PID.npz)."""
    port = free_port()
    procs = []
    for pid in (0, 1):
        environ = jax_env(1)
        if pid == 0 and kill_chief:
            environ[KILL_AFTER] = str(kill_chief)
        procs.append(subprocess.Popen(
            [sys.executable, str(HERE / "shard_run.py"), f"{out}.{pid}.npz", kind, str(data),
             str(run), str(port), str(pid), *extra], env=environ, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    return procs


def _finish(procs, timeout=300):
    outputs = [p.communicate(timeout=timeout) for p in procs]
    for proc, (_, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-3000:]


def _hierarchy_edges():
    """63 closure edges: a root, 16 children, one grandchild each, and 5 great-grandchildren
    (16 + 32 + 15)."""
    return ([f"c{i}\tr" for i in range(16)] + [f"g{i}\tc{i}" for i in range(16)]
            + [f"h{i}\tg{i}" for i in range(5)])


def _results(path):
    data = np.load(path)
    tables = {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith("tables/")}
    return json.loads(str(data["metrics"])), tables


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """A two-process corpus job on its shards (run `two`, outputs out.PID.npz)
    and, run beside it in one process, the one-process references fed the
    same global batches of that job (ref.npz) and of the hierarchy job of
    `test_hierarchy_processes_train_their_own_edges` on edges.tsv
    (hierarchy_ref.npz)."""
    pytest.importorskip("jax")
    tmp = tmp_path_factory.mktemp("sharded")
    (tmp / "corpus.txt").write_text("\n".join(_uneven_lines()) + "\n", encoding="utf-8")
    (tmp / "edges.tsv").write_text("\n".join(_hierarchy_edges()) + "\n")
    procs = _shard_job("corpus", tmp / "corpus.txt", tmp / "two", tmp / "out")
    reference = subprocess.run(
        [sys.executable, str(HERE / "shard_run.py"), "reference",
         str(tmp / "ref.npz"), "corpus", str(tmp / "corpus.txt"),
         str(tmp / "hierarchy_ref.npz"), "hierarchy", str(tmp / "edges.tsv")],
        env=jax_env(1), capture_output=True, text=True, timeout=300)
    _finish(procs)
    assert reference.returncode == 0, reference.stderr[-3000:]
    return tmp


def test_each_process_reads_its_own_lines_and_the_job_trains_their_global_batches(sharded):
    """Two JAX processes on localhost, each reading lines i::2 of the corpus.

    - What each read (metrics.json): 150 lines, whose digest is that of
      lines i::2 (not of the other shard, nor of the whole corpus).
    - One vocabulary, the whole corpus's (each shard lacks a topic): the
      counts are summed over the processes.
    - The same steps: the fewest full batches of any shard (12, not 23).
    - Both processes end with identical tables (they are replicated).
    - They equal the one-process reference fed the same global batches
      (process 0's batch k, then process 1's), to 1e-5: each process sums
      the gradient rows of its half and the halves are added across the
      processes, so only the rounding of those sums differs (a few ulp of
      values of order 1 through 24 AdaGrad steps).
    """
    import tensorflow as tf

    from keras_gauss.pipelines.vocabulary import Vocabulary
    from keras_gauss.pipelines.vocabulary import count_corpus

    lines = _uneven_lines()
    (m0, t0), (m1, t1) = (_results(sharded / f"out.{pid}.npz") for pid in (0, 1))
    reference, ref_tables = _results(sharded / "ref.npz")
    written = json.loads((sharded / "two" / "metrics.json").read_text())
    assert written["distribution"] == m0["distribution"] == m1["distribution"]
    job = written["distribution"]
    shards = job["shards"]

    def digest(part):
        return count_corpus(tf.data.Dataset.from_tensor_slices(part)).digest

    assert [s["lines"] for s in shards] == [150, 150]
    assert [s["line_digest"] for s in shards] == [digest(lines[0::2]), digest(lines[1::2])]
    assert digest(lines) not in [s["line_digest"] for s in shards]
    assert [s["local_steps"] for s in shards] == [23, 12]
    assert job["steps_per_epoch"] == reference["steps"] == 12
    assert job["pairs_dropped_per_epoch"] == 3000 + 1650 - 12 * 256
    assert written["pairs"] == 2 * 12 * 256
    assert list(Vocabulary.load(sharded / "two" / "vocab.tsv").words) == reference["words"]
    assert set(reference["words"]) == {"the", *TOPICS[0], *TOPICS[1]}
    assert set(t0) == set(ref_tables) and len(t0) == 4
    for path in t0:
        np.testing.assert_array_equal(t0[path], t1[path], err_msg=path)
        np.testing.assert_allclose(t0[path], ref_tables[path], rtol=0, atol=1e-5,
                                   err_msg=path)
    run = _tables(sharded / "two")
    for path in run:
        np.testing.assert_array_equal(run[path], t0[path], err_msg=path)


def test_two_processes_resume_a_killed_run_to_the_uninterrupted_tables(sharded, tmp_path):
    """Process 0 is SIGKILLed after its 15th checkpoint (one a step: in the
    second epoch); process 1 stops by itself, naming process 0 (process 0
    holds JAX's coordination service; the CLI's line when process 1 is the
    one killed: `test_a_killed_process_is_one_line_on_the_other_within_the_timeout`).
    Both resume from the checkpoint process 0 wrote, to the tables and pairs
    of the uninterrupted job."""
    from keras_gauss.checkpoint import read_checkpoint

    corpus, run = sharded / "corpus.txt", tmp_path / "run"
    procs = _shard_job("corpus", corpus, run, tmp_path / "killed", kill_chief=15)
    _, err = procs[0].communicate(timeout=300)
    assert procs[0].returncode == -9, err[-3000:]
    _, err = procs[1].communicate(timeout=300)
    assert procs[1].returncode != 0, err[-3000:]
    assert "process 0 of 2 ended before the job finished" in err, err[-3000:]
    assert not (run / "run.json").exists()
    state, _ = read_checkpoint(run)
    assert (state["epoch"], state["step"]) == (1, 3)
    _finish(_shard_job("corpus", corpus, run, tmp_path / "resumed", ["resume"]))
    (m0, t0), (_, t1) = (_results(tmp_path / f"resumed.{pid}.npz") for pid in (0, 1))
    _, whole = _results(sharded / "out.0.npz")
    for path in whole:
        np.testing.assert_array_equal(t0[path], whole[path], err_msg=path)
        np.testing.assert_array_equal(t1[path], whole[path], err_msg=path)
    assert m0["pairs"] == 2 * 12 * 256
    assert _tables(run).keys() == whole.keys()


def test_more_processes_than_lines_is_one_line_on_every_process(tmp_path):
    pytest.importorskip("jax")
    (tmp_path / "one.txt").write_text("cat dog cat dog\n")
    port = free_port()
    procs = [subprocess.Popen(
        [*CLI, "train-corpus", "--corpus", str(tmp_path / "one.txt"), "--out",
         str(tmp_path / "r"), *TRAIN, "--distribution", "data", "--num-processes", "2",
         "--coordinator", f"127.0.0.1:{port}", "--distribution-timeout", "120",
         "--process-id", str(pid)], env=jax_env(1), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for pid in (0, 1)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 2, err[-3000:]
        assert err.count("\n") == 1, err
        assert ("--num-processes 2: the corpus has 1 line(s), fewer than the processes "
                "(process i reads lines i::2)") in err
    assert not (tmp_path / "r").exists()


def test_hierarchy_processes_train_their_own_edges(sharded, tmp_path):
    """`train_hierarchy` on two processes: process i trains edges i::2 of the
    63 training edges (32 and 31: 4 and 3 batches of 8, the job takes 3),
    to the tables of one process fed the same global batches (to 1e-5, as
    above; `sharded` runs that one)."""
    _finish(_shard_job("hierarchy", sharded / "edges.tsv", tmp_path / "two", tmp_path / "out"))
    metrics, tables = _results(tmp_path / "out.0.npz")
    ref, ref_tables = _results(sharded / "hierarchy_ref.npz")
    job = metrics["distribution"]
    assert [s["edges"] for s in job["shards"]] == [32, 31]
    assert [s["local_steps"] for s in job["shards"]] == [4, 3]
    assert job["steps_per_epoch"] == ref["steps"] == 3
    assert job["edges_dropped_per_epoch"] == 63 - 3 * 16
    assert set(tables) == set(ref_tables) and tables
    for path in tables:
        np.testing.assert_allclose(tables[path], ref_tables[path], rtol=0, atol=1e-5,
                                   err_msg=path)


@pytest.fixture(scope="module")
def two_devices(jax_job):
    """The tests' JAX child on 2 forced host devices (its `model_parallel` job,
    `model_parallel_run.py`): the corpus model with ModelParallel, and
    `train_hierarchy` with DataParallel, each beside its one-device run."""
    return np.load(jax_job("model_parallel")[0] / "out.npz")


def test_model_parallel_splits_the_tables_by_rows_and_matches_one_device(two_devices):
    results = two_devices
    specs = {k.split("/", 1)[1]: str(results[k]) for k in results.files if k.startswith("spec/")}
    assert len(specs) == 8  # 4 tables, 4 AdaGrad accumulators
    for path, spec in specs.items():
        assert spec == "('model', None)", path
        shards = results[f"shards/{path}"]
        assert shards.tolist() == [[25, 4], [25, 4]], path  # 50 rows: 25 on each device
    for key in [k for k in results.files if k.startswith("one/")]:
        path = key.split("/", 1)[1]
        np.testing.assert_allclose(results[f"sharded/{path}"], results[key], rtol=1e-6,
                                   atol=1e-6, err_msg=path)
        assert not np.allclose(results[f"sharded/{path}"], 0.0)


def test_hierarchy_data_parallel_matches_one_device(two_devices):
    """`train_hierarchy` with DataParallel over 2 forced devices trains the
    tables of the one-device run (48 training edges, batches of 16: no
    partial batch to drop)."""
    assert two_devices["hierarchy/edges"].tolist() == [48, 48]
    assert two_devices["hierarchy/recorded"].tolist() == [False, True]
    assert float(two_devices["hierarchy/maxdiff"]) < 1e-5


# --- a job's processes stop together: one line on every process --------------------

def _job(tmp_path, corpus, extra=(), env=None, args=None, quiet=True):
    """The two processes of a `train-corpus` job on `corpus` (started)."""
    port = free_port()
    procs = []
    for pid in (0, 1):
        argv = [*CLI, "train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "r"),
                *[a for a in TRAIN if quiet or a != "--quiet"], "--distribution", "data", "--num-processes", "2", "--coordinator",
                f"127.0.0.1:{port}", "--process-id", str(pid), *extra,
                *((args or {}).get(pid, ()))]
        procs.append(subprocess.Popen(argv, env=env or jax_env(1), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    return procs


def test_differing_settings_are_one_line_on_every_process(corpus, tmp_path):
    """Mismatched --dim used to abort both processes in gloo (SIGABRT, a C++ stack)."""
    pytest.importorskip("jax")
    procs = _job(tmp_path, corpus, ["--distribution-timeout", "120"],
                 args={1: ["--dim", "8"]})
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 2, err[-3000:]
        assert err.count("\n") == 1, err
        assert "the processes' settings differ: --dim 8 on process 1, 4 on process 0" in err
    assert not (tmp_path / "r").exists()


def test_an_error_on_one_process_is_one_line_on_every_process(corpus, tmp_path):
    """Process 0 refuses --out (a file is there) while process 1 already waits in
    the job's first collective: process 1 stops at once with process 0's reason."""
    pytest.importorskip("jax")
    (tmp_path / "r").write_text("not a run")
    start = time.monotonic()
    procs = _job(tmp_path, corpus, ["--distribution-timeout", "120"])
    errs = [proc.communicate(timeout=300)[1] for proc in procs]
    assert time.monotonic() - start < 110  # not the JAX runtime's own minutes-long wait
    for proc, err in zip(procs, errs):
        assert proc.returncode == 2, err[-3000:]
        assert err.count("\n") == 1, err
        assert f"{tmp_path / 'r'} exists and is not a directory" in err
    assert errs[1].startswith("keras-gauss train-corpus: error: process 0 of 2 stopped: ")
    assert (tmp_path / "r").read_text() == "not a run"


@pytest.fixture(scope="module")
def short_epochs_corpus(tmp_path_factory):
    """100 lines of 10 words: an epoch of 5 steps, so the first ends soon (all
    that is trained before the kill), and 200 of them outlast the kill."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(100)]
    path = tmp_path_factory.mktemp("short") / "corpus.txt"
    path.write_text("\n".join(" ".join(rng.choice(words, 10)) for _ in range(100)) + "\n")
    return path


def test_a_killed_process_is_one_line_on_the_other_within_the_timeout(short_epochs_corpus,
                                                                       tmp_path):
    """Process 1 SIGKILLed mid-training (after process 0's first epoch line):
    process 0 used to wait in a gloo collective until JAX aborted it
    (SIGABRT, ~70 s past --distribution-timeout 20); now it ends with one line
    (exit 2) well within the timeout. (Process 0 killed:
    `test_two_processes_resume_a_killed_run_to_the_uninterrupted_tables`.)"""
    pytest.importorskip("jax")
    procs = _job(tmp_path, short_epochs_corpus,
                 ["--epochs", "200", "--distribution-timeout", "20"], quiet=False)
    line = ""
    while "Epoch 1/" not in line:  # process 0's first epoch line: training is under way
        line = procs[0].stdout.readline()
        assert line, procs[0].communicate(timeout=60)[1][-3000:]
    procs[1].kill()
    killed = time.monotonic()
    _, err = procs[0].communicate(timeout=300)
    seconds = time.monotonic() - killed
    procs[1].communicate(timeout=60)
    assert seconds < 20, seconds
    assert procs[0].returncode == 2, err[-3000:]
    assert err.count("\n") == 1, err
    assert ("error: process 1 of 2 ended before the job finished (killed or crashed: its "
            "own output says why); this process stops too.") in err
    assert not (tmp_path / "r" / "run.json").exists()


# --- the link alone (no JAX): a process's end or silence, in processes of their own -------

_MEMBER = """
import sys, time
from keras_gauss import distribution
address, n, pid, timeout = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
link = distribution.rendezvous(address, n, pid, timeout)
if sys.argv[5:] == ["mute"]:  # joined, alive, but never a heartbeat (hung)
    time.sleep(600)
link.start()
print("joined", flush=True)
time.sleep(600)  # as if waiting in a collective
"""


def _members(n, timeout, extra=None):
    address = f"127.0.0.1:{free_port()}"
    return [subprocess.Popen([sys.executable, "-c", _MEMBER, address, str(n), str(pid),
                              str(timeout), *((extra or {}).get(pid, ()))],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for pid in range(n)]


def test_a_process_ending_is_one_line_on_every_other_process_of_three():
    """Process 1 of 3 is killed: process 0 sees its connection close and tells
    process 2; both stop with one line naming process 1, within seconds."""
    procs = _members(3, 60)
    for proc in procs:
        assert proc.stdout.readline().strip() == "joined", proc.communicate(timeout=60)
    procs[1].kill()
    killed = time.monotonic()
    for proc in (procs[0], procs[2]):
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, err
        assert err == ("keras-gauss: error: process 1 of 3 ended before the job finished "
                       "(killed or crashed: its own output says why); this process stops "
                       "too.\n"), err
    assert time.monotonic() - killed < 30  # seconds in fact; generous for a loaded machine
    procs[1].communicate(timeout=60)


def test_a_process_that_goes_silent_is_one_line_after_the_timeout():
    """Process 1 stays alive but sends nothing (hung, or cut off): process 0
    stops after --distribution-timeout (3 s here), naming it."""
    procs = _members(2, 3, {1: ["mute"]})
    _, err = procs[0].communicate(timeout=120)
    assert procs[0].returncode == 2, err
    assert "error: process 1 of 2 sent nothing for 3 s (--distribution-timeout): it hangs or " \
           "is cut off; this process stops too." in err and err.count("\n") == 1
    procs[1].kill()
    procs[1].communicate(timeout=60)


def test_a_coordinator_address_held_by_something_else_says_so():
    """Something listens at the address but is not process 0 (it accepts and
    says nothing, like an HTTP server): the worker's timeout line says so."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        address = f"127.0.0.1:{server.getsockname()[1]}"
        with pytest.raises(DistributionError, match="something else answers at that address, "
                                                    "not process 0 of a keras-gauss job"):
            rendezvous(address, 2, 1, 2)
