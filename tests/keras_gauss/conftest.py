"""Fixtures for the keras_gauss tests.

The test directories have no `__init__.py` (a `tests/keras_gauss` package
would shadow the library's own `keras_gauss`), so this directory is put on
`sys.path` for the shared helpers (`layer_test_case`, `recording`).
"""

import os
import sys

import keras
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def mixed_float16():
    """Runs a test under the `mixed_float16` policy and always restores it."""
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy("float32")
