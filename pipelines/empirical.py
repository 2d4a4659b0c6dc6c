"""The paper's Section 3 warm-up: empirical covariances of pretrained vectors.

Given pretrained word vectors `w` and context vectors `c` (word2vec's input
and output tables, or one table for both), a word's covariance is the
spread of the context vectors around it, over all its context windows in a
corpus:

    Sigma_w = 1 / (N W) sum_i sum_j (c_ij - w)(c_ij - w)^T + delta I

(`N` occurrences of `w`, `W` contexts each: the mean over its `(w, c)`
pairs). Only the diagonal is kept (or its mean, for spherical covariances).
The sums `sum c` and `sum c^2` and the pair count are accumulated per word
in one streaming `tf.data` pass, with `tf.math.unsorted_segment_sum` over
each chunk's distinct words, so

    Sigma_w,kk = (S2_k - 2 w_k S1_k) / n + w_k^2 + delta.

The result is an `keras_gauss.pipelines.evaluate.Embeddings` (the pretrained means with
these variances) that every evaluation function accepts.
"""

import numpy as np


def context_moments(corpus, vocab, context_vectors, window=5, chunk_lines=256,
                    tokenizer=None):
    """Per-word sums of context vectors and of their squares over a corpus.

    Args:
        corpus: corpus specification (`keras_gauss.pipelines.load_corpus`).
        vocab: the `pipelines.Vocabulary` of the tables' rows.
        context_vectors: `(len(vocab), d)` context table.
        window: largest distance between a word and a context (fixed window,
            no subsampling).
        chunk_lines: lines processed together.
        tokenizer: the tokenizer of the vocabulary (default
            `keras_gauss.pipelines.tokenize`).

    Returns:
        `(counts (n,), sum_c (n, d), sum_c2 (n, d))` float64 numpy arrays.
    """
    import tensorflow as tf

    from keras_gauss.pipelines.skipgram import token_ids
    from keras_gauss.pipelines.skipgram import skipgram_pairs
    from keras_gauss.pipelines.sources import load_corpus
    from keras_gauss.pipelines.tokens import tokenize

    tokenizer = tokenizer or tokenize
    table = tf.constant(np.asarray(context_vectors, dtype=np.float64))
    n, d = table.shape
    if n != len(vocab):
        raise ValueError(f"the context table has {n} rows but the vocabulary {len(vocab)} words.")
    counts = tf.Variable(tf.zeros([n], tf.float64))
    sum_c = tf.Variable(tf.zeros([n, d], tf.float64))
    sum_c2 = tf.Variable(tf.zeros([n, d], tf.float64))

    def pairs(lines):
        return skipgram_pairs(token_ids(lines, vocab, tokenizer), window)

    ids = tf.TensorSpec([None], tf.int32)

    @tf.function(input_signature=[ids, ids])  # one trace for chunks of any size
    def accumulate(word, context):
        unique, index = tf.unique(word)
        vectors = tf.gather(table, context)
        k = tf.shape(unique)[0]
        ones = tf.ones_like(word, tf.float64)
        counts.scatter_add(tf.IndexedSlices(tf.math.unsorted_segment_sum(ones, index, k), unique))
        sum_c.scatter_add(tf.IndexedSlices(tf.math.unsorted_segment_sum(vectors, index, k), unique))
        sum_c2.scatter_add(tf.IndexedSlices(
            tf.math.unsorted_segment_sum(tf.square(vectors), index, k), unique))

    stream = load_corpus(corpus).batch(chunk_lines).map(pairs, num_parallel_calls=tf.data.AUTOTUNE)
    for word, context in stream.prefetch(tf.data.AUTOTUNE):
        accumulate(word, context)
    return counts.numpy(), sum_c.numpy(), sum_c2.numpy()


def empirical_variances(word_vectors, counts, sum_c, sum_c2, ridge=0.1, covariance="diagonal"):
    """Empirical diagonal (or spherical) covariances from context moments.

    `Sigma_w,kk = mean over w's pairs of (c_k - w_k)^2 + ridge`. A word
    without any context gets the average of the others' (unridged)
    variances plus the ridge.

    Args:
        word_vectors: `(n, d)` word table (the fixed means `w`).
        counts, sum_c, sum_c2: the output of `context_moments`.
        ridge: `delta > 0`, added to every variance.
        covariance: `"diagonal"` (`(n, d)`) or `"spherical"` (the mean of the
            diagonal, broadcast to `(n, d)`).

    Returns:
        `(n, d)` float64 variances.
    """
    if covariance not in ("diagonal", "spherical"):
        raise ValueError(f"covariance must be 'diagonal' or 'spherical', got {covariance!r}.")
    if not ridge > 0:
        raise ValueError(f"ridge must be > 0, got {ridge}.")
    w = np.asarray(word_vectors, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)[:, None]
    seen = n[:, 0] > 0
    var = np.empty_like(w)
    nn = n[seen]
    var[seen] = (sum_c2[seen] - 2 * w[seen] * sum_c[seen]) / nn + w[seen] ** 2
    var = np.maximum(var, 0.0)  # rounding
    var[~seen] = var[seen].mean(axis=0) if seen.any() else 1.0
    if covariance == "spherical":
        var = np.broadcast_to(var.mean(axis=1, keepdims=True), w.shape).copy()
    return var + ridge


def empirical_gaussians(corpus, vocab, word_vectors, context_vectors=None, window=5,
                        ridge=0.1, covariance="diagonal"):
    """Gaussian embeddings from pretrained vectors and empirical covariances.

    Args:
        corpus: corpus specification (`keras_gauss.pipelines.load_corpus`).
        vocab: `pipelines.Vocabulary` of the tables' rows.
        word_vectors: `(len(vocab), d)` word table: the means.
        context_vectors: `(len(vocab), d)` context table (default: the word
            table).
        window: context window of the estimate.
        ridge: `delta`, added to the diagonal (the paper tunes it).
        covariance: `"diagonal"` or `"spherical"`.

    Returns:
        A `keras_gauss.pipelines.evaluate.Embeddings` with the word vectors as means.

    Example:

    Pretrained vectors would be, for example, gensim `Word2Vec`'s
    `wv.vectors` and `syn1neg` with their rows put in the vocabulary's order;
    here random ones stand in:

    >>> from keras_gauss.pipelines.vocabulary import build_vocabulary
    >>> with open("corpus.txt", "w") as f:
    ...     _ = f.write("the cat sat on the mat\\nthe dog sat on the log\\n" * 20)
    >>> vocab = build_vocabulary("corpus.txt", min_count=1)
    >>> vectors = np.random.default_rng(0).normal(size=(len(vocab.words), 4))
    >>> emb = empirical_gaussians("corpus.txt", vocab, vectors, window=2)
    >>> emb.variances.shape, bool((emb.variances >= 0.1).all())  # at least the ridge
    ((7, 4), True)
    """
    from keras_gauss.pipelines.evaluate import Embeddings

    contexts = word_vectors if context_vectors is None else context_vectors
    counts, sum_c, sum_c2 = context_moments(corpus, vocab, contexts, window=window)
    variances = empirical_variances(word_vectors, counts, sum_c, sum_c2, ridge, covariance)
    return Embeddings(list(vocab.words), word_vectors, variances)
