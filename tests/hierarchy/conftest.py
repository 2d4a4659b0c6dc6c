"""Shared fixtures: the real WordNet hierarchy (built once per session, ~2 s)."""

import pytest

from keras_gauss.hierarchy import build_hierarchy


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
