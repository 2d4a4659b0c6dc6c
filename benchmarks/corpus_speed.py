"""Training speed: our corpus trainer against gensim's skip-gram, one epoch each.

Same corpus, same tokenizer and vocabulary (`min_count=5`), window 5 with
word2vec's reduced window (gensim's default `shrink_windows=True`, our
`dynamic_window=True`), one negative, 50-d diagonal, no subsampling; gensim
with 2 worker threads. Both are timed on training only (vocabulary building
excluded); our time includes reading and tokenizing the corpus on the fly in
`tf.data` and setting up the step, gensim's sentences are pre-tokenized
lists in memory. The number
of (word, context) pairs is the same for both: `keras_gauss.pipelines.epoch_size`
(exact in expectation).

Engines (`CorpusConfig.engine`): `keras` (tf.data pairs into `model.fit`),
`fused-step` (the same pairs, one C++ op per step) and `fused` (token ids
into `keras_gauss.fused.skipgram_train`, threads = cores). For `fused` a
second row times the same op on token ids already in memory, as gensim's
sentences are (the kernel alone, without reading and tokenizing the file). `--batch-sizes`
are the pairs per AdaGrad step: 1 is per-pair AdaGrad as in word2gauss;
the `keras` engine is only timed at its default (2048).

Usage (from the repository root):

    python benchmarks/corpus_speed.py [--corpus ../shared/data/corpus/news2017.txt.gz]
        [--engines keras fused] [--batch-sizes 1 2048] [--repeats 2]

Target: ours / gensim time ratio <= 1.25. Every timing is repeated
`--repeats` times, alternating with gensim, and the best of each is kept
(the machine is shared).
"""

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "corpus" / "news2017.txt.gz"


def pretokenized_chunks(corpus, vocab, chunk_lines=256):
    """The corpus as in-memory `(ids, row_splits)` chunks (gensim's sentences
    are in memory too)."""
    from keras_gauss.pipelines.train import line_chunks

    return list(line_chunks(corpus, vocab, chunk_lines=chunk_lines, shuffle_buffer=0))


def time_pretokenized(chunks, vocab, batch, dim=50):
    """Seconds and pairs of one epoch of `keras_gauss.fused.skipgram_train`
    over token ids already in memory (no subsampling, window 5 reduced, one
    negative, the trainer's defaults otherwise)."""
    import numpy as np
    import tensorflow as tf

    from keras_gauss.fused import alias_table
    from keras_gauss.fused import skipgram_train

    rng = np.random.default_rng(0)
    rows = len(vocab)
    tables = [tf.Variable(rng.uniform(-0.05, 0.05, (rows, dim)).astype("float32")),
              tf.Variable(np.ones((rows, dim), "float32")),
              tf.Variable(rng.uniform(-0.05, 0.05, (rows, dim)).astype("float32")),
              tf.Variable(np.ones((rows, dim), "float32"))]
    accumulators = [tf.Variable(tf.fill(t.shape, 1e-6)) for t in tables]
    probs, alias = alias_table(np.asarray(vocab.counts, np.float64) ** 0.75)

    @tf.function(reduce_retracing=True)
    def step(ids, splits, seed):
        return skipgram_train(tables, accumulators, ids, splits, seed, 0.2, probs, alias,
                              window=5, negatives=1, batch_size=batch, margin=0.5,
                              max_norm=2.0, min_variance=0.05, max_variance=5.0)

    step(*chunks[0], tf.constant(-1, tf.int64))  # trace and load the op
    start, count = time.perf_counter(), 0
    for index, (ids, splits) in enumerate(chunks):
        count += int(step(ids, splits, tf.constant(index, tf.int64))[1])
    return time.perf_counter() - start, count


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--engines", nargs="+", default=["keras", "fused"],
                        choices=["keras", "fused-step", "fused"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 2048],
                        help="pairs per AdaGrad step for the fused engines")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)

    from corpus_quality import tokenized_sentences
    from gensim.models import Word2Vec

    from keras_gauss.pipelines import build_vocabulary
    from keras_gauss.pipelines import epoch_size
    from keras_gauss.pipelines.train import CorpusConfig
    from keras_gauss.pipelines.train import train_corpus

    vocab = build_vocabulary(args.corpus, min_count=5)
    size = epoch_size(args.corpus, vocab, window=5, dynamic_window=True, sample=0.0)
    print(f"{len(vocab):,} words, {size.tokens:,} tokens, {size.pairs:,} pairs per epoch "
          f"(expected)", flush=True)

    sentences = tokenized_sentences(args.corpus, vocab)
    gensim = Word2Vec(vector_size=50, window=5, sg=1, negative=1, sample=0, min_count=5,
                      workers=args.workers, seed=0)
    gensim.build_vocab(sentences)

    def time_gensim():
        start = time.perf_counter()
        gensim.train(sentences, total_examples=len(sentences), epochs=1)
        return time.perf_counter() - start

    chunks = pretokenized_chunks(args.corpus, vocab)
    runs = []
    for engine in args.engines:
        for batch in (args.batch_sizes if engine != "keras" else [2048]):
            runs.append((engine, batch))
    best = {run: math.inf for run in runs}
    pairs = {}
    theirs = math.inf
    for repeat in range(args.repeats):
        theirs = min(theirs, time_gensim())
        for engine, batch in runs:
            config = CorpusConfig(dim=50, epochs=1, window=5, dynamic_window=True,
                                  negatives=1, sample=0.0, min_count=5, batch_size=batch,
                                  engine=engine)
            with tempfile.TemporaryDirectory() as tmp:
                metrics = train_corpus(config, args.corpus, Path(tmp) / "run", verbose=0,
                                       vocab=vocab)
            best[engine, batch] = min(best[engine, batch], metrics["train_seconds"])
            pairs[engine, batch] = metrics["pairs"]
            print(f"  repeat {repeat + 1}: {engine} batch {batch}: "
                  f"{metrics['train_seconds']:.2f} s; gensim {theirs:.2f} s", flush=True)
            if engine == "fused":
                seconds, count = time_pretokenized(chunks, vocab, batch)
                key = ("fused, ids in memory", batch)
                best[key] = min(best.get(key, math.inf), seconds)
                pairs[key] = count
                print(f"  repeat {repeat + 1}: fused on ids in memory, batch {batch}: "
                      f"{seconds:.2f} s", flush=True)

    print(f"\n{'trainer':<34} {'seconds':>8} {'pairs/s':>12} {'tokens/s':>11} {'/ gensim':>9}")
    for (engine, batch), ours in best.items():
        name = f"ours, {engine}, batch {batch}"
        print(f"{name:<34} {ours:8.2f} {pairs[engine, batch] / ours:12,.0f} "
              f"{size.tokens / ours:11,.0f} {ours / theirs:9.2f}")
    print(f"{'gensim sg=1, %d workers' % args.workers:<34} {theirs:8.2f} "
          f"{size.pairs / theirs:12,.0f} {size.tokens / theirs:11,.0f} {1:9.2f}")
    print("target: ours / gensim <= 1.25")


if __name__ == "__main__":
    main()
