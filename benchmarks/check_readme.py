"""Runs the long commands of README.md and docs/*.md and checks what they print against what is shown.

    nice -n 19 python benchmarks/check_readme.py [--only ID ...] [--skip ID ...]
        [--workdir DIR] [--keep]

Every fenced block of README.md and of docs/*.md (`documents()`: "the
README" below means all of them) carries a marker on the line before it (or,
where the text before a block must stay as it is, on the line right after
its closing fence):

    <!-- check: test ID -->          run by tests/test_readme.py (fast)
    <!-- check: script ID -->        run by this script (minutes, shared data)
    <!-- check: test,script ID -->   both (the test on tiny data, this script
                                     on the real run, with the figures)

Blocks with the same ID form one check. A `console` block holds commands
(lines starting with `$ `) each followed by what it prints; a `python` block
may be followed by a `text` block of what it prints. Printed text is compared
with `same_output`: line by line, a line `...` stands for any lines and `...`
inside a line for any text; numbers written without a decimal point must be
equal, numbers with one must agree within the check's tolerance (below, per
check), and numbers that are times or rates (`12.3 s`, `3,885 edges/s`) are
not compared. This script checks the blocks marked `script` (in `CHECKS`);
tests/test_readme.py checks the blocks marked `test` and that every block has
a marker whose check exists. Commands run in `--workdir` (default: a new
temporary directory, deleted unless `--keep`), where `../shared/data` is
linked to the project's shared data, as from the repository root; the
`keras-gauss` and `python` of the running interpreter's environment are used.
Prints each check's result and `uptime`'s load average; exits 1 if one fails.

A figure's caption of the form ``*`python examples/NAME.py`: ...*`` is
checked too (`CAPTIONS` below): the script is run and the figures the
caption quotes are compared with what it prints.

To add a checked block: put `<!-- check: script NEW-ID -->` before it and a
function `check_new_id(blocks, workdir)` in `CHECKS` below (most are one
`run_console(blocks, workdir, tol)` call); or mark it `test` and add a case
to `TEST_CHECKS` in tests/test_readme.py.
"""

import argparse
import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

MARKER = re.compile(r"^<!-- check: (?P<kinds>[a-z,]+) (?P<id>[a-z0-9-]+) -->\s*$")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")


@dataclasses.dataclass
class Block:
    """One fenced block of the README, with its marker (`kinds` empty when unmarked)."""

    lang: str
    text: str
    line: int
    kinds: tuple = ()
    id: str = ""
    file: str = "README.md"

    @property
    def where(self):
        """`FILE line N`, for messages."""
        return f"{self.file} line {self.line}"


def documents():
    """The Markdown files whose blocks are checked: README.md, then docs/*.md."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def readme_blocks(path=ROOT / "README.md"):
    """Every fenced block of `path` (a Markdown file), in order."""
    path = Path(path)
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        start, i = i, i + 1
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        block = Block(match["lang"], "\n".join(lines[start + 1:i]) + "\n", start + 1,
                      file=path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT)
                      else path.name)
        marker = MARKER.match(lines[start - 1]) if start else None
        after = lines[i + 1] if i + 1 < len(lines) else ""
        if marker is None and MARKER.match(after) and not (
                i + 2 < len(lines) and FENCE.match(lines[i + 2])):
            marker = MARKER.match(after)  # a marker right after the closing fence
        if marker:
            block.kinds = tuple(marker["kinds"].split(","))
            block.id = marker["id"]
        blocks.append(block)
        i += 1
    return blocks


def blocks_by_id(kind, paths=None):
    """`{id: [blocks]}` of the blocks marked with `kind` ("test" or "script") in
    `paths` (default: `documents()`)."""
    found = {}
    for path in documents() if paths is None else paths:
        for block in readme_blocks(path):
            if kind in block.kinds:
                found.setdefault(block.id, []).append(block)
    return found


# --- comparing printed output with the README -------------------------------

NUMBER = r"(?<![\w.])[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?(?![\w])"
RATE = re.compile(r"\s*(?:s\b|ms\b|[a-z]*/s\b)")


@dataclasses.dataclass
class Tolerance:
    """Numbers written with a decimal point agree when within `abs` or `rel` of the README's."""

    abs: float = 0.0
    rel: float = 0.0


def _line_pattern(shown):
    """A regex for a shown line, and for each number in it: its value, or None if not compared."""
    parts, numbers, pos = [], [], 0
    for match in re.finditer(NUMBER, shown):
        parts.append(shown[pos:match.start()])
        text = match.group()
        is_rate = RATE.match(shown, match.end()) is not None
        numbers.append(None if is_rate else text)
        parts.append(None)
        pos = match.end()
    parts.append(shown[pos:])
    regex = ""
    for part in parts:
        if part is None:
            regex += f"({NUMBER})"
        else:
            regex += ".*?".join(r"\s*".join(map(re.escape, re.split(r"\s+", piece)))
                                for piece in part.split("..."))
    return re.compile(regex), numbers


def _value(text):
    return float(text.replace(",", ""))


def line_problem(shown, printed, tol):
    """None if `printed` matches `shown`, else why not."""
    shown, printed = shown.strip(), printed.strip()
    pattern, numbers = _line_pattern(shown)
    match = pattern.fullmatch(printed)
    if match is None:
        return "text differs"
    for expected, got in zip(numbers, match.groups()):
        if expected is None:
            continue
        if "." not in expected and "e" not in expected.lower():
            if _value(expected) != _value(got):
                return f"{got} is not {expected}"
        elif abs(_value(got) - _value(expected)) > max(tol.abs, tol.rel * abs(_value(expected))):
            return f"{got} is not within {tol.abs} / {tol.rel:.0%} of {expected}"
    return None


def same_output(shown, printed, tol=Tolerance()):
    """None if `printed` matches the README's `shown` text (see the module docstring), else why not."""
    want = [line for line in shown.splitlines() if line.strip()]
    got = [line for line in printed.splitlines() if line.strip()]

    deepest = [(-1, None)]  # the mismatch furthest into the README's lines

    def fail(i, problem):
        if i > deepest[0][0]:
            deepest[0] = (i, problem)
        return problem

    def match(i, j):
        if i == len(want):
            return None if j == len(got) else fail(i, f"extra printed line: {got[j]!r}")
        if want[i].strip() == "...":
            for k in range(j, len(got) + 1):
                if match(i + 1, k) is None:
                    return None
            return fail(i, "no match after '...'")
        if j == len(got):
            return fail(i, f"missing line: {want[i]!r}")
        problem = line_problem(want[i], got[j], tol)
        if problem:
            return fail(i, f"README {want[i].strip()!r}\n  printed {got[j].strip()!r}: {problem}")
        return match(i + 1, j + 1)

    return None if match(0, 0) is None else deepest[0][1]


def console_steps(block):
    """`[(command, shown output)]` of a `console` block (`$ ` lines, `\\` continues one)."""
    steps, command, output, continued = [], None, [], False
    for line in block.text.splitlines():
        if continued:
            command += " " + line.strip().rstrip("\\").strip()
            continued = line.rstrip().endswith("\\")
        elif line.startswith("$ "):
            if command is not None:
                steps.append((command, "\n".join(output)))
            command, output = line[2:].rstrip().rstrip("\\").strip(), []
            continued = line.rstrip().endswith("\\")
        else:
            output.append(line)
    if command is not None:
        steps.append((command, "\n".join(output)))
    return steps


def shell_commands(text):
    """The commands of a `bash` block: `\\` continues a line, `#` starts a comment."""
    commands, current = [], ""
    for line in text.splitlines():
        current += " " + line.strip()
        if current.endswith("\\"):
            current = current[:-1]
            continue
        if shlex.split(current, comments=True):
            commands.append(current.strip())
        current = ""
    return commands


# --- running the long checks ---------------------------------------------------

def _bin(name):
    return str(Path(sys.executable).parent / name)


def run(command, workdir, timeout=1800):
    """Runs a README command line in `workdir` and returns what it printed (stdout)."""
    argv = shlex.split(command, comments=True)
    if argv[0] in ("keras-gauss", "python", "python3"):
        argv[0] = _bin("keras-gauss") if argv[0] == "keras-gauss" else sys.executable
    if len(argv) > 1 and argv[1].startswith(("benchmarks/", "examples/")):
        argv[1] = str(ROOT / argv[1])  # the project's scripts, as from the repository root
    print(f"$ {command}", flush=True)
    start = time.perf_counter()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", COLUMNS="80")
    done = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=timeout)
    print(f"  ({time.perf_counter() - start:.0f} s, exit {done.returncode})", flush=True)
    if done.returncode != 0:
        raise AssertionError(f"`{command}` exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done.stdout


def run_console(blocks, workdir, tol):
    """Runs every command of the `console` blocks and compares what each prints."""
    problems = []
    for block in blocks:
        for command, shown in console_steps(block):
            printed = run(command, workdir)
            problem = same_output(shown, printed, tol)
            if problem:
                problems.append(f"{block.where}: `{command}`:\n{problem}\n"
                                f"--- printed ---\n{printed}")
    assert not problems, "\n".join(problems)


def run_python(blocks, workdir, tol):
    """Runs a `python` block in `workdir` and compares its output with the `text` block after it."""
    code = [b for b in blocks if b.lang == "python"]
    shown = [b for b in blocks if b.lang == "text"]
    script = Path(workdir) / "_readme_snippet.py"
    script.write_text("".join(b.text for b in code))
    printed = run(f"python {script.name}", workdir)
    problem = same_output("".join(b.text for b in shown), printed, tol)
    assert problem is None, f"{code[0].where}:\n{problem}\n--- printed ---\n{printed}"


def run_bash(block, workdir, runner=None):
    """Runs the `keras-gauss` lines of a `bash` block (`runner(command, workdir)`, default `run`).

    A `docker run` line is not run (no Docker here); the host directory it
    mounts must exist.
    """
    runner = runner or run
    for command in shell_commands(block.text):
        argv = shlex.split(command, comments=True)
        if argv[0] == "docker":
            (mount,) = [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]
            host = mount.split(":")[0].replace("$PWD", str(workdir))
            assert Path(host).is_dir(), f"`{command}` mounts {host}, which does not exist"
            continue
        assert argv[0] == "keras-gauss", f"{block.where}: cannot run `{command}`"
        runner(command, workdir)


def serving_request(blocks, workdir, tol, numbers=True):
    """Sends the `curl` block's request to the exported SavedModel (loaded with TensorFlow,
    as TF Serving would) and compares the reply with the `json` block.

    With `numbers=False` only the keys, shapes and booleans are compared.
    """
    import json

    import numpy as np
    import tensorflow as tf

    (curl,) = [b for b in blocks if b.lang == "bash"]
    (reply,) = [b for b in blocks if b.lang == "json"]
    argv = shlex.split(" ".join(curl.text.split("\\\n")))
    model = re.search(r"/v1/models/(\w+):predict", " ".join(argv))[1]
    request = json.loads(argv[argv.index("-d") + 1])
    shown = json.loads(reply.text)["outputs"]
    loaded = tf.saved_model.load(str(Path(workdir) / "serving" / model / "1"))
    function = loaded.signatures[request.get("signature_name", "serving_default")]
    got = {k: v.numpy().tolist() for k, v in
           function(**{k: tf.constant(v) for k, v in request["inputs"].items()}).items()}
    assert sorted(got) == sorted(shown), f"outputs {sorted(got)}, README shows {sorted(shown)}"
    for key, want in shown.items():
        have = got[key]
        assert np.shape(have) == np.shape(want), f"{key}: shape {np.shape(have)}, README {np.shape(want)}"
        if isinstance(np.ravel(want)[0], (bool, np.bool_)):
            assert have == want, f"{key}: {have}, README shows {want}"
        elif numbers:
            close = np.isclose(have, want, rtol=tol.rel, atol=tol.abs)
            assert close.all(), f"{key}: {have}, README shows {want}"


def check_main_job(blocks, workdir):
    """The main job (the first of the two commands) as written; its output within .015."""
    setup, output = blocks
    (command,) = [c for c in setup.text.split("&&") if "keras-gauss" in c]
    printed = run(command.strip().replace(".venv/bin/keras-gauss", "keras-gauss"), workdir)
    problem = same_output(output.text, printed, Tolerance(abs=0.015, rel=0.05))
    assert problem is None, f"{problem}\n--- printed ---\n{printed}"


def check_wordnet_scored(blocks, workdir):
    run_console(blocks, workdir, Tolerance(abs=0.015, rel=0.05))


def check_load_run(blocks, workdir):
    run_python(blocks, workdir, Tolerance(abs=0.5, rel=0.25))


def check_wordnet_cli(blocks, workdir):
    run_console(blocks, workdir, Tolerance(abs=0.5, rel=0.25))


def check_wordnet_evaluate(blocks, workdir):
    run_console(blocks, workdir, Tolerance(abs=0.015, rel=0.05))


def check_serving(blocks, workdir):
    (block,) = blocks
    run_bash(block, workdir)


def check_serving_request(blocks, workdir):
    """The reply's numbers as the README shows them (the main job is seeded: measured
    -0.0007 and -1.607 at 07:30 on 2026-11-28)."""
    serving_request(blocks, workdir, Tolerance(abs=0.01, rel=0.05))


def check_mammals(blocks, workdir):
    run_console(blocks, workdir, Tolerance(abs=0.03, rel=0.1))


def check_corpus_news(blocks, workdir):
    # Hogwild threads: single runs spread by about +-.03 around the 4-seed means shown.
    run_console(blocks, workdir, Tolerance(abs=0.04, rel=0.0))


def check_speed(blocks, workdir):
    """The README's end-to-end ratio to gensim (0.76 on a quiet machine). Wall times
    are noisy on a shared machine, so the check is that train-corpus with its
    defaults stays under 1.6x gensim."""
    (block,) = blocks
    (command,) = shell_commands(block.text)
    printed = run(command, workdir)
    print(printed)
    ratios = [float(r) for r in re.findall(r"^train-corpus \(defaults\).*?(\d+\.\d+)\s*$",
                                           printed, re.M)]
    assert ratios, "no row 'train-corpus (defaults)' printed"
    assert all(r <= 1.6 for r in ratios), f"train-corpus / gensim {ratios} above 1.6"


def check_examples(blocks, workdir):
    """The two `model.fit` examples as written: the corpus one on the first 400 lines of
    news2017 (as my_corpus.txt: about 220,000 words, its lines are articles), the WordNet
    one on the mammals, test accuracy >= .95 and canine.n.02 not a dog.n.01."""
    import gzip

    with gzip.open(SHARED / "data/corpus/news2017.txt.gz", "rt") as source:
        head = [line for _, line in zip(range(400), source)]
    (Path(workdir) / "my_corpus.txt").write_text("".join(head))
    (block,) = blocks
    for command in shell_commands(block.text):
        printed = run(command, workdir)
        print(printed)
        if "wordnet_kl_fit" in command:
            test = re.search(r"\(validation\), (\d\.\d+) \(test\)", printed)
            assert test and float(test[1]) >= 0.95, "test accuracy below .95 or not printed"
            assert "is_a(canine.n.02, dog.n.01) = False" in printed, "a reversed pair called is-a"
        else:
            assert "nearest to" in printed, "no neighbours printed"


CHECKS = {
    "main-job": check_main_job,
    "wordnet-scored": check_wordnet_scored,
    "load-run": check_load_run,
    "wordnet-cli": check_wordnet_cli,
    "wordnet-evaluate": check_wordnet_evaluate,
    "serving": check_serving,
    "serving-request": check_serving_request,
    "mammals": check_mammals,
    "corpus-news": check_corpus_news,
    "speed": check_speed,
    "examples": check_examples,
}


# --- figure captions ---------------------------------------------------------

CAPTION = re.compile(r"^\*`(?P<command>python examples/[\w.]+\.py)`: (?P<text>.*?)\*\s*$",
                     re.M | re.S)


def readme_captions(paths=None):
    """`{command: caption text}` of the italic figure captions in `paths` (default: `documents()`)."""
    return {m["command"]: " ".join(m["text"].split())
            for path in (documents() if paths is None else paths)
            for m in CAPTION.finditer(Path(path).read_text())}


def check_mammals_caption(caption, workdir):
    """The mammal figure's caption: its share of nested direct links after
    training (whole percent, within 2 points) and at the tree-shaped start
    (within half a point), and "all N drawn is-a pairs" (exactly N of N)."""
    printed = run("python examples/wordnet_mammals.py --out runs/mammals-2d", workdir)
    print(printed)
    share = re.search(r"(\d+)% of the mammal subtree's direct links", caption)
    start = re.search(r"tree-shaped start it trains from nests (\d+\.\d+)%", caption)
    pairs = re.search(r"all (\d+) drawn is-a pairs", caption)
    assert share and pairs and start, f"caption not understood: {caption!r}"
    got_start = re.search(r"at the start: (\d+\.\d+)%", printed)
    assert got_start and abs(float(got_start[1]) - float(start[1])) <= 0.5, (
        f"caption says the start nests {start[1]}%, the example printed "
        f"{got_start and got_start[1]}%")
    got_share = re.search(r"direct links nested .*?: (\d+\.\d+)%", printed)
    got_pairs = re.search(r"^(\d+)/(\d+) drawn is-a pairs", printed, re.M)
    assert got_share and got_pairs, "the example did not print its figures"
    assert abs(float(got_share[1]) - int(share[1])) <= 2, (
        f"caption says {share[1]}% of direct links nested, the example printed {got_share[1]}%")
    assert got_pairs[1] == got_pairs[2] == pairs[1], (
        f"caption says all {pairs[1]} drawn pairs nested, the example printed "
        f"{got_pairs[1]}/{got_pairs[2]}")


CAPTIONS = {"python examples/wordnet_mammals.py": ("figure-mammals", check_mammals_caption)}


def load_average():
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", default=None, help="run only these checks")
    parser.add_argument("--skip", nargs="+", default=[], help="skip these checks")
    parser.add_argument("--workdir", default=None,
                        help="run the commands here (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    found = blocks_by_id("script")
    missing = sorted(set(found) - set(CHECKS))
    if missing:
        parser.error(f"README blocks without a check here: {', '.join(missing)}")
    if not SHARED.joinpath("data").is_dir():
        parser.error(f"the shared data is not at {SHARED / 'data'}")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="readme-check-")) / "project"
    workdir.mkdir(parents=True, exist_ok=True)
    if not (workdir.parent / "shared").exists():
        (workdir.parent / "shared").symlink_to(SHARED)
    captions = readme_captions()
    unknown = sorted(set(captions) - set(CAPTIONS))
    if unknown:
        parser.error(f"README captions without a check here: {', '.join(unknown)}")
    checks = [(c, CHECKS[c], found[c]) for c in CHECKS if c in found]
    checks += [(check_id, check, captions[command])
               for command, (check_id, check) in CAPTIONS.items() if command in captions]
    failed = []
    for check_id, check, shown in checks:
        if (args.only and check_id not in args.only) or check_id in args.skip:
            continue
        print(f"== {check_id} ({load_average()})", flush=True)
        start = time.perf_counter()
        try:
            check(shown, workdir)
            print(f"== {check_id}: ok, {time.perf_counter() - start:.0f} s", flush=True)
        except Exception as error:  # one failed check does not stop the others
            failed.append(check_id)
            print(f"== {check_id}: FAILED\n{type(error).__name__}: {error}", flush=True)
    print(f"{len(failed)} failed: {', '.join(failed)}" if failed else "all checks passed",
          f"({load_average()})")
    if not args.keep and args.workdir is None:
        shutil.rmtree(workdir.parent)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
