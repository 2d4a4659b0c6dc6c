"""`keras_gauss.energies`: the one place per energy.

Each descriptor's code against the C++ header, its NumPy formula against
an independent computation (numerical integration or a brute-force box
check), its Keras formula and layer against the NumPy formula, the checks'
one-line errors, and that no other module of the package names an energy.
"""

import ast
import math
import re
from pathlib import Path

import numpy as np
import pytest

from keras_gauss import energies

ROOT = Path(__file__).resolve().parents[3]
FUSED = ROOT / "keras_gauss" / "fused"
NAMES = energies.names()


def _header_codes():
    """`{descriptor module: code}` read from `fused/energies.h`'s enumerators."""
    text = (FUSED / "energies.h").read_text()
    body = re.search(r"enum class Energy : int32_t \{(.*?)\};", text, re.S).group(1)
    return {f"keras_gauss.energies.{module}": int(code) for code, module in
            re.findall(r"k\w+ = (\d+),\s*// keras_gauss/energies/(\w+)\.py", body)}


def test_python_codes_are_the_header_codes():
    header = _header_codes()
    assert header == {e.numpy.__module__: e.code for e in energies.ALL}
    assert len(set(header.values())) == len(header)


def test_every_cc_file_takes_the_codes_from_the_one_header():
    includes = {path.name: set(re.findall(r'#include "(\w+\.h)"', path.read_text()))
                for path in FUSED.glob("*.[ch]*")}
    reach = {}

    def reaches(name):  # the headers `name` includes, directly or not
        if name not in reach:
            reach[name] = set()
            for header in includes.get(name, ()):
                reach[name] |= {header} | reaches(header)
        return reach[name]

    for source in FUSED.glob("*.cc"):
        assert "energies.h" in reaches(source.name), source.name
        text = source.read_text()
        # no second encoding: no enum of energies, no bare `energy == 1`
        assert not re.search(r"enum\s+\w*Energy", text), source.name
        assert not re.search(r"(energy|kind)\s*==\s*\d", text), source.name
    assert "energies.h" in (FUSED / "build.py").read_text()  # a change rebuilds


def _normal_log_pdf(x, mean, var):
    return -0.5 * (x - mean) ** 2 / var - 0.5 * np.log(2 * np.pi * var)


def _normal_pdf(x, mean, var):
    return np.exp(_normal_log_pdf(x, mean, var))


PAIRS = [([0.3, -1.0], [0.5, 2.0], [-0.4, 0.2], [2.0, 0.7]),
         ([1.5, 0.0], [1.0, 1.0], [0.0, 0.0], [4.0, 4.0]),
         ([0.0, 0.1], [0.2, 3.0], [0.0, 0.1], [0.2, 3.0])]


@pytest.mark.parametrize("pair", PAIRS)
def test_el_formula_is_the_log_of_the_integral_of_the_product(pair):
    x = np.linspace(-30, 30, 600001)
    want = sum(np.log(np.trapezoid(_normal_pdf(x, ma, va) * _normal_pdf(x, mb, vb), x))
               for ma, va, mb, vb in zip(*pair))
    assert energies.EL.numpy(*pair) == pytest.approx(want, rel=1e-7)
    assert energies.EL.numpy(*pair, include_constant=False) == pytest.approx(
        want + math.log(2 * math.pi), rel=1e-7)


@pytest.mark.parametrize("pair", PAIRS)
def test_kl_formula_is_minus_the_integral_of_p_log_p_over_q(pair):
    x = np.linspace(-30, 30, 600001)
    want = 0.0
    for ma, va, mb, vb in zip(*pair):
        log_p, log_q = _normal_log_pdf(x, ma, va), _normal_log_pdf(x, mb, vb)
        want -= np.trapezoid(np.exp(log_p) * (log_p - log_q), x)
    assert energies.KL.numpy(*pair) == pytest.approx(want, rel=1e-6, abs=1e-9)
    # the generality term: beta * (log det Sigma_b - log det Sigma_a)
    beta = 0.3
    term = beta * (np.log(pair[3]).sum() - np.log(pair[1]).sum())
    assert energies.KL.numpy(*pair, generality=beta) == pytest.approx(want + term, rel=1e-6)


def test_containment_formula_is_the_box_overhang_per_side():
    rng = np.random.default_rng(0)
    mean_a, mean_b = rng.normal(size=(2, 50, 3))
    var_a, var_b = np.exp(rng.normal(size=(2, 50, 3)))
    lo_a, hi_a = mean_a - np.sqrt(var_a), mean_a + np.sqrt(var_a)
    lo_b, hi_b = mean_b - np.sqrt(var_b), mean_b + np.sqrt(var_b)
    # how far a's box sticks out of b's, by its worse side, per dimension
    out = np.maximum(0.0, np.maximum(hi_a - hi_b, lo_b - lo_a))
    np.testing.assert_allclose(energies.CONTAINMENT.numpy(mean_a, var_a, mean_b, var_b),
                               -(out ** 2).sum(-1), rtol=1e-12, atol=1e-12)
    inside = energies.CONTAINMENT.numpy([0.5, 0.0], [1.0, 1.0], [0.0, 0.0], [4.0, 4.0])
    assert inside == 0.0


@pytest.mark.parametrize("name", NAMES)
def test_keras_formula_and_layer_equal_the_numpy_formula(name):
    import keras

    energy = energies.get(name)
    rng = np.random.default_rng(1)
    ma, mb = rng.normal(size=(2, 4, 5))
    va, vb = np.exp(rng.normal(scale=0.5, size=(2, 4, 5)))
    want = energy.numpy(ma, va, mb, vb)  # a = specific, b = general
    got = energy.keras_formula()(mb, vb, ma, va)  # general first
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), want, rtol=1e-5, atol=1e-5)
    layer_class = energy.layer_class()
    assert layer_class.energy is energy
    got = layer_class()(*(x.astype("float32") for x in (mb, vb, ma, va)))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), want, rtol=1e-5, atol=1e-5)


def test_layers_keep_their_config_keys():
    from keras_gauss.layers import ContainmentEnergy
    from keras_gauss.layers import ELEnergy
    from keras_gauss.layers import GaussianEnergy
    from keras_gauss.layers import KLEnergy

    base = {"name", "trainable", "dtype"}
    assert set(ELEnergy().get_config()) == base | {"include_constant"}
    assert set(KLEnergy().get_config()) == set(ContainmentEnergy().get_config()) == base
    revived = ELEnergy.from_config(ELEnergy(include_constant=False).get_config())
    assert revived.include_constant is False
    assert all(issubclass(e.layer_class(), GaussianEnergy) for e in energies.ALL)


def test_names_and_checks():
    assert energies.names() == ("el", "kl", "containment")
    assert energies.names(task="hierarchy") == ("kl", "containment")
    assert energies.names(task="corpus") == ("el", "kl")
    assert energies.names(engine="kernels") == ("el", "kl")
    assert energies.get(energies.KL) is energies.KL
    with pytest.raises(ValueError) as error:
        energies.get("el", task="hierarchy", setting="--energy")
    assert str(error.value) == "--energy must be one of kl, containment, got 'el'."
    with pytest.raises(ValueError, match="`energy` must be one of kl, containment, got 'el'"):
        energies.get("el", engine="scores", setting="`energy`")


def test_loss_defaults_keep_their_values():
    assert dict(energies.KL.loss_defaults) == {"loss": "ranking", "margin": 1.0, "negatives": 5,
                                               "reversed_negatives": True}
    assert dict(energies.CONTAINMENT.loss_defaults) == {
        "loss": "threshold", "margin": 0.25, "negatives": 10, "reversed_negatives": False}


def _files_naming_an_energy():
    """`{file: [line, ...]}` of the package's modules (the energies left out)
    holding an energy's name as a string constant."""
    found = {}
    for folder in ("keras_gauss", "hierarchy", "pipelines"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "energies" in path.relative_to(ROOT).parts:
                continue
            lines = [node.lineno for node in ast.walk(ast.parse(path.read_text()))
                     if isinstance(node, ast.Constant) and node.value in NAMES]
            if lines:
                found[str(path.relative_to(ROOT))] = lines
    return found


def test_the_other_modules_ask_the_energies_instead_of_naming_them():
    # hierarchy/synthetic.py and hierarchy/cli.py: the demo's "containment"
    # metric (the share of nested ellipses), not an energy.
    assert set(_files_naming_an_energy()) <= {"hierarchy/synthetic.py", "hierarchy/cli.py"}
