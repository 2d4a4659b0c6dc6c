"""Batches of positive edges with sampled negatives, for `model.fit`: a
`tf.data` pipeline (`make_dataset`) or, without TensorFlow, a
`keras.utils.PyDataset` of one epoch (`EdgeBatches`); `epoch_batches`
picks the one for the backend. Both serve the same batches, drawn by
`draw_epoch`."""

from __future__ import annotations

import copy
import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import keras
import numpy as np

from .closure import EdgeIndex, Hierarchy, transitive_reduction
from .negatives import sample_negatives
from .negatives import sibling_negatives as draw_siblings

__all__ = ["EdgeBatches", "EpochDraws", "draw_epoch", "epoch_batches", "make_dataset",
           "sample_negatives"]


def _sampler(data, known, sibling_negatives):
    """`(edges, index, direct)`: the int32 edges of `data`, the `EdgeIndex`
    the sampler rejects negatives with and, for sibling negatives, the
    direct links of it (else None); one clear error for bad settings."""
    if isinstance(data, Hierarchy):
        edges = data.edges
        known = data if known is None else known
    else:
        edges = np.asarray(data, dtype=np.int32).reshape(-1, 2)
        if known is None:
            known = EdgeIndex(edges, int(edges.max()) + 1 if len(edges) else 0)
    if not len(edges):
        raise ValueError("no edges to train on")
    if not 0.0 <= sibling_negatives <= 1.0:
        raise ValueError(f"sibling_negatives must lie in [0, 1], got {sibling_negatives}")
    index = known.index if isinstance(known, Hierarchy) else known
    direct = None
    if sibling_negatives > 0:  # direct links of what the sampler knows, once
        direct = EdgeIndex(transitive_reduction(index), index.num_nodes)
    return np.asarray(edges, dtype=np.int32), index, direct


def draw_epoch(edges, index, rng, *, negatives=1, reversed_negatives=False,
               sibling_negatives=0.0, direct=None, corrupt="either", shuffle=True):
    """One pass's positives and negatives, drawn from `rng` in one vectorised
    call each: `(pos, neg_specific, neg_general)`, `(n, 2)` and `(n, K)` int32.

    Args:
        edges: `(n, 2)` int32 `(specific, general)` edges.
        index: the `EdgeIndex` negatives must avoid (`make_dataset`'s `known`).
        rng: the pass's `np.random.Generator` (`default_rng([seed, pass])`).
        negatives, reversed_negatives, sibling_negatives, corrupt, shuffle:
            as for `make_dataset` (defaults 1, False, 0.0, "either", True).
        direct: the direct links of `index` (an `EdgeIndex`), needed when
            `sibling_negatives > 0`.

    Example:

    >>> from keras_gauss.hierarchy import hierarchy_from_parents
    >>> h = hierarchy_from_parents({"dog": ["mammal"], "cat": ["mammal"], "mammal": [], "rock": []})
    >>> pos, neg_s, neg_g = draw_epoch(h.edges, h.index, np.random.default_rng([0, 0]))
    >>> pos.shape, neg_s.shape, neg_g.dtype
    ((2, 2), (2, 1), dtype('int32'))
    """
    pos = edges[rng.permutation(len(edges))] if shuffle else edges
    neg_s, neg_g = sample_negatives(pos, index, negatives, corrupt=corrupt, rng=rng)
    if direct is not None:
        sib_s, sib_g, found = draw_siblings(pos, index, negatives, direct=direct, rng=rng)
        hard = found & (rng.random(found.shape) < sibling_negatives)
        neg_s, neg_g = np.where(hard, sib_s, neg_s), np.where(hard, sib_g, neg_g)
    if reversed_negatives:
        neg_s = np.concatenate([neg_s, pos[:, 1:]], axis=1)
        neg_g = np.concatenate([neg_g, pos[:, :1]], axis=1)
    return pos, neg_s, neg_g


def _num_batches(num_edges, batch_size, drop_remainder):
    """Batches of a pass; one clear error for a bad `batch_size`."""
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    return num_edges // batch_size if drop_remainder else -(-num_edges // batch_size)


def _batch(drawn, labels, batch_size, i):
    """Batch `i` of a pass `drawn` (`draw_epoch`): `(x, y)` of NumPy arrays."""
    pos, neg_s, neg_g = drawn
    start = i * batch_size
    end = min(start + batch_size, len(pos))
    x = {"specific": pos[start:end, 0], "general": pos[start:end, 1],
         "neg_specific": neg_s[start:end], "neg_general": neg_g[start:end]}
    return x, labels[: end - start]


def _labels(batch_size, k):
    labels = np.zeros((batch_size, 1 + k), dtype=np.float32)
    labels[:, 0] = 1.0
    return labels


def make_dataset(
    data: Hierarchy | np.ndarray,
    *,
    known: Hierarchy | EdgeIndex | None = None,
    batch_size: int = 1024,
    negatives: int = 1,
    reversed_negatives: bool = False,
    sibling_negatives: float = 0.0,
    corrupt: str = "either",
    shuffle: bool = True,
    drop_remainder: bool = False,
    seed: int = 0,
    first_pass: int = 0,
) -> tf.data.Dataset:  # noqa: F821 - TensorFlow is imported when called
    """Batches of positive `(specific, general)` edges, each with `k` negatives.

    Every pass over the dataset (one epoch) shuffles the edges and draws fresh
    negatives with `keras_gauss.hierarchy.negatives.sample_negatives` in one vectorised
    call (`draw_epoch`): one side of the edge is replaced by a random node that is neither an
    ancestor nor a descendant of the kept node (nor the node itself), as in
    Vilnis & McCallum (2015). Pass `i` (counting from 0) of the dataset uses the
    random stream `np.random.default_rng([seed, i])`, so runs are reproducible.
    Without TensorFlow (JAX, torch), `EdgeBatches` serves the same batches.

    Args:
        data: A `keras_gauss.hierarchy.closure.Hierarchy` (all its closure edges) or an
            `(n, 2)` int array of `(specific, general)` edges, e.g. `split.train`.
        known: What the sampler may know, to reject negatives that are true
            edges. Defaults to `data` itself. For a split's training edges pass
            `split.train_index` (the closure of the training edges, with the
            hierarchy's node count), never the full `Hierarchy`: that
            would steer negatives away from the held-out edges.
        batch_size: Positive edges per batch.
        negatives: Corrupted edges `k` per positive.
        reversed_negatives: Also use the reversed pair (general as specific,
            specific as general) as one extra, last negative.
        sibling_negatives: Fraction (0 to 1) of the `negatives` that are hard:
            the general node replaced by a sibling of it in `known` (another
            child of one of its direct parents, unrelated to the specific node;
            `keras_gauss.hierarchy.negatives.sibling_negatives`). Each
            negative is hard with this probability when its edge has such a
            sibling, else stays random. 0 (default) draws exactly as before.
        corrupt: Side to replace: `"either"` (coin flip), `"specific"` or `"general"`.
        shuffle: Shuffle the edges each epoch.
        drop_remainder: Drop the last, smaller batch.
        seed: Seed of shuffling and sampling.
        first_pass: Number of the first pass (the first iteration uses the
            stream `[seed, first_pass]`): a dataset per epoch, as a resumed
            run needs, passes the epoch.

    Returns:
        A `tf.data.Dataset` of `(x, y)` with `K = negatives + reversed_negatives`:
        ``x = {"specific": (b,), "general": (b,), "neg_specific": (b, K),
        "neg_general": (b, K)}`` (int32 node ids) and ranking labels
        `y` float32 `(b, 1 + K)` equal to `[1, 0, ..., 0]` (positive first);
        tf.data's autotuner off (`keras_gauss.tf_data`).

    Example:
        >>> from keras_gauss.hierarchy.closure import build_hierarchy
        >>> ds = make_dataset(build_hierarchy("mammal.n.01"), batch_size=32, negatives=2)
        >>> x, y = next(iter(ds))
        >>> x["neg_general"].shape, y[0].numpy().tolist()
        (TensorShape([32, 2]), [1.0, 0.0, 0.0])
    """
    import tensorflow as tf

    from keras_gauss.tf_data import without_autotune

    edges, index, direct = _sampler(data, known, sibling_negatives)
    num_batches = _num_batches(len(edges), batch_size, drop_remainder)
    k = negatives + int(reversed_negatives)
    labels = _labels(batch_size, k)
    passes = itertools.count(first_pass)

    def epoch():
        drawn = draw_epoch(edges, index, np.random.default_rng([seed, next(passes)]),
                           negatives=negatives, reversed_negatives=reversed_negatives,
                           sibling_negatives=sibling_negatives, direct=direct,
                           corrupt=corrupt, shuffle=shuffle)
        for i in range(num_batches):
            yield _batch(drawn, labels, batch_size, i)

    ids = tf.TensorSpec((None,), tf.int32)
    negs = tf.TensorSpec((None, k), tf.int32)
    signature = (
        {"specific": ids, "general": ids, "neg_specific": negs, "neg_general": negs},
        tf.TensorSpec((None, 1 + k), tf.float32),
    )
    dataset = tf.data.Dataset.from_generator(epoch, output_signature=signature)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(num_batches))
    return without_autotune(dataset.prefetch(tf.data.AUTOTUNE))


def _ahead():
    """Passes `EpochDraws` draws ahead by default: one thread a spare core, at most 4."""
    return max(1, min(4, (os.cpu_count() or 2) - 1))


class EpochDraws:
    """The passes of `draw_epoch` over one run's edges, each from its own
    stream `[seed, pass]` (so the same arrays however and whenever drawn),
    the next `ahead` passes drawn in background threads while the current
    one trains: on a GPU the host's drawing (seconds a pass of WordNet) no
    longer waits in line with the steps. `EdgeBatches` reads its pass from
    one (its own, drawing on demand, unless given); `close()` drops the
    passes not asked for.

    Args:
        data, known, negatives, reversed_negatives, sibling_negatives,
            corrupt, shuffle, seed: as for `make_dataset`.
        ahead: passes drawn ahead (default: the cores but one, 1 to 4; 0:
            each pass drawn when asked for, no threads).
        passes: the run's passes: none at or after it is drawn ahead
            (default: no end).

    Example:

    >>> from keras_gauss.hierarchy import hierarchy_from_parents
    >>> h = hierarchy_from_parents({"dog": ["mammal"], "cat": ["mammal"], "mammal": [], "rock": []})
    >>> draws = EpochDraws(h, negatives=2, ahead=1)
    >>> pos, neg_s, neg_g = draws.get(0)  # pass 1 is being drawn meanwhile
    >>> neg_g.shape
    (2, 2)
    >>> draws.close()
    """

    def __init__(self, data, *, known=None, negatives=1, reversed_negatives=False,
                 sibling_negatives=0.0, corrupt="either", shuffle=True, seed=0, ahead=None,
                 passes=None):
        self.edges, self._index, self._direct = _sampler(data, known, sibling_negatives)
        self.k = negatives + int(reversed_negatives)
        self._draw = dict(negatives=negatives, reversed_negatives=reversed_negatives,
                          sibling_negatives=sibling_negatives, corrupt=corrupt, shuffle=shuffle)
        self.seed = seed
        self.ahead = _ahead() if ahead is None else int(ahead)
        self.passes = passes
        self._pool = (ThreadPoolExecutor(self.ahead, thread_name_prefix="edge-draws")
                      if self.ahead > 0 else None)
        self._futures = {}  # pass -> its drawing

    def _drawn(self, epoch):
        return draw_epoch(self.edges, self._index, np.random.default_rng([self.seed, epoch]),
                          direct=self._direct, **self._draw)

    def get(self, epoch):
        """Pass `epoch`'s `(pos, neg_specific, neg_general)` (`draw_epoch`),
        the passes after it set drawing."""
        if self._pool is None:
            return self._drawn(epoch)
        last = epoch + self.ahead + 1
        if self.passes is not None:
            last = max(epoch + 1, min(last, self.passes))
        for e in range(epoch, last):
            if e not in self._futures:
                self._futures[e] = self._pool.submit(self._drawn, e)
        for e in [e for e in self._futures if e < epoch]:
            self._futures.pop(e).cancel()
        return self._futures.pop(epoch).result()

    def close(self):
        """Cancels the passes not yet asked for; returns without waiting."""
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=False)


class EdgeBatches(keras.utils.PyDataset):
    """One epoch of `make_dataset`'s batches as a `keras.utils.PyDataset`,
    without TensorFlow: pass `epoch` (the stream `[seed, epoch]`) drawn
    once, on first use (`draw_epoch`), batch `i` its rows `i * batch_size`
    onwards, NumPy arrays. The same batches in the same order as pass
    `epoch` of `make_dataset(..., first_pass=epoch)`; reading a batch
    twice gives it twice, so a `fit` on JAX that reads the first batch to
    build the model trains the same epoch. Every epoch of a `fit` serves
    the same pass: give each epoch its own (`epoch_batches`).

    Args:
        data, known, batch_size, negatives, reversed_negatives,
            sibling_negatives, corrupt, shuffle, drop_remainder, seed: as
            for `make_dataset` (defaults `known=None`, 1024, 1, False, 0.0,
            "either", True, False, 0).
        epoch: the pass drawn (`make_dataset`'s `first_pass`), default 0.
        draws: an `EpochDraws` to read the pass from (drawn ahead) instead
            of drawing it here: its data and drawing settings then count,
            not these.

    Example:

    >>> from keras_gauss.hierarchy import hierarchy_from_parents
    >>> h = hierarchy_from_parents({"dog": ["mammal"], "cat": ["mammal"], "mammal": [], "rock": []})
    >>> batches = EdgeBatches(h, batch_size=1, negatives=2, epoch=3)
    >>> len(batches), batches[0][0]["neg_general"].shape, batches[0][1].tolist()
    (2, (1, 2), [[1.0, 0.0, 0.0]])
    >>> len(batches.skip(1))  # what a run resumed after one step trains
    1
    """

    def __init__(self, data, *, known=None, batch_size=1024, negatives=1,
                 reversed_negatives=False, sibling_negatives=0.0, corrupt="either",
                 shuffle=True, drop_remainder=False, seed=0, epoch=0, draws=None):
        super().__init__()
        if draws is None:
            draws = EpochDraws(data, known=known, negatives=negatives,
                               reversed_negatives=reversed_negatives,
                               sibling_negatives=sibling_negatives, corrupt=corrupt,
                               shuffle=shuffle, seed=seed, ahead=0)
        self._draws = draws
        self._batches = _num_batches(len(draws.edges), batch_size, drop_remainder)
        self._labels = _labels(batch_size, draws.k)
        self.batch_size, self.seed, self.epoch = batch_size, draws.seed, epoch
        self._offset = 0
        self._drawn = []  # the pass, once drawn (shared with `skip`'s views)

    def __len__(self):
        return self._batches - self._offset

    def __getitem__(self, i):
        if not 0 <= i < len(self):
            raise IndexError(f"batch {i} of {len(self)}")
        if not self._drawn:
            self._drawn.append(self._draws.get(self.epoch))
        return _batch(self._drawn[0], self._labels, self.batch_size, self._offset + i)

    def skip(self, count):
        """The batches after the first `count` (as `tf.data.Dataset.skip`)."""
        view = copy.copy(self)
        view._offset = min(self._offset + count, self._batches)
        return view


def epoch_batches(data, epoch, *, tf_data=None, draws=None, **options):
    """Epoch `epoch`'s batches for `fit` (the stream `[seed, epoch]`): a
    `tf.data.Dataset` (`make_dataset` from `first_pass=epoch`) on
    TensorFlow, else an `EdgeBatches` (no TensorFlow needed); the same
    batches in the same order either way.

    Args:
        data: as for `make_dataset`.
        epoch: the epoch (pass) drawn.
        tf_data: True for `tf.data` whatever the backend (e.g. for
            `Distribution.local_batches` over several devices); default:
            Keras's backend is TensorFlow.
        draws: an `EpochDraws` that `EdgeBatches` reads the pass from
            (drawn ahead); `tf.data` draws its own.
        **options: `make_dataset`'s keyword arguments but `first_pass`.

    Example:

    >>> from keras_gauss.hierarchy import hierarchy_from_parents
    >>> h = hierarchy_from_parents({"dog": ["mammal"], "cat": ["mammal"], "mammal": [], "rock": []})
    >>> type(epoch_batches(h, 0, tf_data=False, batch_size=1)).__name__
    'EdgeBatches'
    """
    if tf_data is None:
        tf_data = keras.backend.backend() == "tensorflow"
    if tf_data:
        return make_dataset(data, first_pass=epoch, **options)
    return EdgeBatches(data, epoch=epoch, draws=draws, **options)
