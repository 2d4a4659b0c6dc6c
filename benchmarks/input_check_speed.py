"""What checking a corpus whole (NUL bytes, invalid UTF-8) costs, beside counting it.

Every corpus file is checked to its last byte before training
(`keras_gauss.pipelines.text_files.check_text_file` on the tf.data path; the
native reader checks each piece as it reads). This times, in one run, on
news2017 (gzip, as shipped, and decompressed to a temporary plain file):

- `check`: `check_text_file` alone (for a `.gz` file this pass also
  verifies the gzip CRCs, which the tf.data path did before anyway);
- `count (tf.data)`: `count_corpus`, the tf.data counting pass the Keras
  engine runs before training (its whole-file check cleared before each
  repeat, so it is inside the time);
- `read (native)`: `native_corpus.read_corpus`, the fused engine's
  tokenizing pass (its check inside);
- `read (native, no check)`: the same pass decoding with "replace" and
  checking nothing (the reader before the check), for the ratio.

Medians of `--repeats` runs, the passes in turn (in reverse order every
other repeat); the load average is printed.

Usage (from the repository root):

    python benchmarks/input_check_speed.py [--repeats 5] [--corpus news2017.txt.gz]
"""

import argparse
import gzip
import os
import statistics
import tempfile
import time
from pathlib import Path

from keras_gauss.pipelines import native_corpus, text_files
from keras_gauss.pipelines.vocabulary import count_corpus

NEWS = Path(__file__).resolve().parents[2] / "shared" / "data" / "corpus" / "news2017.txt.gz"


def unchecked_blocks(path):
    """`native_corpus._blocks` without the check (invalid UTF-8 as U+FFFD)."""
    pending = b""
    for piece in text_files.raw_pieces(path, native_corpus._BLOCK_BYTES):
        pending += piece
        if len(pending) < native_corpus._BLOCK_BYTES:
            continue
        cut = pending.rfind(b"\n") + 1
        if cut:
            yield pending[:cut - 1].decode("utf-8", "replace")
            pending = pending[cut:]
    if pending:
        yield pending[:-1 if pending.endswith(b"\n") else None].decode("utf-8", "replace")


def timed(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--corpus", type=Path, default=NEWS,
                        help="a gzip corpus (default: ../shared/data's news2017)")
    args = parser.parse_args()
    if not args.corpus.exists():
        parser.error(f"{args.corpus} is missing")
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / args.corpus.stem
        plain.write_bytes(gzip.decompress(args.corpus.read_bytes()))
        checked_blocks = native_corpus._blocks
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        print(f"{'file':<16} {'pass':<26} {'median s':>9}  ratio")
        for path in (args.corpus, plain):
            def check():
                text_files._CHECKED.clear()
                text_files.check_text_file(path)

            def count():
                text_files._CHECKED.clear()
                count_corpus(str(path))

            def read(blocks):
                def run():
                    native_corpus._blocks = blocks
                    try:
                        native_corpus.read_corpus([path])
                    finally:
                        native_corpus._blocks = checked_blocks
                return run

            passes = {"check": check, "count (tf.data)": count,
                      "read (native)": read(checked_blocks),
                      "read (native, no check)": read(unchecked_blocks)}
            for function in passes.values():
                function()  # warm: page cache, TF graphs, the native tokenizer
            times = {name: [] for name in passes}
            names = list(passes)
            for repeat in range(args.repeats):  # A B, then B A: no pass always follows another
                for name in names if repeat % 2 == 0 else names[::-1]:
                    times[name].append(timed(passes[name]))
            median = {name: statistics.median(values) for name, values in times.items()}
            for name in passes:
                ratio = {"check": median["check"] / median["count (tf.data)"],
                         "read (native)": median["read (native)"]
                         / median["read (native, no check)"]}.get(name)
                print(f"{path.name:<16} {name:<26} {median[name]:9.3f}  "
                      + (f"{ratio:.3f}" + (" of count" if name == "check" else " of no check")
                         if ratio is not None else ""))
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
