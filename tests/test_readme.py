"""Every code block of README.md and docs/*.md is run, by this file or by `benchmarks/check_readme.py`.

A block is marked on the line before it with `<!-- check: test ID -->`
(checked here, by `TEST_CHECKS[ID]`), `<!-- check: script ID -->` (checked
by `python benchmarks/check_readme.py`, which needs minutes and the shared
data) or `<!-- check: test,script ID -->` (both: here on tiny data, there on
the real run with the figures). `test_every_block_is_checked` fails on an
unmarked block or a marker without its check. The commands run in a
temporary directory where `../shared/data` is the project's shared data;
`keras-gauss` commands run in this process (`keras_gauss.cli.main`), so
TensorFlow is imported once. The documents are `check_readme.documents()`:
README.md, then docs/*.md; a check's blocks may sit in any of them.
"""

import contextlib
import importlib.util
import io
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import warnings

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

_spec = importlib.util.spec_from_file_location("check_readme", ROOT / "benchmarks" / "check_readme.py")
check_readme = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_readme)
Tolerance = check_readme.Tolerance


def keras_gauss(command, workdir):
    """Runs a `keras-gauss ...` command line in this process, in `workdir`; returns its stdout."""
    from keras_gauss import cli

    argv = shlex.split(command, comments=True)
    assert argv[0] == "keras-gauss", command
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(out):
            code = cli.main(argv[1:])
    except SystemExit as exit:
        code = exit.code
    finally:
        os.chdir(cwd)
    assert not code, f"`{command}` exited {code}:\n{out.getvalue()}"
    return out.getvalue()


def run_console(blocks, workdir, tol=Tolerance(), compare=True):
    """Runs each `$ ` command of the console blocks; compares its output with the README's."""
    for block in blocks:
        for command, shown in check_readme.console_steps(block):
            printed = keras_gauss(command, workdir)
            if compare:
                problem = check_readme.same_output(shown, printed, tol)
                assert problem is None, (f"{block.where}: `{command}`\n{problem}\n"
                                         f"--- printed ---\n{printed}")


def run_python(blocks, workdir, namespace=None):
    """Runs the `python` blocks in `workdir` (in `namespace`); returns what they printed."""
    code = "".join(b.text for b in blocks if b.lang == "python")
    out, cwd = io.StringIO(), os.getcwd()
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {"__name__": "readme"} if namespace is None
                 else namespace)
    finally:
        os.chdir(cwd)
    return out.getvalue()


@pytest.fixture(scope="module")
def blocks():
    return check_readme.blocks_by_id("test")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A working directory with `../shared` linked to the shared data, as from the repository root."""
    top = tmp_path_factory.mktemp("readme")
    (top / "project").mkdir()
    if SHARED.is_dir():
        (top / "shared").symlink_to(SHARED)
    return top / "project"


@pytest.fixture(scope="module")
def wordnet_run(project):
    """A tiny stand-in for the main job's `runs/wordnet`: the mammal subtree, 10-d, 1 epoch."""
    keras_gauss("keras-gauss train-wordnet --root mammal.n.01 --dim 10 --epochs 1 "
                "--reconstruction-nodes 50 --out runs/wordnet --quiet", project)
    return project / "runs" / "wordnet"


# --- the markers ---------------------------------------------------------------

def unchecked_blocks(path, test_checks, script_checks):
    """Why each block of the Markdown file `path` is not checked (empty: all are)."""
    problems = []
    for block in check_readme.readme_blocks(path):
        where = block.where
        if not block.kinds:
            problems.append(f"{where}: no `<!-- check: test|script ID -->` marker")
        for kind in block.kinds:
            checks = {"test": test_checks, "script": script_checks}.get(kind)
            if checks is None:
                problems.append(f"{where}: unknown kind {kind!r}")
            elif block.id not in checks:
                problems.append(f"{where}: no {kind} check {block.id!r}")
    return problems


def test_every_block_is_checked():
    documents = check_readme.documents()
    assert ROOT / "docs" / "reliability.md" in documents and len(documents) >= 4
    assert [problem for path in documents
            for problem in unchecked_blocks(path, TEST_CHECKS, check_readme.CHECKS)] == []
    # and no check is left without its block
    assert set(TEST_CHECKS) == set(check_readme.blocks_by_id("test"))
    assert set(check_readme.CHECKS) == set(check_readme.blocks_by_id("script"))


def reliability_tests(text):
    """`(file, test)` of every `tests/...py::test_name` that docs/reliability.md names,
    and its guarantees (lines starting with `- `) that name none."""
    items = ["- " + item for item in ("\n" + text).split("\n- ")[1:]]
    named = [re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", item) for item in items]
    return [pair for pairs in named for pair in pairs], \
        [item.splitlines()[0] for item, pairs in zip(items, named)
         if not pairs and "README" not in item]


def test_every_reliability_guarantee_names_tests_that_exist():
    named, without = reliability_tests((ROOT / "docs" / "reliability.md").read_text(encoding="utf-8"))
    assert len(named) >= 20 and without == []
    missing = [f"{file}::{test}" for file, test in named
               if not re.search(rf"^def {test}\(", (ROOT / file).read_text(encoding="utf-8"),
                                re.MULTILINE)]
    assert missing == []


def test_every_figure_caption_is_checked():
    """A caption ``*`python examples/X.py`: ...*`` is run by check_readme's `CAPTIONS`."""
    captions = check_readme.readme_captions()
    assert "python examples/wordnet_mammals.py" in captions
    assert set(captions) == set(check_readme.CAPTIONS)


def test_an_unmarked_block_fails(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("<!-- check: test help -->\n```bash\nkeras-gauss --help\n```\n\n"
                      "```bash\nkeras-gauss demo\n```\n\n"
                      "<!-- check: script nowhere -->\n```bash\nls\n```\n\n"
                      "```bash\nkeras-gauss --version\n```\n<!-- check: test help -->\n")
    problems = unchecked_blocks(readme, TEST_CHECKS, check_readme.CHECKS)
    assert problems == ["README.md line 6: no `<!-- check: test|script ID -->` marker",
                        "README.md line 11: no script check 'nowhere'"]


LINK = re.compile(r"\[[^\]]*\]\((?!https?:|mailto:)(?P<target>[^)#\s]*)(?:#(?P<anchor>[^)\s]*))?\)")


def anchors(path):
    """The `#anchors` of a Markdown file's headings, as GitHub makes them."""
    return {re.sub(r"[^\w\- ]", "", m[1].strip().lower()).replace(" ", "-")
            for m in re.finditer(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.MULTILINE)}


def broken_links(path):
    """The relative links `[text](target#anchor)` of `path` whose file or heading is missing."""
    broken = []
    for m in LINK.finditer(path.read_text(encoding="utf-8")):
        target = (path.parent / m["target"]) if m["target"] else path
        if not target.exists():
            broken.append(m[0])
        elif m["anchor"] and (target.is_dir() or m["anchor"] not in anchors(target)):
            broken.append(m[0])
    return broken


def test_every_link_between_the_documents_resolves(tmp_path):
    """A relative link of README.md, docs/*.md or benchmarks/README.md names a file that
    exists and, after `#`, one of its headings (sections moved between them)."""
    documents = [*check_readme.documents(), ROOT / "benchmarks" / "README.md"]
    assert sum(len(LINK.findall(p.read_text(encoding="utf-8"))) for p in documents) >= 10
    assert {str(p.relative_to(ROOT)): broken_links(p) for p in documents} == {
        str(p.relative_to(ROOT)): [] for p in documents}
    # and it can fail
    (tmp_path / "a.md").write_text("# A heading: `x`\n[ok](#a-heading-x) [no](#b) [gone](b.md)\n")
    assert broken_links(tmp_path / "a.md") == ["[no](#b)", "[gone](b.md)"]


def test_same_output():
    same = check_readme.same_output
    tol = Tolerance(abs=0.01)
    assert same("acc  0.975\n...\ndone", "acc 0.98\nx\ny\ndone", tol) is None
    assert "not within" in same("acc  0.975", "acc 0.95", tol)
    assert "is not 82,115" in same("82,115 nodes", "82,116 nodes", tol)  # integers exact
    assert same("dog.n.01  -1.5", "dog.n.02  -1.5", tol) == (
        "README 'dog.n.01  -1.5'\n  printed 'dog.n.02  -1.5': text differs")
    assert same("Epoch 1/2: 100 edges in 1.0 s (100 edges/s)",  # times and rates: any
                "Epoch 1/2: 100 edges in 7.3 s (14 edges/s)", tol) is None
    assert same("figure: .../x.png", "figure: /tmp/a/x.png", tol) is None
    assert "missing line" in same("a\nb", "a", tol)
    assert "extra printed line" in same("a", "a\nb", tol)


# --- the blocks marked `test` -----------------------------------------------------

def check_ci(blocks, project):
    """The README's test command is what `.ci/run` runs, after installing as the README says."""
    (block,) = blocks
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == block.text.strip()
    (setup,) = check_readme.blocks_by_id("script")["main-job"][:1]
    install = [c.strip() for c in setup.text.split("&&") if "pip install" in c]
    assert install and any(line.endswith(install[0].split("pip install")[1].strip())
                           for line in ci if "pip install" in line), (install, ci)


def check_quick_start(blocks, project):
    namespace = {"__name__": "readme"}
    printed = run_python(blocks, project, namespace)
    # it trains: 4096 triples in batches of 256
    assert int(namespace["model"].optimizer.iterations.numpy()) == 16
    (shown,) = [b.text for b in blocks if b.lang == "text"]
    assert check_readme.same_output(shown, printed) is None, printed


def check_demo(blocks, project):
    run_console(blocks, project, Tolerance(abs=0.02, rel=0.05))


EXTRA_EDGES = "".join(f"{leaf}\t{parent}\n" for parent, leaves in {
    "mammal": ["horse", "whale", "bat", "mouse"], "bird": ["robin", "eagle", "owl", "penguin"],
    "fish": ["salmon", "shark", "trout"], "animal": ["bird", "fish"],
    "dog": ["puppy", "terrier", "poodle"], "cat": ["kitten", "lion", "tiger"]}.items()
    for leaf in leaves)


def check_edges(blocks, project):
    """The format example reads as shown; the test's file adds more pairs in the same format
    (a split needs more edges than the example has)."""
    from keras_gauss.hierarchy.edgefile import read_edge_file

    (block,) = blocks
    path = project / "edges.tsv"
    path.write_text(block.text)
    edges = read_edge_file(str(path))
    assert list(edges.pairs) == [("dog", "mammal"), ("cat", "mammal"), ("mammal", "animal")]
    path.write_text(block.text + EXTRA_EDGES)


def check_own_hierarchy(blocks, project):
    if not (project / "edges.tsv").exists():
        check_edges(check_readme.blocks_by_id("test")["edges"], project)
    (block,) = blocks
    check_readme.run_bash(block, project, keras_gauss)
    assert json.loads((project / "runs/mine/metrics.json").read_text())["test_accuracy"] >= 0


def check_corpus_text(project):
    """Writes `my_corpus.txt`: two topics of six words, 300 lines."""
    words = ["music", "song", "band", "guitar", "piano", "drum", "river", "lake", "boat",
             "water", "fish", "rain"]
    lines = [" ".join(words[(i * 7 + j * 3) % 6 + 6 * (i % 2)] for j in range(12))
             for i in range(300)]
    (project / "my_corpus.txt").write_text("\n".join(lines) + "\n")


def check_corpus(blocks, project):
    check_corpus_text(project)
    (block,) = blocks
    check_readme.run_bash(block, project, keras_gauss)


def check_load_run(blocks, project):
    """Runs against the tiny stand-in run, so only the shape of the output is compared."""
    printed = run_python(blocks, project)
    (shown,) = [b.text for b in blocks if b.lang == "text"]
    assert len(printed.splitlines()) == len(shown.splitlines()), printed
    assert printed.splitlines()[1] in ("True", "False")


def check_wordnet_cli(blocks, project):
    """On the tiny stand-in run: the same command, the same header."""
    for block in blocks:
        for command, shown in check_readme.console_steps(block):
            printed = keras_gauss(command, project)
            assert printed.splitlines()[0].split() == shown.splitlines()[0].split(), printed
            assert len(printed.splitlines()) == len(shown.splitlines()), printed


def check_ganea(blocks, project):
    """The command on the mammal subtree, for two epochs: an F1-scored run that says what
    training holds."""
    (block,) = blocks
    (command,) = [line for line in block.text.splitlines() if line.strip()]
    printed = keras_gauss(command + " --root mammal.n.01 --epochs 2 --batch-size 256",
                          project)
    assert "training = the 1,176 basic edges (transitive reduction)" in printed, printed
    metrics = json.loads((project / "runs/ganea/metrics.json").read_text())
    assert metrics["config"]["energy"] == "kl" and 0 <= metrics["test_f1"] <= 1


def check_serving(blocks, project):
    (block,) = blocks
    check_readme.run_bash(block, project, keras_gauss)


def check_serving_request(blocks, project):
    if not (project / "serving/wordnet/1").is_dir():
        check_serving(check_readme.blocks_by_id("test")["serving"], project)
    check_readme.serving_request(blocks, project, Tolerance(), numbers=False)


def check_export_formats(blocks, project):
    (block,) = blocks
    check_readme.run_bash(block, project, keras_gauss)
    # the mammal subtree's 1,182 synsets and 2,264 word nodes (the main job's word nodes)
    assert (project / "means.txt").read_text().split("\n")[0].split() == ["3446", "10"]
    assert (project / "projector" / "metadata.tsv").is_file()


def check_help(blocks, project):
    """`--help` in a fresh process (it must not import TensorFlow), at 80 columns."""
    for block in blocks:
        for command, shown in check_readme.console_steps(block):
            argv = shlex.split(command)
            done = subprocess.run([str(pathlib.Path(sys.executable).parent / argv[0]), *argv[1:]],
                                  capture_output=True, text=True, timeout=60,
                                  env=dict(os.environ, COLUMNS="80"))
            assert done.returncode == 0, done.stderr
            assert check_readme.same_output(shown, done.stdout) is None, done.stdout


def check_scale_out(blocks, project):
    """The two-process command, as printed, on a corpus that survives the
    default subsampling (1,000 words), with a free port for 7777."""
    import random
    import socket

    pytest.importorskip("jax")
    rng = random.Random(0)
    words = [f"w{i}" for i in range(1000)]
    lines = [" ".join(rng.choice(words) for _ in range(10)) for _ in range(1500)]
    (project / "my_corpus.txt").write_text("\n".join(lines) + "\n")
    (block,) = blocks
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert "127.0.0.1:7777" in block.text
    env = dict(os.environ)  # one host device each, as the block's reader has
    env["XLA_FLAGS"] = " ".join(flag for flag in env.get("XLA_FLAGS", "").split()
                                if not flag.startswith("--xla_force_host_platform_device_count"))
    env["PATH"] = f"{pathlib.Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    done = subprocess.run(["bash", "-ec", block.text.replace("7777", str(port))],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads((project / "runs/two-processes/metrics.json").read_text())
    assert metrics["distribution"]["processes"] == 2 and metrics["pairs"] > 0
    # Each process read its own half of the lines (i::2).
    assert [s["lines"] for s in metrics["distribution"]["shards"]] == [750, 750]


EXAMPLES_SMALL = {  # each example as the README runs it, small
    "examples/corpus_tf_data.py": ["--dim", "4", "--epochs", "2", "--batch-size", "256"],
    "examples/wordnet_kl_fit.py": ["--root", "canine.n.02", "--dim", "4", "--epochs", "2"],
}


def check_examples(blocks, project):
    """The two `model.fit` examples run as the README shows, on a tiny corpus and subtree,
    and their saved models reload."""
    check_corpus_text(project)
    (block,) = blocks
    for command in check_readme.shell_commands(block.text):
        argv = shlex.split(command, comments=True)
        assert argv[0] == "python" and argv[1] in EXAMPLES_SMALL, command
        spec = importlib.util.spec_from_file_location(pathlib.Path(argv[1]).stem, ROOT / argv[1])
        example = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(example)
        out, cwd = io.StringIO(), os.getcwd()
        os.chdir(project)
        try:
            with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                result = example.main(argv[2:] + EXAMPLES_SMALL[argv[1]])
        finally:
            os.chdir(cwd)
        printed = out.getvalue()
        # It runs clean: no warning (Keras warns when a dataset runs out
        # within an epoch, and cuts the epoch short). (Deprecations inside
        # Keras and TensorFlow are theirs: Python hides them, and so does
        # this project's pytest configuration.)
        warned = [f"{w.category.__name__}: {w.message}" for w in said
                  if not issubclass(w.category, DeprecationWarning)]
        assert warned == [], (argv[1], warned)
        if "corpus" in argv[1]:
            history = result[2]  # every epoch whole
            assert history.params["steps"] > 0 and history.epoch == [0, 1]
            assert (project / "runs/corpus-fit/model.keras").is_file()
            assert "nearest to" in printed, printed
        else:
            run = project / "runs/wordnet-kl-fit"
            assert (run / "best.keras").is_file() and (run / "training.csv").is_file()
            assert "is_a(dog.n.01, canine.n.02)" in printed, printed
            assert 0 <= json.loads((run / "threshold.json").read_text())["test_accuracy"] <= 1


def test_the_wordnet_example_trains_with_the_synset_settings_of_train_wordnet():
    """`examples/wordnet_kl_fit.py` embeds synsets alone, so it takes `train-wordnet
    --no-lemmas`'s KL settings, not the word nodes' (threshold 40, variances from 0.05:
    with those its mammals scored .958 and called canine.n.02 a dog.n.01)."""
    from keras_gauss.hierarchy.config import WordNetConfig

    spec = importlib.util.spec_from_file_location("wordnet_kl_fit",
                                                  ROOT / "examples/wordnet_kl_fit.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    synsets = WordNetConfig(energy="kl", include_lemmas=False).resolved()
    assert (example.KL.threshold, example.KL.margin, example.KL.min_variance,
            example.KL.max_variance, example.KL.max_norm) == (
        synsets.threshold, synsets.margin, synsets.min_variance, synsets.max_variance,
        synsets.max_norm) == (20.0, 20.0, 0.01, 5.0, 10.0)


TEST_CHECKS = {
    "ci": check_ci,
    "quick-start": check_quick_start,
    "demo": check_demo,
    "edges": check_edges,
    "own-hierarchy": check_own_hierarchy,
    "corpus": check_corpus,
    "load-run": check_load_run,
    "wordnet-cli": check_wordnet_cli,
    "ganea": check_ganea,
    "serving": check_serving,
    "serving-request": check_serving_request,
    "export-formats": check_export_formats,
    "help": check_help,
    "scale-out": check_scale_out,
    "examples": check_examples,
}
NEEDS_WORDNET_RUN = {"load-run", "wordnet-cli", "serving", "serving-request", "export-formats"}


@pytest.mark.parametrize("check_id", sorted(TEST_CHECKS))
def test_readme_block(check_id, blocks, project, request):
    if check_id not in blocks:
        pytest.fail(f"no block of README.md or docs/*.md is marked `<!-- check: test {check_id} -->`")
    if check_id in NEEDS_WORDNET_RUN:
        request.getfixturevalue("wordnet_run")
    TEST_CHECKS[check_id](blocks[check_id], project)


@pytest.mark.parametrize("steps", ["30", "0", "120", "150"])
def test_the_mammals_example_refuses_steps_it_cannot_train_in_one_line(steps, monkeypatch, capsys):
    """`--steps` below 500 trained no step at all (epochs of 500 steps); now
    any multiple of 50 (the steps of one compiled call) is trained as given."""
    spec = importlib.util.spec_from_file_location("wordnet_mammals",
                                                  ROOT / "examples/wordnet_mammals.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    trained = []

    def train(out, steps, **options):
        trained.append(steps)
        raise SystemExit(0)

    monkeypatch.setattr(example, "train", train)
    monkeypatch.setattr("sys.argv", ["wordnet_mammals.py", "--steps", steps, "--out", "unused"])
    with pytest.raises(SystemExit):
        example.main()
    error = capsys.readouterr().err
    if steps == "150":
        assert trained == [150] and not error
    else:
        assert trained == []
        assert error.splitlines()[-1] == ("wordnet_mammals.py: error: --steps must be a positive "
                                          f"multiple of 50 (the steps of one compiled call), got {steps}")
