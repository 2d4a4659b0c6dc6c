"""Hierarchy data: WordNet nouns/verbs or your own is-a pairs, closure, splits, negatives, ``tf.data``.

``import keras_gauss.hierarchy`` imports neither TensorFlow nor NLTK; each name loads on first use.

Example:
    >>> from keras_gauss.hierarchy import build_hierarchy, split_edges, make_dataset
    >>> h = build_hierarchy()                      # 82,115 synsets, 743,241 edges
    >>> split = split_edges(h, seed=0)             # 4,000 val + 4,000 test held out
    >>> ds = make_dataset(split.train, known=split.train_index, batch_size=512)  # doctest: +SKIP
    >>> own, _ = hierarchy_from_edge_file("my_taxonomy.tsv")  # doctest: +SKIP
"""

from keras_gauss._lazy import lazy_exports

# Each public name loads its module on first use (PEP 562): importing the
# package (e.g. for the `keras-gauss` command's parser) imports neither NLTK
# nor TensorFlow.
_EXPORTS = {
    "EdgeIndex": "closure", "Hierarchy": "closure", "build_hierarchy": "closure",
    "hierarchy_from_parents": "closure", "CycleError": "closure",
    "closure_index": "closure", "transitive_closure": "closure",
    "EdgeFileError": "edgefile", "hierarchy_from_edge_file": "edgefile",
    "read_edge_file": "edgefile",
    "make_dataset": "dataset",
    "sample_negatives": "negatives",
    "EdgeSplit": "split", "split_edges": "split",
    "WordNetUnavailableError": "wordnet", "load_wordnet": "wordnet",
    "read_noun_synsets": "wordnet",
}

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


__getattr__ = lazy_exports(__name__, _EXPORTS)
