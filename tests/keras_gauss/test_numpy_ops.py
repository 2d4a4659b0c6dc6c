"""`keras_gauss.numpy_ops`, the NumPy energies of the run queries: against
numerical integration and hand-computed orders."""

import numpy as np
import pytest

from keras_gauss.numpy_ops import containment_rank
from keras_gauss.numpy_ops import pair_energy


def test_el_energy_formula():
    """EL: log of the integral of N_a N_b (1-d, numerically)."""
    x = np.linspace(-20, 20, 400001)
    pa = np.exp(-0.5 * (x - 0.3) ** 2 / 0.5) / np.sqrt(2 * np.pi * 0.5)
    pb = np.exp(-0.5 * (x + 0.4) ** 2 / 2.0) / np.sqrt(2 * np.pi * 2.0)
    assert pair_energy("el", [0.3], [0.5], [-0.4], [2.0]) == pytest.approx(
        np.log(np.trapezoid(pa * pb, x)), rel=1e-7)


def test_containment_rank_puts_holders_first_smallest_first():
    # Energies at or above the threshold hold the query: ranked before the
    # others, the smallest box (log det) first; the others keep their energy.
    np.testing.assert_array_equal(
        containment_rank(np.array([0.0, -1e-3, -2.0]), np.array([30.0, 11.0, 5.0]), -0.1),
        [1e6 - 30.0, 1e6 - 11.0, -2.0])
