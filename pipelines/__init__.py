"""Corpus data pipeline: text -> tokens -> vocabulary -> skip-gram examples for ``model.fit``.

Example:
    >>> from pipelines import build_vocabulary, make_skipgram_dataset
    >>> vocab = build_vocabulary("news.txt.gz", min_count=5)  # doctest: +SKIP
    >>> ds = make_skipgram_dataset("news.txt.gz", vocab, window=5, negatives=1, seed=0)  # doctest: +SKIP
    >>> model.fit(ds, epochs=5)  # doctest: +SKIP
"""

from .skipgram import (
    EpochSize,
    epoch_size,
    keep_probabilities,
    make_skipgram_dataset,
    negative_table,
    skipgram_pairs,
)
from .sources import Corpus, cache_dir, describe_corpus, load_corpus, text_source, tfds_source, wordnet_source
from .tokenize import tokenize
from .empirical import empirical_gaussians
from .evaluate import Embeddings, entailment, neighbors, similarity, specificity
from .model import build_corpus_model
from .train import CorpusConfig, train_corpus
from .vocabulary import Tokenizer, Vocabulary, build_vocabulary

__all__ = [
    "Corpus",
    "CorpusConfig",
    "Embeddings",
    "EpochSize",
    "Tokenizer",
    "Vocabulary",
    "build_corpus_model",
    "build_vocabulary",
    "cache_dir",
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
    "wordnet_source",
]
