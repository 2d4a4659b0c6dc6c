"""WordNet noun hierarchy data: closure edges, Vendrov et al. split, negatives, ``tf.data``.

``import keras_gauss.hierarchy`` imports neither TensorFlow nor NLTK; each name loads on first use.

Example:
    >>> from keras_gauss.hierarchy import build_hierarchy, split_edges, make_dataset
    >>> h = build_hierarchy()                      # 82,115 synsets, 743,241 edges
    >>> split = split_edges(h, seed=0)             # 4,000 val + 4,000 test held out
    >>> ds = make_dataset(split.train, known=h, batch_size=512, negatives=1)  # doctest: +SKIP
"""

import importlib

# Each public name loads its module on first use (PEP 562): importing the
# package (e.g. for the `keras-gauss` command's parser) imports neither NLTK
# nor TensorFlow.
_EXPORTS = {
    "EdgeIndex": "closure", "Hierarchy": "closure", "build_hierarchy": "closure",
    "hierarchy_from_parents": "closure",
    "make_dataset": "dataset",
    "sample_negatives": "negatives",
    "EdgeSplit": "split", "split_edges": "split",
    "WordNetUnavailableError": "wordnet", "load_wordnet": "wordnet",
    "read_noun_synsets": "wordnet",
}

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
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
