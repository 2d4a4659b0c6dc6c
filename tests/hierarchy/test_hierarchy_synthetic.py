"""`keras-gauss demo`: parents' ellipses contain their children's (Figure 3), checked numerically."""

import json

import numpy as np
import pytest

import keras_gauss as kg
from keras_gauss.hierarchy.synthetic import PLOT_MASS, synthetic_hierarchy, train_synthetic
from keras_gauss.plot import ellipse_inside, mass_radius


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "run"
    metrics = train_synthetic(out, verbose=0)
    return out, metrics


def test_mass_radius_holds_that_mass():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200_000, 2))
    for mass in (0.5, 0.9):
        inside = (np.square(x).sum(axis=1) <= mass_radius(mass) ** 2).mean()
        assert inside == pytest.approx(mass, abs=0.005)


def test_ellipse_inside_matches_circles():
    rng = np.random.default_rng(1)
    for _ in range(200):
        mc, mp = rng.normal(size=2), rng.normal(size=2)
        vc, vp = rng.uniform(0.05, 2.0), rng.uniform(0.05, 2.0)
        # circles: inside iff the centre distance plus the inner radius fits
        truth = np.linalg.norm(mc - mp) + 2.0 * np.sqrt(vc) <= 2.0 * np.sqrt(vp)
        assert ellipse_inside(mc, [vc, vc], mp, [vp, vp], radius=2.0) == truth


def test_children_lie_inside_their_parents(demo):
    out, metrics = demo
    run = kg.load_run(out)  # the demo writes run.json
    h = synthetic_hierarchy()
    means, variances = run.means.astype(float), run.variances.astype(float)
    assert np.allclose(variances[:, 0], variances[:, 1])  # spherical: circles
    radius = mass_radius(PLOT_MASS)
    std = np.sqrt(variances[:, 0])

    def nested(edges):
        c, p = edges[:, 0], edges[:, 1]
        gap = np.linalg.norm(means[c] - means[p], axis=1) + radius * std[c]
        return gap <= radius * std[p]

    direct, closure = nested(h.basic_edges), nested(h.edges)
    assert direct.mean() >= 0.8 and closure.mean() >= 0.8
    assert metrics["containment"] == pytest.approx(direct.mean())
    assert metrics["closure_containment"] == pytest.approx(closure.mean())
    # and never the other way round: no parent inside its child
    assert not nested(h.edges[:, ::-1]).any()
    assert metrics["edge_accuracy"] == 1.0
    assert (out / "synthetic_hierarchy.png").stat().st_size > 10_000


def test_demo_run_answers_queries(demo):
    out, metrics = demo
    run = kg.load_run(out)
    assert run.kind == "hierarchy" and run.threshold == metrics["threshold"]
    assert run.neighbors("dog", k=1)[0][0] == "mammal"
    assert run.is_a(["dog", "dog", "car"], ["mammal", "animal", "animal"]).tolist() == [
        True, True, False]
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["plot_mass"] == PLOT_MASS


def test_demo_run_holds_its_training_curves(demo):
    """The demo is a run like the others: `keras-gauss plot` reads its loss per epoch."""
    from keras_gauss.history import read_history

    out, metrics = demo
    history = read_history(out)
    assert history["epoch"] == list(range(1, 11))
    assert history["loss"][-1] == pytest.approx(metrics["final_loss"], rel=1e-4)
    assert (out / "history.png").is_file()
