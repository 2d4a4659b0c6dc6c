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

from keras_gauss.distribution import Distribution
from keras_gauss.distribution import DistributionConfig
from keras_gauss.distribution import DistributionError
from keras_gauss.distribution import check_batch
from keras_gauss.distribution import check_mesh
from keras_gauss.distribution import rendezvous
from keras_gauss.distribution import resolve

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
    return dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3",
                XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")


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


def test_each_process_keeps_its_rows_of_every_full_batch():
    import tensorflow as tf

    x = {"word": tf.range(10)}
    data = tf.data.Dataset.from_tensor_slices((x, tf.range(10))).batch(4)  # 4, 4, 2
    parts = []
    for pid in (0, 1):
        job = Distribution("data", num_processes=2, process_id=pid, devices=2)
        parts.append([y.numpy().tolist() for _, y in job.local_batches(data, 4)])
    assert parts == [[[0, 1], [4, 5]], [[2, 3], [6, 7]]]  # the partial batch is dropped
    assert len(list(Distribution().local_batches(data, 4))) == 3  # no job: unchanged


# --- rendezvous ---------------------------------------------------------------

def test_rendezvous_meets_and_times_out():
    port = free_port()
    address = f"127.0.0.1:{port}"
    errors = []

    def worker(pid):
        try:
            rendezvous(address, 3, pid, 20)
        except DistributionError as error:  # pragma: no cover - a failure
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(pid,)) for pid in (1, 2)]
    for thread in threads:  # the workers come first and wait for process 0
        thread.start()
    rendezvous(address, 3, 0, 20)
    for thread in threads:
        thread.join(20)
    assert not errors
    # The port is free again (for the JAX coordination service).
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))

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
    with pytest.raises(DistributionError, match="--num-processes 3 there, 2 on process 0"):
        rendezvous(address, 3, 1, 5)
    chief.join(5)


# --- the command line: one line, exit 2 -----------------------------------------

def _exit(argv, capsys):
    from keras_gauss.cli import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return info.value.code, err


@pytest.mark.parametrize("extra, words", [
    (["--distribution", "data", "--num-processes", "2", "--process-id", "2",
      "--coordinator", "127.0.0.1:1"], "--process-id must be in 0..1"),
    (["--distribution", "data", "--num-processes", "2"], "needs --coordinator"),
    (["--model-shards", "2"], "need --distribution"),
    (["--process-id", "1"], "need --distribution"),
])
def test_cli_bad_distribution_is_one_line(corpus, tmp_path, capsys, extra, words):
    code, err = _exit(["train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "r"),
                       *TRAIN, *extra], capsys)
    assert code == 2 and words in err
    assert not (tmp_path / "r").exists()


def test_cli_distribution_needs_the_keras_engine_and_jax(corpus, tmp_path, capsys):
    import keras

    code, err = _exit(["train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "r"),
                       *TRAIN, "--engine", "fused", "--distribution", "data"], capsys)
    assert code == 2 and "needs --engine keras" in err
    if keras.backend.backend() == "tensorflow":  # MirroredStrategy: one process, data only
        code, err = _exit(["train-corpus", "--corpus", str(corpus), "--out",
                           str(tmp_path / "r"), *TRAIN, "--distribution", "data",
                           "--num-processes", "2", "--process-id", "1", "--coordinator",
                           "127.0.0.1:1"], capsys)
        assert code == 2 and "--num-processes 2 needs KERAS_BACKEND=jax" in err
        assert "20585" in err
        code, err = _exit(["train-hierarchy", "--edges", str(corpus), "--out",
                           str(tmp_path / "r"), "--distribution", "model"], capsys)
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


def test_two_processes_train_what_one_process_trains(corpus, tmp_path):
    """Two JAX processes on localhost (one device each) against one process
    (one device), `--distribution data`, same seed and corpus: each process
    sums the gradient rows of its half of a batch and the halves are added
    across the processes, so the tables differ from one process's by float
    rounding of those sums only (a few ulp of values of order 1, through 2
    epochs of AdaGrad steps): 1e-5 absolute."""
    pytest.importorskip("jax")
    base = ["train-corpus", "--corpus", str(corpus), *TRAIN, "--distribution", "data"]
    port = free_port()
    job = [*base, "--out", str(tmp_path / "two"), "--num-processes", "2",
           "--coordinator", f"127.0.0.1:{port}", "--distribution-timeout", "120"]
    # Both processes are given the same --out (as on shared storage): only
    # process 0 writes it.
    procs = [subprocess.Popen([*CLI, *job, "--process-id", str(pid)], env=jax_env(1),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for pid in (0, 1)]
    one = _run([*base, "--out", str(tmp_path / "one")], jax_env(1))
    outputs = [p.communicate(timeout=300) for p in procs]
    assert one.returncode == 0, one.stderr[-2000:]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-3000:]
    assert "run written to" in outputs[0][0]
    single, double = _tables(tmp_path / "one"), _tables(tmp_path / "two")
    assert set(single) == set(double) and len(single) == 4
    for path in single:
        np.testing.assert_allclose(double[path], single[path], rtol=0, atol=1e-5,
                                   err_msg=path)
    start = (np.random.default_rng(1).uniform(-0.05, 0.05, (1,)))  # tables moved from init
    assert all(not np.allclose(v, start) for v in double.values())
    metrics = [json.loads((tmp_path / r / "metrics.json").read_text()) for r in ("one", "two")]
    assert metrics[0]["pairs"] == metrics[1]["pairs"] > 0
    assert metrics[1]["distribution"] == {"kind": "data", "devices": 2, "processes": 2,
                                          "model_shards": 1}


def test_model_parallel_splits_the_tables_by_rows_and_matches_one_device(tmp_path):
    pytest.importorskip("jax")
    done = subprocess.run([sys.executable, str(HERE / "model_parallel_run.py"),
                           str(tmp_path / "out.npz")], env=jax_env(2), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = np.load(tmp_path / "out.npz")
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


def test_hierarchy_data_parallel_matches_one_device(tmp_path):
    """`train_hierarchy` with DataParallel over 2 forced devices trains the
    tables of the one-device run (48 training edges, batches of 16: no
    partial batch to drop)."""
    pytest.importorskip("jax")
    code = f"""
import numpy as np
from keras_gauss.distribution import DistributionConfig
from keras_gauss.hierarchy.train import WordNetConfig, train_hierarchy
from keras_gauss.runs import load_run
config = WordNetConfig(edges={str(tmp_path / 'edges.tsv')!r}, dim=4, epochs=2,
                       batch_size=16, negatives=2, val_size=0, test_size=0,
                       reconstruction_nodes=10)
for name, dist in (("one", None), ("two", DistributionConfig("data"))):
    m = train_hierarchy(config, {str(tmp_path)!r} + "/" + name, verbose=0,
                        checkpoint_every=0, distribution=dist)
    assert m["num_train_edges"] == 48, m["num_train_edges"]
    assert (dist is None) == ("distribution" not in m), m.get("distribution")
a, b = ([w.numpy() for w in load_run({str(tmp_path)!r} + "/" + n).model.weights]
        for n in ("one", "two"))
print("MAXDIFF", max(float(np.abs(x - y).max()) for x, y in zip(a, b)))
"""
    # A root, 16 children, one grandchild each: 16 + 2 * 16 = 48 closure edges.
    lines = [f"c{i}\tr" for i in range(16)] + [f"g{i}\tc{i}" for i in range(16)]
    (tmp_path / "edges.tsv").write_text("\n".join(lines) + "\n")
    done = subprocess.run([sys.executable, "-c", code], env=jax_env(2), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    diff = float(done.stdout.split("MAXDIFF")[1])
    assert diff < 1e-5
