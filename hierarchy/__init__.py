"""Hierarchy data: WordNet nouns/verbs or your own is-a pairs, closure, splits, negatives, batches.

`import keras_gauss.hierarchy` imports neither TensorFlow nor NLTK; each name loads on first use.

Example: the mammals of WordNet (`build_hierarchy()`: all 82,115 noun
synsets), a split, batches; and a hierarchy of your own.

    >>> from keras_gauss.hierarchy import build_hierarchy, split_edges, make_dataset
    >>> h = build_hierarchy("mammal.n.01")
    >>> h.num_nodes, len(h.edges)                  # the closure's is-a pairs
    (1182, 6542)
    >>> split = split_edges(h, val_size=100, test_size=100, seed=0)
    >>> ds = make_dataset(split.train, known=split.train_index, batch_size=512)
    >>> from keras_gauss.hierarchy import hierarchy_from_edge_file
    >>> with open("my_taxonomy.tsv", "w") as f:  # specific TAB general
    ...     _ = f.write("dog\\tmammal\\nmammal\\tanimal\\n")
    >>> own, _ = hierarchy_from_edge_file("my_taxonomy.tsv")
    >>> own.num_nodes, len(own.edges)              # dog is-a animal added
    (3, 3)
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
    "EdgeBatches": "dataset", "epoch_batches": "dataset", "make_dataset": "dataset",
    "sample_negatives": "negatives",
    "EdgeSplit": "split", "split_edges": "split",
    "tree_initialization": "initialization",
    "WordNetUnavailableError": "wordnet", "load_wordnet": "wordnet",
    "read_noun_synsets": "wordnet",
}

__all__ = [
    "CycleError",
    "EdgeBatches",
    "EdgeFileError",
    "EdgeIndex",
    "EdgeSplit",
    "Hierarchy",
    "WordNetUnavailableError",
    "build_hierarchy",
    "closure_index",
    "epoch_batches",
    "hierarchy_from_edge_file",
    "hierarchy_from_parents",
    "load_wordnet",
    "make_dataset",
    "read_edge_file",
    "read_noun_synsets",
    "sample_negatives",
    "split_edges",
    "tree_initialization",
    "transitive_closure",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)
