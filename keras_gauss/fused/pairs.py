"""The native trainer of ranked pairs on one table, without TensorFlow: `pairs.cc` through ctypes.

`NativePairTable` holds one table of Gaussians (means, variances and their
SparseAdagrad accumulators, NumPy float32 arrays) and trains it as the
compiled hierarchy model does (`keras_gauss.hierarchy.model.build_kl_model`
with `MaxMarginRanking` or `ThresholdedDivergence` and `SparseAdagrad`): a
step scores each positive `(specific, general)` pair and its `k` negatives
on the current table, averages the loss over the batch, sums the gradients
per row and updates the touched rows with AdaGrad and the table's bounds.
`train_batch` takes the batch; `train_steps` draws it: an epoch's order
(`order`) and each step's negatives (`draw_negatives`, the rule of
`keras_gauss.hierarchy.negatives.sample_negatives`: one side replaced by a
uniform node unrelated to the kept one) from the seed, the epoch and the
step, in C++ (a second thread draws the next step's negatives while a step
trains; the results are the same).

Example: two steps on a chain `2 is-a 1 is-a 0` and a fourth, unrelated node.

>>> related = RelatedNodes.from_lists([[], [0], [0, 1], []])  # ancestors of each node
>>> table = NativePairTable.initial(4, 3, seed=0, learning_rate=0.1)
>>> edges = np.array([[1, 0], [2, 1], [2, 0]], np.int32)
>>> loss = table.train_steps(related, edges, seed=0, epoch=0, batch_size=2, negatives=2,
...                          first=0, last=2)
>>> table.means.shape, loss > 0
((4, 3), True)
"""

import ctypes

import numpy as np

from keras_gauss import energies

from keras_gauss.fused import build as _build
from keras_gauss.optimizers.adagrad_floor import EPSILON
from keras_gauss.optimizers.adagrad_floor import INITIAL_ACCUMULATOR

_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_ERROR = [ctypes.c_char_p, _I64]
# nodes, ancestors, descendants (CSR), free, the direct links' parents and
# children (CSR; null without siblings), the fraction of sibling negatives
_RELATED = [_I64, _P, _P, _P, _P, _P, _P, _P, _P, _P, ctypes.c_double]
_SIGNATURES = {
    "kg_pairs_version": ([], ctypes.c_int),
    "kg_pairs_order": ([_I64, ctypes.c_uint64, _I64, _P], None),
    "kg_pairs_contains": ([_I64, _P, _P, _P, _P, _I64, ctypes.c_int, _P], None),
    "kg_pairs_negatives": (_RELATED + [_P, _P, _I64, _I64, ctypes.c_int, ctypes.c_uint64,
                                       _I64, _I64, _P, _P] + _ERROR, ctypes.c_int),
    "kg_pairs_train_batch": ([_P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _I64, _I64, _I64,
                              ctypes.POINTER(ctypes.c_double)] + _ERROR, ctypes.c_int),
    "kg_pairs_train_steps": ([_P, _P, _P, _P, _P, _P] + _RELATED
                             + [_P, _I64, _P, _I64, _I64, ctypes.c_int, ctypes.c_uint64, _I64,
                                _I64, _I64, _I64, ctypes.POINTER(ctypes.c_double)] + _ERROR,
                             ctypes.c_int),
}
LOSSES = ("ranking", "threshold")
SCHEDULES = ("constant", "linear", "cosine")


def _library():
    return _build.native_functions("kg_pairs", _SIGNATURES, version=3)


def _ids(value):
    return np.ascontiguousarray(value, np.int32)


class RelatedNodes:
    """The ancestors and descendants of every node (sorted CSR lists), which
    the negatives avoid, and optionally the direct links that sibling
    negatives follow.

    Args:
        ancestor_ptr, ancestors: node `i`'s ancestors are
            `ancestors[ancestor_ptr[i]:ancestor_ptr[i + 1]]`, sorted.
        descendant_ptr, descendants: its descendants, likewise.
        direct: `(parent_ptr, parents, child_ptr, children)`, the direct
            links (transitive reduction) in the same form
            (`EdgeIndex(transitive_reduction(index), n).csr()`), or None
            (default: no sibling negatives).
        siblings: the fraction (0 to 1) of negatives drawn as siblings
            (`keras_gauss.hierarchy.negatives.sibling_negatives`'s rule;
            default 0), with `direct`.

    Example:

    >>> related = RelatedNodes.from_lists([[], [0], [0]])  # 1 and 2 below 0
    >>> related.free.tolist()  # nodes unrelated to each: none, then each other
    [0, 1, 1]
    """

    def __init__(self, ancestor_ptr, ancestors, descendant_ptr, descendants, direct=None,
                 siblings=0.0):
        self.ancestor_ptr = np.ascontiguousarray(ancestor_ptr, np.int64)
        self.ancestors = _ids(ancestors)
        self.descendant_ptr = np.ascontiguousarray(descendant_ptr, np.int64)
        self.descendants = _ids(descendants)
        self.nodes = len(self.ancestor_ptr) - 1
        self.free = (self.nodes - 1 - np.diff(self.ancestor_ptr)
                     - np.diff(self.descendant_ptr)).astype(np.int64)
        if not 0 <= siblings <= 1:
            raise ValueError(f"siblings must lie in [0, 1], got {siblings}")
        if siblings > 0 and direct is None:
            raise ValueError("sibling negatives need the direct links (direct=)")
        self.siblings = float(siblings) if direct is not None else 0.0
        self.direct = None
        if direct is not None:
            parent_ptr, parents, child_ptr, children = direct
            self.direct = (np.ascontiguousarray(parent_ptr, np.int64), _ids(parents),
                           np.ascontiguousarray(child_ptr, np.int64), _ids(children))
            if any(len(ptr) != self.nodes + 1 for ptr in self.direct[::2]):
                raise ValueError(f"direct links: pointers of {self.nodes} nodes expected")

    @classmethod
    def from_lists(cls, ancestors):
        """From every node's list of all its ancestors (a transitive closure)."""
        nodes = len(ancestors)
        pairs = sorted((c, a) for c, anc in enumerate(ancestors) for a in anc)
        child = np.array([c for c, _ in pairs], np.int64)
        parent = np.array([a for _, a in pairs], np.int64)
        bounds = np.arange(nodes + 1)
        order = np.lexsort((child, parent))
        return cls(np.searchsorted(child, bounds), parent,
                   np.searchsorted(parent[order], bounds), child[order])

    def _arguments(self):
        direct = (None,) * 4 if self.direct is None else tuple(a.ctypes.data for a in self.direct)
        return (self.nodes, self.ancestor_ptr.ctypes.data, self.ancestors.ctypes.data,
                self.descendant_ptr.ctypes.data, self.descendants.ctypes.data,
                self.free.ctypes.data, *direct, self.siblings)


def contains(ancestor_ptr, ancestors, a, b, either=False):
    """Edge lookups in sorted lists (`EdgeIndex.contains` and `related`):
    is `b[i]` in `a[i]`'s list `ancestors[ancestor_ptr[a]:ancestor_ptr[a + 1]]`
    (with `either`: or `a[i] == b[i]`, or `a[i]` in `b[i]`'s list)? Ids
    outside the lists' nodes have none.

    Returns:
        A bool array of `a`'s shape (`a` and `b` broadcast).

    Example:

    >>> contains(np.array([0, 0, 1]), np.array([0]), [1, 0, 0], [0, 1, 0]).tolist()
    [True, False, False]
    >>> contains(np.array([0, 0, 1]), np.array([0]), [1, 0, 0], [0, 1, 0], either=True).tolist()
    [True, True, True]
    """
    ancestor_ptr = np.ascontiguousarray(ancestor_ptr, np.int64)
    ancestors = _ids(ancestors)
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    shape, a, b = a.shape, np.ascontiguousarray(a).ravel(), np.ascontiguousarray(b).ravel()
    out = np.empty(a.shape, np.bool_)
    _library().kg_pairs_contains(len(ancestor_ptr) - 1, ancestor_ptr.ctypes.data,
                                 ancestors.ctypes.data, a.ctypes.data, b.ctypes.data, len(a),
                                 int(bool(either)), out.ctypes.data)
    return out.reshape(shape)


def order(edges, seed, epoch):
    """Epoch `epoch`'s order of `edges` training edges (an int64 permutation
    of `range(edges)`), a function of the seed and the epoch.

    Example:

    >>> sorted(order(5, seed=0, epoch=1).tolist())
    [0, 1, 2, 3, 4]
    """
    result = np.empty(int(edges), np.int64)
    _library().kg_pairs_order(int(edges), int(seed) & (2**64 - 1), int(epoch),
                              result.ctypes.data)
    return result


def draw_negatives(related, specific, general, negatives, seed, epoch, step,
                   reversed_negatives=False):
    """The negatives of step `step` of epoch `epoch` as `train_steps` draws
    them: `negatives` a positive, each with one side replaced by a node
    unrelated to the kept one (the general side when the specific one cannot
    be replaced, and the reverse), and with `reversed_negatives` the reversed
    positive last.

    Returns:
        `(neg_specific, neg_general)`, int32 `(n, negatives + reversed)`.

    Raises:
        ValueError: a positive both of whose nodes are related to every node.

    Example:

    >>> related = RelatedNodes.from_lists([[], [0], [0], []])
    >>> s, g = draw_negatives(related, [1], [0], 3, seed=0, epoch=0, step=0)
    >>> sorted(set(np.where(s == 1, g, s)[0].tolist()))  # 2 and 3: unrelated to 1 or 0
    [2, 3]
    """
    specific, general = _ids(specific), _ids(general)
    width = int(negatives) + int(bool(reversed_negatives))
    neg_s = np.empty((len(specific), width), np.int32)
    neg_g = np.empty((len(specific), width), np.int32)
    error = ctypes.create_string_buffer(512)
    if _library().kg_pairs_negatives(*related._arguments(), specific.ctypes.data,
                                     general.ctypes.data, len(specific), int(negatives),
                                     int(bool(reversed_negatives)), int(seed) & (2**64 - 1),
                                     int(epoch), int(step), neg_s.ctypes.data,
                                     neg_g.ctypes.data, error, len(error)):
        raise ValueError(error.value.decode())
    return neg_s, neg_g


def uniform_means(rows, dim, seed=0, max_norm=0.0, mean_range=0.05):
    """Means uniform in +-`mean_range` from NumPy's generator seeded by
    `seed` (or from `seed`, a `np.random.Generator`, which it advances),
    projected into `max_norm` (0: no bound): the uniform start of
    `NativePairTable.initial` and of the hierarchy's keras engine, the same
    numbers on every backend (Keras's seeded initializer draws other numbers
    on TensorFlow, JAX and torch).

    Example:

    >>> means = uniform_means(4, 3, seed=0, max_norm=0.01)
    >>> means.shape, bool((np.linalg.norm(means, axis=1) <= 0.01 + 1e-9).all())
    ((4, 3), True)
    """
    means = np.random.default_rng(seed).uniform(-mean_range, mean_range, (rows, dim))
    if max_norm > 0:
        norms = np.linalg.norm(means, axis=1, keepdims=True)
        means = means * np.minimum(1.0, max_norm / np.maximum(norms, 1e-30))
    return means


class NativePairTable:
    """One table of Gaussians trained on ranked pairs (see the module docstring).

    Args:
        rows: the table's rows (nodes).
        dim: the dimension `d`.
        spherical: one variance a row instead of `d`.
        energy: an energy of `keras_gauss.energies` the native hierarchy
            trainer runs (KL, default, or containment).
        loss: `"ranking"` (`MaxMarginRanking(margin)`) or `"threshold"`
            (`ThresholdedDivergence(threshold, margin)`).
        margin, threshold: the loss's settings.
        learning_rate: SparseAdagrad's learning rate (its first step's).
        schedule: `"constant"`, `"linear"` or `"cosine"` decay to 0 over
            `total_steps` optimizer steps (`keras_gauss.hierarchy.config
            .learning_rate_schedule`).
        max_norm, min_variance, max_variance: the table's bounds.
        epsilon: SparseAdagrad's epsilon.

    Attributes:
        means, variances, mean_accumulator, variance_accumulator: the
            float32 arrays trained in place, `(rows, d)` and `(rows, dv)`.
    """

    def __init__(self, rows, dim, spherical=False, energy=energies.KL.name, loss="ranking", margin=1.0,
                 threshold=0.0, learning_rate=0.1, schedule="constant", total_steps=1,
                 max_norm=None, min_variance=None, max_variance=None, epsilon=EPSILON):
        energy = energies.get(energy, engine="native-hierarchy", setting="`energy`")
        if loss not in LOSSES or schedule not in SCHEDULES:
            raise ValueError(f"unknown loss {loss!r} or schedule {schedule!r}")
        self.rows, self.dim, self.spherical = int(rows), int(dim), bool(spherical)
        self.dv = 1 if spherical else self.dim
        inf = float("inf")
        self._floats = np.array([learning_rate, epsilon, margin, threshold, max_norm or 0.0,
                                 -inf if min_variance is None else min_variance,
                                 inf if max_variance is None else max_variance], np.float64)
        self._ints = np.array([self.rows, self.dim, int(self.spherical), energy.code,
                               LOSSES.index(loss), SCHEDULES.index(schedule),
                               max(int(total_steps), 1)], np.int64)
        self.means = np.zeros((self.rows, self.dim), np.float32)
        self.variances = np.ones((self.rows, self.dv), np.float32)
        self.mean_accumulator = np.zeros((self.rows, self.dim), np.float32)
        self.variance_accumulator = np.zeros((self.rows, self.dv), np.float32)

    @classmethod
    def initial(cls, rows, dim, seed=0, mean_range=0.05,
                initial_accumulator=INITIAL_ACCUMULATOR, **kwargs):
        """A table as `GaussianEmbedding` starts (NumPy's generator: not the
        Keras initialiser's numbers): means uniform in +-`mean_range` within
        the max norm, variances 1 (within their bounds), accumulators
        SparseAdagrad's `initial_accumulator_value`."""
        table = cls(rows, dim, **kwargs)
        table.means[...] = uniform_means(table.rows, table.dim, seed, table._floats[4],
                                         mean_range)
        table.variances[...] = np.clip(1.0, table._floats[5], table._floats[6])
        table.mean_accumulator[...] = initial_accumulator
        table.variance_accumulator[...] = initial_accumulator
        return table

    def arrays(self):
        """The four arrays, in the order `set_arrays` takes them."""
        return [self.means, self.variances, self.mean_accumulator, self.variance_accumulator]

    def set_arrays(self, arrays):
        """Copies four arrays (means, variances, their accumulators) in."""
        for target, value in zip(self.arrays(), arrays):
            target[...] = np.asarray(value, np.float32).reshape(target.shape)

    def _tables(self):
        return (self.means.ctypes.data, self.variances.ctypes.data,
                self.mean_accumulator.ctypes.data, self.variance_accumulator.ctypes.data,
                self._floats.ctypes.data, self._ints.ctypes.data)

    def train_batch(self, specific, general, neg_specific, neg_general, iteration=0):
        """One step on a batch: `(n,)` positives, `(n, k)` negatives;
        `iteration`: the optimizer's step (a schedule's rate). Returns the
        batch's mean loss (as `model.train_on_batch`)."""
        specific, general = _ids(specific), _ids(general)
        neg_s, neg_g = _ids(neg_specific), _ids(neg_general)
        n = len(specific)
        if general.shape != (n,) or neg_s.ndim != 2 or neg_s.shape != neg_g.shape \
                or len(neg_s) != n:
            raise ValueError("positives must be (n,) and negatives (n, k) ids.")
        loss = ctypes.c_double()
        error = ctypes.create_string_buffer(512)
        if _library().kg_pairs_train_batch(*self._tables(), specific.ctypes.data,
                                           general.ctypes.data, neg_s.ctypes.data,
                                           neg_g.ctypes.data, n, neg_s.shape[1],
                                           int(iteration), ctypes.byref(loss), error,
                                           len(error)):
            raise ValueError(f"native train_batch: {error.value.decode()}")
        return loss.value

    def train_steps(self, related, edges, seed, epoch, batch_size, negatives,
                    reversed_negatives=False, first=0, last=None, iteration=0,
                    edge_order=None):
        """Steps `[first, last)` of epoch `epoch` over `edges` (`(n, 2)`
        `(specific, general)` ids): batch `t` is `edges[order[t * batch_size:
        ...]]` with the negatives `draw_negatives(..., step=t)`, trained
        with optimizer step `iteration + t - first`.

        Args:
            related: the `RelatedNodes` the negatives avoid.
            edge_order: `order(len(edges), seed, epoch)`, if already computed.

        Returns:
            The summed loss of the edges trained (each edge's loss summed over
            its list, as the losses' per-example values).
        """
        edges = _ids(edges).reshape(-1, 2)
        if len(edges) and (edges.min() < 0 or edges.max() >= self.rows):
            raise ValueError(f"edge ids must lie in [0, {self.rows})")
        if related.nodes != self.rows:
            raise ValueError(f"related nodes: {related.nodes}, table rows: {self.rows}")
        steps = -(-len(edges) // int(batch_size))
        last = steps if last is None else min(int(last), steps)
        if edge_order is None:
            edge_order = order(len(edges), seed, epoch)
        loss = ctypes.c_double()
        error = ctypes.create_string_buffer(512)
        if _library().kg_pairs_train_steps(
                *self._tables(), *related._arguments(), edges.ctypes.data, len(edges),
                edge_order.ctypes.data, int(batch_size), int(negatives),
                int(bool(reversed_negatives)), int(seed) & (2**64 - 1), int(epoch), int(first),
                last, int(iteration), ctypes.byref(loss), error, len(error)):
            raise ValueError(error.value.decode())
        return loss.value
