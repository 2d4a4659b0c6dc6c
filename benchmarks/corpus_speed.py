"""Training speed: our corpus trainer against gensim's skip-gram, one epoch each.

Same corpus, same tokenizer and vocabulary (`min_count=5`), window 5 with
word2vec's reduced window (gensim's default `shrink_windows=True`, our
`dynamic_window=True`), one negative, 50-d, no subsampling; gensim with 2
worker threads. Both are timed on training only (vocabulary building
excluded; our time includes tokenizing on the fly in `tf.data`, gensim's
sentences are pre-tokenized lists in memory). The number of (word, context)
pairs is the same for both: `pipelines.epoch_size` (exact in expectation).

Usage (from the repository root):

    python benchmarks/corpus_speed.py [--corpus ../shared/data/corpus/news2017.txt.gz] [--batch-size 2048]

Target: ours / gensim time ratio <= 1.25.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "corpus" / "news2017.txt.gz"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--batch-size", type=int, default=2048)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--fused", action="store_true",
                        help="also time the fused training step (keras_gauss.fused)")
    args = parser.parse_args(argv)

    from corpus_quality import tokenized_sentences
    from gensim.models import Word2Vec

    from pipelines import build_vocabulary
    from pipelines import epoch_size
    from pipelines.train import CorpusConfig
    from pipelines.train import train_corpus

    config = CorpusConfig(dim=50, epochs=1, window=5, dynamic_window=True, negatives=1,
                          sample=0.0, min_count=5, batch_size=args.batch_size)
    vocab = build_vocabulary(args.corpus, min_count=config.min_count)
    size = epoch_size(args.corpus, vocab, window=5, dynamic_window=True, sample=0.0)
    print(f"{len(vocab):,} words, {size.tokens:,} tokens, {size.pairs:,} pairs per epoch "
          f"(expected)", flush=True)

    rows = []
    for fused in (False, True) if args.fused else (False,):
        config.fused = fused
        with tempfile.TemporaryDirectory() as tmp:
            metrics = train_corpus(config, args.corpus, Path(tmp) / "run", verbose=0, vocab=vocab)
        name = f"ours ({'fused step' if fused else 'Keras'}, batch {args.batch_size})"
        rows.append((name, metrics["train_seconds"], metrics["pairs"]))

    sentences = tokenized_sentences(args.corpus, vocab)
    model = Word2Vec(vector_size=50, window=5, sg=1, negative=1, sample=0, min_count=5,
                     workers=args.workers, seed=0)
    model.build_vocab(sentences)
    start = time.perf_counter()
    model.train(sentences, total_examples=len(sentences), epochs=1)
    theirs = time.perf_counter() - start

    print(f"\n{'trainer':<32} {'seconds':>8} {'pairs/s':>12} {'tokens/s':>11}")
    for name, ours, pairs in rows:
        print(f"{name:<32} {ours:8.1f} {pairs / ours:12,.0f} {size.tokens / ours:11,.0f}")
    print(f"{'gensim sg=1, %d workers' % args.workers:<32} {theirs:8.1f} "
          f"{size.pairs / theirs:12,.0f} {size.tokens / theirs:11,.0f}")
    for name, ours, _ in rows:
        print(f"ratio {name} / gensim time: {ours / theirs:.2f} (target <= 1.25)")


if __name__ == "__main__":
    main()
