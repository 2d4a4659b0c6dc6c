"""Hierarchy data: WordNet nouns/verbs or your own is-a pairs, closure, splits, negatives, ``tf.data``.

``import keras_gauss.hierarchy`` does not import TensorFlow; :func:`make_dataset` is loaded on first use.

Example:
    >>> from keras_gauss.hierarchy import build_hierarchy, split_edges, make_dataset
    >>> h = build_hierarchy()                      # 82,115 synsets, 743,241 edges
    >>> split = split_edges(h, seed=0)             # 4,000 val + 4,000 test held out
    >>> ds = make_dataset(split.train, known=split.train_index, batch_size=512)  # doctest: +SKIP
    >>> own, _ = hierarchy_from_edge_file("my_taxonomy.tsv")  # doctest: +SKIP
"""

from .closure import (
    CycleError,
    EdgeIndex,
    Hierarchy,
    build_hierarchy,
    closure_index,
    hierarchy_from_parents,
    transitive_closure,
)
from .edgefile import EdgeFileError, hierarchy_from_edge_file, read_edge_file
from .negatives import sample_negatives
from .split import EdgeSplit, split_edges
from .wordnet import WordNetUnavailableError, load_wordnet, read_noun_synsets

__all__ = [
    "CycleError",
    "EdgeFileError",
    "EdgeIndex",
    "EdgeSplit",
    "Hierarchy",
    "WordNetUnavailableError",
    "build_hierarchy",
    "closure_index",
    "hierarchy_from_edge_file",
    "hierarchy_from_parents",
    "load_wordnet",
    "make_dataset",
    "read_edge_file",
    "read_noun_synsets",
    "sample_negatives",
    "split_edges",
    "transitive_closure",
]


def __getattr__(name):
    if name == "make_dataset":
        from .dataset import make_dataset

        return make_dataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
