"""Shared fixtures: the real WordNet hierarchy (built once per session, ~2 s)."""

import pytest

from keras_gauss.hierarchy import build_hierarchy


@pytest.fixture(scope="session")
def full():
    return build_hierarchy()


@pytest.fixture(scope="session")
def mammal():
    return build_hierarchy("mammal.n.01")
