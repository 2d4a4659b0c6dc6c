"""Corpus data pipeline: text -> tokens -> vocabulary -> skip-gram examples for `model.fit`.

Example: the batches of a tiny corpus for a model built with
`keras_gauss.pipelines.model.build_corpus_model(len(vocab))`.

    >>> from keras_gauss.pipelines import build_vocabulary, make_skipgram_dataset
    >>> with open("news.txt", "w") as f:
    ...     _ = f.write("the cat sat on the mat\\nthe dog sat on the log\\n" * 20)
    >>> vocab = build_vocabulary("news.txt", min_count=5)
    >>> vocab.words
    ('the', 'on', 'sat', 'cat', 'dog', 'log', 'mat')
    >>> ds = make_skipgram_dataset("news.txt", vocab, window=5, negatives=1, seed=0,
    ...                            sample=0)  # a tiny corpus: no subsampling
    >>> x, y = next(iter(ds))
    >>> sorted(x)
    ['context', 'negatives', 'word']
"""

from keras_gauss._lazy import lazy_exports

# Each public name loads its module on first use (PEP 562): importing the
# package, or one light module of it, does not import TensorFlow.
_EXPORTS = {
    "EpochSize": "skipgram", "epoch_size": "skipgram", "keep_probabilities": "skipgram",
    "make_skipgram_dataset": "skipgram", "negative_table": "skipgram", "skipgram_pairs": "skipgram",
    "Corpus": "sources", "cache_dir": "sources", "describe_corpus": "sources", "load_corpus": "sources",
    "text_source": "sources", "tfds_source": "sources", "wordnet_source": "sources",
    "tokenize": "tokens",
    "empirical_gaussians": "empirical",
    "Embeddings": "evaluate", "entailment": "evaluate", "neighbors": "evaluate",
    "similarity": "evaluate", "specificity": "evaluate",
    "build_corpus_model": "model",
    "CorpusConfig": "train", "train_corpus": "train",
    "Tokenizer": "vocabulary", "Vocabulary": "vocabulary", "build_vocabulary": "vocabulary",
    "CorpusCount": "vocabulary", "count_corpus": "vocabulary", "vocabulary_from_counts": "vocabulary",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "Corpus",
    "CorpusConfig",
    "CorpusCount",
    "Embeddings",
    "EpochSize",
    "Tokenizer",
    "Vocabulary",
    "build_corpus_model",
    "build_vocabulary",
    "cache_dir",
    "count_corpus",
    "describe_corpus",
    "empirical_gaussians",
    "entailment",
    "epoch_size",
    "keep_probabilities",
    "load_corpus",
    "make_skipgram_dataset",
    "negative_table",
    "neighbors",
    "similarity",
    "skipgram_pairs",
    "specificity",
    "text_source",
    "tfds_source",
    "tokenize",
    "train_corpus",
    "vocabulary_from_counts",
    "wordnet_source",
]
