"""The `keras-gauss` command: help without TensorFlow, the no-TensorFlow
message, a redirected log of one line per epoch, `--quiet`, the demo's run,
an error in one line. Child processes only where a fresh process is the
point (no backend imported, no TensorFlow installed, the console script's
start-up); the rest calls `main` here."""

import contextlib
import os
import runpy
import subprocess
import sys
import textwrap

import pytest

from keras_gauss.cli import build_parser
from keras_gauss.cli import main

HEAVY = ("tensorflow", "keras", "nltk")


def _python(code, *args, cwd=None):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def _subcommands():
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return sorted(action.choices)


def test_help_of_every_subcommand_imports_no_backend():
    result = _python("""
        import sys
        from keras_gauss.cli import main
        # the command's modules load inside main, where Ctrl-C is one line
        print("LOADED AT IMPORT", "numpy" in sys.modules, file=sys.stderr)
        for argv in [["--help"]] + [[c, "--help"] for c in sys.argv[1:]]:
            try:
                main(argv)
            except SystemExit as stop:
                assert stop.code == 0, argv
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in %r)
        print("HEAVY", heavy, file=sys.stderr)
        """ % (HEAVY,), *_subcommands())
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stderr and "LOADED AT IMPORT False" in result.stderr
    for command in _subcommands():
        assert f"keras-gauss {command}" in result.stdout
    assert result.stdout.count("--quiet") >= len(_subcommands())


def test_ctrl_c_while_the_command_loads_is_one_line(monkeypatch, capsys):
    # before: Ctrl-C in a command's first third of a second (numpy and the
    # subcommands' modules loading) printed a traceback of the import under way
    from keras_gauss import cli

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    try:
        code = main(["train-corpus", "--help"])
    except KeyboardInterrupt:  # (escaping, it would stop the whole pytest session)
        pytest.fail("Ctrl-C while the command loads escaped main")
    assert code == 130
    assert capsys.readouterr().err == "keras-gauss: interrupted\n"


def test_ctrl_c_while_tensorflow_loads_is_ctrl_c_not_a_missing_tensorflow(tmp_path, monkeypatch,
                                                                       capsys):
    # before: "keras-gauss export: error: keras-gauss needs TensorFlow, which is not
    # installed": pybind11 turns Ctrl-C in a module's initialisation into an ImportError
    from cli_errors import cli_exit
    from keras_gauss.export import cli as export_cli

    def interrupted_import(args):
        try:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as stop:
                raise ImportError("initialization failed") from stop
        except ImportError as error:  # as keras_setup.require_backend words it
            raise ImportError("keras-gauss needs TensorFlow. Install it with the extra that "
                              "fits your machine: `pip install keras-gauss[cpu]`") from error

    monkeypatch.setattr(export_cli, "run_export", interrupted_import)
    code, err = cli_exit(["export", tmp_path / "run", "--out", tmp_path / "out"], capsys)
    assert (code, err) == (130, "interrupted\n")


def test_every_option_says_its_real_default_in_words():
    # --pairs and --max-size said "(default: None)"; --negatives "(default: 10
    # with kl, 10 with containment)"; train-wordnet's --covariance said nothing
    import re

    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    for command, subparser in action.choices.items():
        for option in subparser._actions:
            text = option.help and (option.help % {"default": option.default}
                                    if "%(default)" in option.help else option.help)
            name = f"{command} {'/'.join(option.option_strings) or option.dest}"
            assert "None" not in (text or ""), (name, text)
            for values in re.findall(r"(\S+) with \w+, (\S+) with \w+", text or ""):
                assert values[0] != values[1], (name, text)
            if option.choices and option.option_strings and option.default is not None:
                assert "default" in (text or ""), (name, text)
    pairs = next(a for a in action.choices["train-corpus"]._actions if a.dest == "pairs")
    assert "(default: host; device on a GPU" in pairs.help


# Makes `import tensorflow` fail as on an install without the extras.
NO_TENSORFLOW = """
    import importlib.abc, sys

    class NoTensorFlow(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "tensorflow":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoTensorFlow())
    from keras_gauss.cli import main
    sys.exit(main(sys.argv[1:]))
    """


def test_without_tensorflow_help_and_commands_say_what_to_install(tmp_path):
    result = _python(NO_TENSORFLOW, "--help")
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "pip install keras-gauss[cpu]" in result.stdout
    result = _python(NO_TENSORFLOW, "demo", "--out", str(tmp_path / "demo"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("keras-gauss demo: error: keras-gauss needs TensorFlow")
    assert "pip install keras-gauss[cpu]" in result.stderr
    assert not (tmp_path / "demo").exists()


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """`keras-gauss demo` (through `main`, in this process) with its stdout and
    stderr redirected to a file."""
    root = tmp_path_factory.mktemp("demo")
    log = root / "demo.log"
    with open(log, "w") as out, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        assert main(["demo", "--epochs", "3", "--out", str(root / "run")]) == 0
    return root / "run", log.read_text()


def test_redirected_log_has_one_line_per_epoch(demo_run):
    _, log = demo_run
    assert not any(code in log for code in ("\r", "\b", "\x1b"))
    epochs = [line for line in log.splitlines() if line.startswith("Epoch")]
    assert [line.split(":")[0] for line in epochs] == ["Epoch 1/3", "Epoch 2/3", "Epoch 3/3"]
    assert all("edges/s" in line and "loss" in line for line in epochs)
    assert "edge accuracy" in log


def test_demo_run_is_a_run_export_and_neighbors_accept(demo_run, tmp_path, capsys):
    run, _ = demo_run
    assert (run / "run.json").is_file()
    assert main(["neighbors", str(run), "dog", "--k", "2"]) == 0
    assert main(["export", str(run), "--format", "word2vec", "--out",
                 str(tmp_path / "means.txt"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "exporting" not in out and "word2vec export written" in out
    assert (tmp_path / "means.txt").read_text().startswith("20 2\n")


def test_quiet_prints_only_the_result(tmp_path, capsys):
    assert main(["demo", "--epochs", "1", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "Epoch" not in out and out.startswith("edge accuracy")


def test_an_error_is_one_line_from_the_console_script(tmp_path):
    """`neighbors` on a missing run imports TensorFlow, then fails: stderr is
    the one error line, without TensorFlow's start-up notices (oneDNN's prints
    on some CPUs whatever the log level), with no log settings of the user's.
    (The console script is `keras_gauss.cli.command`, `main` then the exit;
    `python -m keras_gauss` runs the same, next test.)"""
    script = os.path.join(os.path.dirname(sys.executable), "keras-gauss")
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS")}
    done = subprocess.run([script, "neighbors", str(tmp_path / "none"), "cat"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("keras-gauss neighbors: error: "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


def test_python_m_keras_gauss_is_the_command_and_its_exit_code(tmp_path, monkeypatch, capsys):
    """`python -m keras_gauss` (its `__main__`, run here as Python runs it):
    the same one error line and exit status 2."""
    monkeypatch.setattr(sys, "argv", ["keras_gauss", "neighbors", str(tmp_path / "none"), "cat"])
    with pytest.raises(SystemExit) as stop:
        runpy.run_module("keras_gauss", run_name="__main__", alter_sys=True)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("keras-gauss neighbors: error: "), err
    assert err.count("\n") == 1, err


@pytest.mark.parametrize("case", ["returned 0", "returned 3", "registered before", "failed"])
def test_the_console_script_ends_without_teardown_after_every_atexit_function(case):
    """After a command that returned, `command` ends the process without
    Python's teardown of its modules (a TensorFlow job's 1.3 s), once every
    `atexit` function has run and the output is flushed, with the command's
    exit code; where another `atexit` function came first, or the command
    failed, the process ends as usual."""
    code = 3 if case == "returned 3" else 0
    script = textwrap.dedent(f"""
        import atexit
        import keras_gauss.cli as cli

        class Teardown:
            def __del__(self):
                print("teardown", flush=True)

        marker = Teardown()
        if {case == "registered before"}:
            atexit.register(print, "registered before")

        def main(argv=None):
            atexit.register(print, "atexit ran")  # as TensorFlow, JAX or h5py do
            print("done")  # to a pipe: buffered until flushed
            if {case == "failed"}:
                raise RuntimeError("the command failed")
            return {code}

        cli.main = main
        cli.command([])
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    lines = done.stdout.splitlines()
    if case.startswith("returned"):
        assert (done.returncode, lines) == (code, ["done", "atexit ran"]), done
    elif case == "registered before":
        assert (done.returncode, lines) == (0, ["done", "atexit ran", "registered before",
                                                "teardown"]), done
    else:
        assert (done.returncode, lines) == (1, ["done", "atexit ran", "teardown"]), done
        assert "RuntimeError: the command failed" in done.stderr


def test_matplotlib_gets_a_private_config_directory_where_home_cannot_be_written(
        tmp_path, monkeypatch):
    # Keras imports matplotlib, which writes two lines when it cannot write
    # its config directory (a read-only home; here a file in the way).
    from keras_gauss import cli

    (tmp_path / "home").write_text("a file, not a directory")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    cli._private_matplotlib_config()
    private = os.environ["MPLCONFIGDIR"]
    assert os.path.isdir(private) and os.access(private, os.W_OK)
    monkeypatch.setenv("HOME", str(tmp_path))  # writable: matplotlib's own place
    monkeypatch.delenv("MPLCONFIGDIR")
    cli._private_matplotlib_config()
    assert "MPLCONFIGDIR" not in os.environ and os.listdir(tmp_path) == ["home"]


def test_sigterm_stops_a_command_as_ctrl_c_does(tmp_path, capsys, monkeypatch):
    # `kill` or `timeout` (SIGTERM) ended a command at once: no line, and
    # its temporary files (a half-saved run) left behind.
    import signal
    import time

    import numpy as np

    from cli_errors import cli_exit
    from keras_gauss import checkpoint

    out = tmp_path / "run"
    checkpoint.write_checkpoint(out, {"format": 2, "kind": "corpus", "settings": {"dim": 4}},
                                {"table/0": np.zeros(1)})

    def terminated(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # the handler raises first

    def unhandled(signum, frame):  # what the test sees if main installs nothing
        raise RuntimeError("SIGTERM reached the test's handler")

    monkeypatch.setattr(checkpoint, "run_training_command", terminated)
    previous = signal.signal(signal.SIGTERM, unhandled)
    try:
        code, err = cli_exit(["train-corpus", "--resume", out], capsys)
        assert signal.getsignal(signal.SIGTERM) is unhandled  # restored
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert code == 143 and err.startswith("terminated; the latest checkpoint is in ") \
        and f"`keras-gauss train-corpus --resume {out}`" in err, err
