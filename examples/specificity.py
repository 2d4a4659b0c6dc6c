"""The paper's Table 1: nearest neighbours of query words, broadest first.

For each query word in the run's vocabulary, take its 100 nearest
neighbours by cosine between means and list a dozen of them, evenly spaced
over the order of descending variance (log det of the covariance): broad,
ambiguous words first, specific ones last.

Usage:

    python examples/specificity.py RUN_DIR [--words rock food ...] [--k 100] [--show 12]
"""

import argparse
import sys

QUERIES = ("rock", "food", "feeling", "algebra", "music", "animal", "sport",
           "science", "money", "war", "city", "car")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="run directory (keras-gauss train-corpus)")
    parser.add_argument("--words", nargs="+", default=list(QUERIES),
                        help="query words (default: the paper's and a few more)")
    parser.add_argument("--k", type=int, default=100, help="neighbour set size (default: 100)")
    parser.add_argument("--show", type=int, default=12, help="neighbours shown (default: 12)")
    args = parser.parse_args(argv)

    from keras_gauss.pipelines.evaluate import Embeddings
    from keras_gauss.pipelines.evaluate import specificity

    emb = Embeddings.from_run(args.run)
    present = [w for w in args.words if w.lower() in emb.index]
    missing = [w for w in args.words if w.lower() not in emb.index]
    if not present:
        sys.exit(f"none of the query words is in the vocabulary of {args.run}: {missing}")
    width = max(len(w) for w in present)
    print(f"{'query':<{width}}  nearby words, descending variance (log det)")
    for word in present:
        rows = specificity(emb, word, k=args.k, show=args.show)
        print(f"{word:<{width}}  " + " ".join(w for w, _ in rows))
    if missing:
        print(f"(not in the vocabulary: {', '.join(missing)})")


if __name__ == "__main__":
    main()
