"""Training speed: our native trainer against gensim's skip-gram (and word2gauss), one epoch each.

Two vocabularies, each timed in one run beside gensim on the same ids:

- news2017 (19k words after `min_count=5`, 2M tokens);
- a synthetic Zipf-Mandelbrot corpus at the paper's vocabulary (280k word
  types, `--paper-types`) with `--paper-tokens` tokens: 10M by default,
  not the paper's ~50M, so that a repeat takes a minute, not five (the
  tables, ~450 MB for ours, are what no cache holds; the token count only
  scales the time).

Settings: window 5 with word2vec's reduced window (gensim's default
`shrink_windows=True`, our `dynamic_window=True`), one negative, 50-d
diagonal, no subsampling; gensim with `--workers` threads on sentences in
memory, ours (the native library, `keras_gauss.fused.NativeTables`:
interleaved rows, what `train-corpus --engine native` runs; `--threads`, 0 =
the cores) on token ids in memory, chunks of ~130k tokens, minibatches of
`--batch-sizes` pairs. word2gauss (Cython, EL "IP" energy, diagonal, same
threads) runs from its own venv (`word2gauss_peer.py`; built as
/work/shared/peers/README.md says, `--word2gauss DIR --word2gauss-python
PY`) on at most `--word2gauss-pairs` pairs of a fixed window 5 (it has no
reduced window), so its pairs/s, not its seconds, compare. On news2017 the
`--engines` rows time `train_corpus` too (reading and tokenizing the .gz on
the fly; gensim's sentences stay in memory).

Usage (from the repository root):

    python benchmarks/corpus_speed.py [--repeats 3] [--paper-tokens 10000000]
        [--engines native] [--batch-sizes 2048] [--word2gauss /tmp/w2g]

Every timing is repeated `--repeats` times, interleaved with gensim's, and
the best of each kept (the machine may be shared: the load average is
printed with every repeat). The table gives seconds, pairs/s, time over
gensim's and seconds per pair over gensim's, then the cache sizes
(`lscpu`). Target: ours / gensim <= 1.25 on both vocabularies.
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
    """The corpus as in-memory `(ids, row_splits)` chunks of `chunk_lines`
    lines (gensim's sentences are in memory too), read as the native engine
    reads it."""
    from keras_gauss.pipelines import native_corpus

    types, _, ids, splits = native_corpus.read_corpus(native_corpus.corpus_files(corpus))
    _, _, remap = native_corpus.given_vocabulary(types, vocab)
    ids, splits = native_corpus.in_vocabulary(ids, splits, remap)
    return [(ids[splits[a]:splits[b]], splits[a:b + 1] - splits[a])
            for a, b in zip(range(0, len(splits) - 1, chunk_lines),
                            [*range(chunk_lines, len(splits) - 1, chunk_lines),
                             len(splits) - 1])]


def zipf_corpus(types, tokens, seed=0, sentence_length=25, exponent=1.0, shift=2.7):
    """A synthetic corpus: `tokens` ids drawn i.i.d. from a Zipf-Mandelbrot law
    over `types` ranks (p(r) ~ 1 / (r + shift)^exponent, natural text's
    shape), cut into sentences of `sentence_length` tokens.

    Returns:
        `(ids int32, row_splits int64, counts int64)`; ids are renumbered by
        decreasing count (as a vocabulary is) and words never drawn dropped.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = 1.0 / (np.arange(1, types + 1) + shift) ** exponent
    cdf = np.cumsum(weights / weights.sum())
    ids = np.minimum(np.searchsorted(cdf, rng.random(tokens), side="right"), types - 1)
    counts = np.bincount(ids, minlength=types)
    order = np.argsort(-counts, kind="stable")
    rank = np.empty(types, np.int64)
    rank[order] = np.arange(types)
    ids = rank[ids].astype(np.int32)
    counts = counts[order]
    counts = counts[counts > 0]
    splits = np.arange(0, tokens + 1, sentence_length, dtype=np.int64)
    if splits[-1] != tokens:
        splits = np.append(splits, tokens)
    return ids, splits, counts


def in_memory_chunks(ids, splits, chunk_tokens=1 << 17):
    """`(ids, row_splits)` chunks of whole sentences, about `chunk_tokens` each."""
    import numpy as np

    chunks, first = [], 0
    ends = np.searchsorted(splits, np.arange(chunk_tokens, splits[-1] + chunk_tokens,
                                             chunk_tokens))
    for end in np.unique(np.minimum(ends, len(splits) - 1)):
        if end <= first:
            continue
        s = splits[first:end + 1]
        chunks.append((ids[s[0]:s[-1]], s - s[0]))
        first = end
    return chunks


def time_native(chunks, counts, batch, dim=50, threads=0):
    """Seconds and pairs of one epoch of the native library
    (`keras_gauss.fused.NativeTables`: interleaved per-word rows, called
    through ctypes) over token ids already in memory (no subsampling, window
    5 reduced, one negative, the trainer's defaults otherwise)."""
    import numpy as np

    from keras_gauss.fused import NativeTables
    from keras_gauss.fused import alias_table

    rows = len(counts)
    tables = NativeTables.initial(rows, dim, seed=0, bounds=(2.0, 0.05, 5.0))
    for t in range(2):
        tables.set(t, mean_accumulator=np.full((rows, dim), 1e-6),
                   variance_accumulator=np.full((rows, dim), 1e-6))
    probs, alias = alias_table(np.asarray(counts, np.float64) ** 0.75)
    threads = threads or len(os.sched_getaffinity(0))
    start, count = time.perf_counter(), 0
    for index, (ids, splits) in enumerate(chunks):
        count += tables.train(ids, splits, index, 0.2, probs, alias, window=5, negatives=1,
                              batch_size=batch, margin=0.5, num_threads=threads)[1]
    return time.perf_counter() - start, count


def cache_sizes():
    """The machine's cache sizes as `lscpu` gives them (one line)."""
    import subprocess

    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "lscpu unavailable"
    lines = [line.split(":", 1) for line in out.splitlines() if "cache" in line]
    model = [line.split(":", 1)[1].strip() for line in out.splitlines()
             if line.startswith("Model name")]
    return "; ".join(model + [f"{k.strip()} {v.strip()}" for k, v in lines])


def load_average():
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


class Word2Gauss:
    """word2gauss (the Cython peer) timed in a subprocess of its own venv
    (`word2gauss_peer.py`) on the same ids; `None` when not built."""

    def __init__(self, directory, python, threads):
        self.directory, self.python, self.threads = directory, python, threads

    @classmethod
    def find(cls, directory, python, threads):
        if not directory or not Path(directory, "word2gauss").is_dir() or \
                not Path(python).exists():
            return None
        return cls(directory, python, threads)

    def time(self, ids_file, max_pairs):
        import json
        import subprocess

        out = subprocess.run(
            [self.python, str(Path(__file__).resolve().parent / "word2gauss_peer.py"),
             str(ids_file), "--word2gauss", str(self.directory), "--threads",
             str(self.threads), "--max-pairs", str(max_pairs)],
            capture_output=True, text=True)
        if out.returncode:
            print(f"  word2gauss failed: {out.stderr.strip().splitlines()[-1:]}", flush=True)
            return math.inf, 0
        result = json.loads(out.stdout.strip().splitlines()[-1])
        return result["seconds"], result["pairs"]


def in_memory_rows(label, chunks, counts, sentences, batches, threads, repeats, workers,
                   word2gauss, w2g_pairs, tmp):
    """Best-of-`repeats` seconds of our op on ids in memory, gensim and
    word2gauss on the same corpus, interleaved. Returns table rows."""
    import numpy as np
    from gensim.models import Word2Vec

    gensim = Word2Vec(vector_size=50, window=5, sg=1, negative=1, sample=0, min_count=1,
                      workers=workers, seed=0)
    gensim.build_vocab(sentences)
    ids_file = Path(tmp) / f"{label.split()[0]}.npz"
    if word2gauss is not None:
        ids = np.concatenate([c[0] for c in chunks])
        splits = np.concatenate([[0]] + [c[1][1:] + sum(len(x[0]) for x in chunks[:k])
                                         for k, c in enumerate(chunks)])
        np.savez(ids_file, ids=ids, splits=splits, counts=np.asarray(counts))
    best = {}
    pairs = {}
    for repeat in range(repeats):
        start = time.perf_counter()
        gensim.train(sentences, total_examples=len(sentences), epochs=1)
        best["gensim"] = min(best.get("gensim", math.inf), time.perf_counter() - start)
        line = [f"gensim {best['gensim']:.2f}"]
        for batch in batches:
            seconds, count = time_native(chunks, counts, batch, threads=threads)
            key = f"ours, native library, ids in memory, batch {batch}"
            best[key] = min(best.get(key, math.inf), seconds)
            pairs[key] = pairs["gensim"] = count
            line.append(f"native, batch {batch} {seconds:.2f}")
        if word2gauss is not None:
            seconds, count = word2gauss.time(ids_file, w2g_pairs)
            key = "word2gauss, EL diag, fixed window 5"
            best[key] = min(best.get(key, math.inf), seconds)
            pairs[key] = count
            line.append(f"word2gauss {seconds:.2f} ({count:,} pairs)")
        print(f"  {label}, repeat {repeat + 1}: " + ", ".join(line) + f" s; {load_average()}",
              flush=True)
    rows = []
    for key, seconds in best.items():
        if key == "gensim":
            continue
        per_pair = (seconds / pairs[key]) / (best["gensim"] / pairs["gensim"])
        rows.append((label, key, seconds, pairs[key] / seconds, seconds / best["gensim"],
                     per_pair))
    rows.append((label, f"gensim sg=1, {workers} workers", best["gensim"],
                 pairs["gensim"] / best["gensim"], 1.0, 1.0))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--engines", nargs="*", default=["native"],
                        choices=["keras", "native"],
                        help="train_corpus engines timed on news2017 (none: skip)")
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[2048],
                        help="pairs per AdaGrad step for the native engine")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0,
                        help="threads of the native trainer (0: the cores)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paper-types", type=int, default=280_000,
                        help="word types of the synthetic paper-scale corpus (0: skip it)")
    parser.add_argument("--paper-tokens", type=int, default=10_000_000,
                        help="its tokens (the paper's ~50M make one repeat ~5 min here)")
    parser.add_argument("--word2gauss", default="/tmp/w2g",
                        help="directory of a built word2gauss (see word2gauss_peer.py)")
    parser.add_argument("--word2gauss-python", default="/tmp/w2g-venv/bin/python")
    parser.add_argument("--word2gauss-pairs", type=int, default=20_000_000,
                        help="at most this many pairs for word2gauss (they are built in memory)")
    args = parser.parse_args(argv)

    from corpus_quality import tokenized_sentences

    from keras_gauss.pipelines import build_vocabulary
    from keras_gauss.pipelines import epoch_size
    from keras_gauss.pipelines.train import CorpusConfig
    from keras_gauss.pipelines.train import train_corpus

    print(cache_sizes())
    print(load_average(), flush=True)
    word2gauss = Word2Gauss.find(args.word2gauss, args.word2gauss_python, args.workers)
    if word2gauss is None:
        print(f"word2gauss: not built at {args.word2gauss} (see word2gauss_peer.py); "
              "not timed")
    vocab = build_vocabulary(args.corpus, min_count=5)
    size = epoch_size(args.corpus, vocab, window=5, dynamic_window=True, sample=0.0)
    print(f"news2017: {len(vocab):,} words, {size.tokens:,} tokens, {size.pairs:,} pairs "
          f"per epoch (expected)", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        chunks = pretokenized_chunks(args.corpus, vocab)
        sentences = tokenized_sentences(args.corpus, vocab)
        rows += in_memory_rows(f"news2017 ({len(vocab) // 1000}k words)", chunks,
                               vocab.counts, sentences, args.batch_sizes, args.threads,
                               args.repeats, args.workers, word2gauss,
                               args.word2gauss_pairs, tmp)
        if args.engines:
            best, theirs = {}, math.inf
            from gensim.models import Word2Vec
            gensim = Word2Vec(vector_size=50, window=5, sg=1, negative=1, sample=0,
                              min_count=1, workers=args.workers, seed=0)
            gensim.build_vocab(sentences)
            for repeat in range(args.repeats):
                start = time.perf_counter()
                gensim.train(sentences, total_examples=len(sentences), epochs=1)
                theirs = min(theirs, time.perf_counter() - start)
                for engine in args.engines:
                    for batch in (args.batch_sizes if engine != "keras" else [2048]):
                        config = CorpusConfig(dim=50, epochs=1, window=5, dynamic_window=True,
                                              negatives=1, sample=0.0, min_count=5,
                                              batch_size=batch, engine=engine,
                                              threads=args.threads)
                        metrics = train_corpus(config, args.corpus, Path(tmp) / "run",
                                               verbose=0, vocab=vocab, overwrite=True)
                        key = f"ours, train_corpus {engine} (reads the .gz), batch {batch}"
                        best[key] = min(best.get(key, math.inf), metrics["train_seconds"])
                        print(f"  train_corpus, repeat {repeat + 1}: {engine} batch {batch}: "
                              f"{metrics['train_seconds']:.2f} s; gensim {theirs:.2f} s; "
                              f"{load_average()}", flush=True)
            for key, ours in best.items():
                rows.append((f"news2017 ({len(vocab) // 1000}k words)", key, ours,
                             size.pairs / ours, ours / theirs, ours / theirs))
        del sentences, chunks
        if args.paper_types:
            ids, splits, counts = zipf_corpus(args.paper_types, args.paper_tokens)
            print(f"synthetic Zipf corpus: {len(counts):,} word types drawn of "
                  f"{args.paper_types:,}, {len(ids):,} tokens", flush=True)
            words = [str(i) for i in range(len(counts))]
            sentences = [[words[i] for i in ids[a:b]] for a, b in zip(splits[:-1], splits[1:])]
            rows += in_memory_rows(f"synthetic ({len(counts) // 1000}k words)",
                                   in_memory_chunks(ids, splits), counts, sentences,
                                   args.batch_sizes, args.threads, args.repeats,
                                   args.workers, word2gauss, args.word2gauss_pairs, tmp)

    print(f"\n{'corpus':<22} {'trainer':<52} {'seconds':>8} {'pairs/s':>12} "
          f"{'/ gensim':>9} {'per pair':>9}")
    for corpus, name, seconds, rate, ratio, per_pair in rows:
        shown = "-" if name.startswith("word2gauss") else f"{ratio:.2f}"
        print(f"{corpus:<22} {name:<52} {seconds:8.2f} {rate:12,.0f} {shown:>9} "
              f"{per_pair:9.2f}")
    print("'/ gensim': time over gensim's on the same corpus; 'per pair': seconds per pair "
          "over gensim's (word2gauss trains other pairs, a fixed window, at most "
          "--word2gauss-pairs of them: compare it per pair).")
    print(f"target: ours / gensim <= 1.25 on both vocabularies. {load_average()}")
    print(cache_sizes())


if __name__ == "__main__":
    main()
