"""Shared fixtures: the real WordNet hierarchy (built once per session, ~2 s),
a tree's edges file, the scripted validation score."""

import pytest

from keras_gauss.hierarchy import build_hierarchy
from scripted_selection import scripted_scorer


@pytest.fixture(scope="session")
def full():
    return build_hierarchy()


@pytest.fixture(scope="session")
def mammal():
    return build_hierarchy("mammal.n.01")


@pytest.fixture(scope="session")
def edges(tmp_path_factory):
    """An edges file of a ternary tree of 300 nodes (1,321 closure edges)."""
    path = tmp_path_factory.mktemp("tree") / "edges.tsv"
    path.write_text("".join(f"n{i}\tn{(i - 1) // 3}\n" for i in range(1, 300)))
    return path


@pytest.fixture
def scripted(monkeypatch):
    """The engines score each epoch by `scripted_selection.SCRIPTED`."""
    from keras_gauss.hierarchy import engines

    monkeypatch.setattr(engines, "validation_scorer", scripted_scorer)
