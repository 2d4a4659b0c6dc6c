"""How the four inputs of an energy pair up as the kernels' `(n, k)` grid."""

from typing import NamedTuple


class Grid(NamedTuple):
    """Inputs shaped `(*lead, k_a, d)` and `(*lead, k_b, d)` (variances with
    1 or `d` columns), `k_a` and `k_b` equal or one of them 1 (`None`:
    unknown until run time; the kernel checks)."""

    lead: tuple
    k_a: object
    k_b: object
    d: int

    @property
    def k(self):
        """The static number of candidates per row of the output, or None."""
        return self.k_b if self.k_a == 1 else self.k_a


def pair_grid(mean_a, var_a, mean_b, var_b):
    """The `Grid` of four static shapes (tuples, `None` for unknown), or None
    when the kernels do not cover them (the reference ops do).

    Example:

    >>> pair_grid((None, 1, 50), (None, 1, 50), (None, 6, 50), (None, 6, 50))
    Grid(lead=(None,), k_a=1, k_b=6, d=50)
    """
    shapes = [tuple(s) for s in (mean_a, var_a, mean_b, var_b)]
    rank = len(shapes[0])
    if rank < 1 or any(len(s) != rank for s in shapes):
        return None
    d = shapes[0][-1]
    if not isinstance(d, int) or d < 1 or shapes[2][-1] != d:
        return None
    if shapes[1][-1] not in (1, d) or shapes[3][-1] not in (1, d):
        return None
    if shapes[1][:-1] != shapes[0][:-1] or shapes[3][:-1] != shapes[2][:-1]:
        return None
    if rank == 1:
        return Grid((), 1, 1, d)
    lead_a, lead_b = shapes[0][:-2], shapes[2][:-2]
    if lead_a != lead_b:
        return None
    k_a, k_b = shapes[0][-2], shapes[2][-2]
    if k_a != k_b and 1 not in (k_a, k_b):
        return None
    return Grid(lead_a, k_a, k_b, d)
