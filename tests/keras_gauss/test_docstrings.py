"""Every `>>>` example in the docstrings of `keras_gauss`, `keras_gauss.hierarchy`
and `keras_gauss.pipelines` runs and prints what it shows.

The modules are found by walking the source folders (`keras_gauss/`,
`hierarchy/`, `pipelines/`), so a new module is covered without a list to
update. Each module's examples run with `doctest` (ELLIPSIS and
NORMALIZE_WHITESPACE) in a fresh temporary directory, so an example may
write relative paths. A failure names the module, the example and its line.
"""

import doctest
import importlib
import io
from pathlib import Path

import keras
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
# source folder -> installed package name
PACKAGES = {"keras_gauss": "keras_gauss", "hierarchy": "keras_gauss.hierarchy",
            "pipelines": "keras_gauss.pipelines"}
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def module_names():
    """The importable name of every `.py` file under the three source folders."""
    names = []
    for folder, package in PACKAGES.items():
        base = ROOT / folder
        for path in sorted(base.rglob("*.py")):
            parts = path.relative_to(base).with_suffix("").parts
            if any(not (base.joinpath(*parts[:i]) / "__init__.py").exists()
                   for i in range(1, len(parts))):
                continue  # a folder that is not a package
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names.append(".".join((package, *parts)))
    return names


MODULES = module_names()


def test_the_walk_finds_the_subpackages():
    assert "keras_gauss.runs" in MODULES
    assert "keras_gauss.layers.el_energy" in MODULES
    assert "keras_gauss.hierarchy.closure" in MODULES
    assert "keras_gauss.pipelines.native_corpus" in MODULES


def run_examples(name):
    """Runs one module's doctests; returns `(failure reports, attempted)`."""
    module = importlib.import_module(name)
    try:
        tests = doctest.DocTestFinder(exclude_empty=True).find(module, name)
    except ValueError as error:  # a docstring that does not parse as a doctest
        return [f"{name}: {error}"], 0
    failures, attempted = [], 0
    for test in sorted(tests, key=lambda t: t.name):
        keras.utils.set_random_seed(0)
        np.random.seed(0)
        out = io.StringIO()
        runner = doctest.DocTestRunner(optionflags=FLAGS)
        result = runner.run(test, out=out.write, clear_globs=True)
        attempted += result.attempted
        if result.failed:
            failures.append(f"{test.name} ({result.failed} of {result.attempted} "
                            f"examples failed):\n{out.getvalue()}")
    return failures, attempted


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    failures, _ = run_examples(name)
    assert not failures, "\n".join(failures)
