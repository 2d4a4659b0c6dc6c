"""WordNet noun hierarchy data: closure edges, Vendrov et al. split, negatives, ``tf.data``.

``import keras_gauss.hierarchy`` does not import TensorFlow; :func:`make_dataset` is loaded on first use.

Example:
    >>> from keras_gauss.hierarchy import build_hierarchy, split_edges, make_dataset
    >>> h = build_hierarchy()                      # 82,115 synsets, 743,241 edges
    >>> split = split_edges(h, seed=0)             # 4,000 val + 4,000 test held out
    >>> ds = make_dataset(split.train, known=h, batch_size=512, negatives=1)  # doctest: +SKIP
"""

from .closure import EdgeIndex, Hierarchy, build_hierarchy, hierarchy_from_parents
from .negatives import sample_negatives
from .split import EdgeSplit, split_edges
from .wordnet import WordNetUnavailableError, load_wordnet, read_noun_synsets

__all__ = [
    "EdgeIndex",
    "EdgeSplit",
    "Hierarchy",
    "WordNetUnavailableError",
    "build_hierarchy",
    "hierarchy_from_parents",
    "load_wordnet",
    "make_dataset",
    "read_noun_synsets",
    "sample_negatives",
    "split_edges",
]


def __getattr__(name):
    if name == "make_dataset":
        from .dataset import make_dataset

        return make_dataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
