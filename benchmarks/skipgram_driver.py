"""Dumps a corpus as token ids for `skipgram_driver.cc` (see its header).

    python benchmarks/skipgram_driver.py dump /work/shared/data/corpus/news2017.txt.gz /tmp/news.bin
    python benchmarks/skipgram_driver.py zipf 280000 4000000 /tmp/zipf.bin

The file holds, each as an int64 count and the values: the ids (int32), the
line boundaries (int64), and the negatives' alias table (probs float32,
alias int32) of `counts ** 0.75` (min_count 5, no subsampling).
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def write(path, ids, splits, counts):
    from keras_gauss.fused.sampling import alias_table

    probs, alias = alias_table(np.asarray(counts, np.float64) ** 0.75)
    with open(path, "wb") as f:
        for array, dtype in ((ids, np.int32), (splits, np.int64), (probs, np.float32),
                             (alias, np.int32)):
            array = np.ascontiguousarray(array, dtype)
            f.write(np.int64(len(array)).tobytes())
            f.write(array.tobytes())


def main():
    if sys.argv[1] == "dump":
        from keras_gauss.pipelines import native_corpus

        types, counts, ids, splits = native_corpus.read_corpus([Path(sys.argv[2])])
        _, kept, remap = native_corpus.vocabulary(types, counts, min_count=5)
        ids, splits = native_corpus.in_vocabulary(ids, splits, remap)
        write(sys.argv[3], ids, splits, kept)
    else:
        from corpus_speed import zipf_corpus

        ids, splits, counts = zipf_corpus(int(sys.argv[2]), int(sys.argv[3]))
        write(sys.argv[4], ids, splits, counts)


if __name__ == "__main__":
    main()
