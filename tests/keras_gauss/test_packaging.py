"""The wheel installs one top-level name, `keras_gauss`, with every subpackage."""

import os
import pathlib
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(ROOT)],
        check=True, capture_output=True, text=True,
    )
    (path,) = out.glob("keras_gauss-*.whl")
    with zipfile.ZipFile(path) as archive:
        return archive.namelist()


def test_only_top_level_name_is_keras_gauss(wheel):
    top = {name.split("/")[0] for name in wheel if not name.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"keras_gauss"}


def test_source_folders_install_under_keras_gauss(wheel):
    expected = set()
    for folder, package in [("keras_gauss", "keras_gauss"), ("hierarchy", "keras_gauss/hierarchy"),
                            ("pipelines", "keras_gauss/pipelines")]:
        for source in (ROOT / folder).rglob("*.py"):
            if "__pycache__" in source.parts:
                continue
            expected.add(f"{package}/{source.relative_to(ROOT / folder).as_posix()}")
    assert expected <= set(wheel), sorted(expected - set(wheel))


def test_import_names_resolve_to_the_source_folders():
    code = ("import keras_gauss.hierarchy as h, keras_gauss.pipelines as p, sys;"
            "print(h.__file__); print(p.__file__);"
            "print('tensorflow' in sys.modules, 'hierarchy' in sys.modules, 'pipelines' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd="/").stdout.split("\n")
    assert pathlib.Path(out[0]) == ROOT / "hierarchy" / "__init__.py"
    assert pathlib.Path(out[1]) == ROOT / "pipelines" / "__init__.py"
    assert out[2] == "False False False"


@pytest.mark.parametrize("given, expected", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_import_makes_openmp_threads_wait_passively_unless_told(given, expected):
    # torch's OpenMP threads spinning on a shared CPU: 30x slower steps
    # (keras_gauss/__init__.py); a user's own setting is kept.
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    code = "import keras_gauss, os, sys; print(os.environ['OMP_WAIT_POLICY'], 'keras' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd="/", env=env).stdout.split()
    assert out == [expected, "False"]
