"""`keras-gauss` subcommands for corpora: train-corpus, evaluate, neighbors."""

import os


def add_parser(subparsers):
    from keras_gauss.pipelines.train import CorpusConfig

    defaults = CorpusConfig()
    train = subparsers.add_parser(
        "train-corpus",
        help="learn Gaussian word embeddings from a text corpus (skip-gram, EL or KL)",
        description=(
            "Learn a Gaussian per word from its contexts in a corpus, with "
            "separate word and context tables, negative sampling and the "
            "max-margin ranking loss (Vilnis & McCallum, Section 6). Writes "
            "model.keras, vocab.tsv, run.json and metrics.json to --out. "
            "The corpus is a text file (.gz too) or directory with one "
            "sentence or document a line, tfds:NAME[:SPLIT][/FEATURE] for a "
            "locally prepared TFDS dataset, or, when omitted, the built-in "
            "WordNet glosses. The defaults are the paper's one-pass "
            "settings; for many passes over a small corpus (a few million "
            "tokens) larger minibatches score better, e.g. --epochs 20 "
            "--batch-size 16384 --learning-rate 0.4 --sample 1e-3 --window 15 "
            "(benchmarks/corpus_quality.py)."
        ),
    )
    train.add_argument("--corpus", default=None,
                       help="text file/directory or tfds:NAME (default: WordNet glosses)")
    train.add_argument("--out", required=True, help="run directory to write")
    train.add_argument("--overwrite", action="store_true",
                       help="replace an existing run in --out")
    for field in ("dim", "epochs", "window", "negatives", "min_count", "max_size",
                  "sample", "batch_size", "learning_rate", "margin", "max_norm",
                  "min_variance", "max_variance", "init_variance", "seed"):
        default = getattr(defaults, field)
        kind = float if isinstance(default, float) else int
        train.add_argument(f"--{field.replace('_', '-')}", type=kind, default=default,
                           help=f"(default: {default})")
    train.add_argument("--energy", choices=("el", "kl"), default=defaults.energy,
                       help="expected likelihood (symmetric) or KL (default: %(default)s)")
    train.add_argument("--covariance", choices=("diagonal", "spherical"),
                       default=defaults.covariance, help="(default: %(default)s)")
    train.add_argument("--fixed-window", dest="dynamic_window", action="store_false",
                       help="use every context up to --window (default: word2vec's "
                            "reduced window drawn from 1..window per word)")
    train.add_argument("--engine", choices=("keras", "fused-step", "fused"),
                       default=defaults.engine,
                       help="keras: tf.data pairs into model.fit; fused-step: the same "
                            "pairs, one C++ op per step; fused: token ids into one "
                            "multi-threaded C++ op that draws the pairs itself, about "
                            "10x faster (default: %(default)s)")
    train.add_argument("--fused", dest="engine", action="store_const", const="fused",
                       help="same as --engine fused")
    train.add_argument("--threads", type=int, default=defaults.threads,
                       help="threads of --engine fused (default: 0, TensorFlow's "
                            "intra-op pool size)")
    train.set_defaults(handler=run_train_corpus)

    evaluate = subparsers.add_parser(
        "evaluate",
        help="score a corpus run on word similarity and entailment files",
        description=(
            "Score a run directory: Spearman rho on word similarity files "
            "(word1 TAB word2 TAB score) by cosine between means (m) and "
            "between distributions (d), and average precision / best F1 on "
            "entailment files (word1 TAB word2 TAB True|False) by KL and "
            "cosine. Pairs with unknown words are skipped (see coverage). "
            "Prints a table and writes DIR/eval.json."
        ),
    )
    evaluate.add_argument("run", metavar="DIR", help="run directory")
    evaluate.add_argument("--similarity", nargs="+", default=[], metavar="FILE",
                          help="word similarity files")
    evaluate.add_argument("--entailment", nargs="+", default=[], metavar="FILE",
                          help="entailment files (Baroni et al. 2012 format)")
    evaluate.set_defaults(handler=run_evaluate)

    neighbors = subparsers.add_parser(
        "neighbors",
        help="a word's nearest neighbours, by similarity or by variance",
        description=(
            "Print the --k nearest neighbours of WORD by cosine between means, "
            "most similar first, or (--by variance) the same neighbours "
            "broadest first (descending log det of the covariance: the "
            "paper's specificity table)."
        ),
    )
    neighbors.add_argument("run", metavar="DIR", help="run directory")
    neighbors.add_argument("word", metavar="WORD")
    neighbors.add_argument("--k", type=int, default=10, help="(default: 10)")
    neighbors.add_argument("--by", choices=("similarity", "variance"), default="similarity")
    neighbors.set_defaults(handler=run_neighbors)


def run_train_corpus(args):
    import dataclasses

    from keras_gauss.cli import CommandError
    from keras_gauss.checks import TrainingDivergedError
    from keras_gauss.io import OutputExistsError, OutputNotWritableError
    from keras_gauss.pipelines.train import CorpusConfig
    from keras_gauss.pipelines.train import train_corpus

    fields = {f.name for f in dataclasses.fields(CorpusConfig)}
    config = CorpusConfig(**{k: v for k, v in vars(args).items() if k in fields})
    try:
        config.validate()
        metrics = train_corpus(config, args.corpus, args.out, overwrite=args.overwrite)
    except (OutputExistsError, OutputNotWritableError) as error:
        raise CommandError(f"--out {error}") from None
    except TrainingDivergedError as error:
        raise CommandError(str(error)) from None
    except (ValueError, FileNotFoundError, UnicodeDecodeError) as error:
        raise CommandError(f"--corpus {args.corpus or 'wordnet'}: {error}"
                           if not str(error).startswith("--") else str(error)) from None
    except ImportError as error:  # tensorflow_datasets for tfds: corpora
        raise CommandError(f"--corpus {args.corpus}: {error}") from None
    except NotImplementedError as error:
        raise CommandError(f"--engine {args.engine}: {error}") from None
    print(f"{metrics['vocab_size']:,} words, {metrics['pairs']:,} pairs in "
          f"{metrics['train_seconds']:.1f} s ({metrics['pairs_per_second']:,.0f} pairs/s, "
          f"{metrics['tokens_per_second']:,.0f} tokens/s); final loss "
          f"{metrics['final_loss']:.4f}")
    print(f"run written to {args.out}")


def _load(run_dir):
    from keras_gauss.cli import CommandError
    from keras_gauss.runs import DamagedRunError, load_run
    from keras_gauss.pipelines.evaluate import Embeddings

    try:
        return Embeddings.from_run(load_run(run_dir))
    except (FileNotFoundError, DamagedRunError) as error:
        raise CommandError(str(error)) from None


def run_evaluate(args):
    from keras_gauss.cli import CommandError
    from keras_gauss.pipelines.evaluate import evaluate
    from keras_gauss.pipelines.evaluate import format_table

    if not args.similarity and not args.entailment:
        raise CommandError("give at least one --similarity or --entailment file.")
    for flag in ("similarity", "entailment"):
        for path in getattr(args, flag):
            if not os.path.isfile(path):
                raise CommandError(f"--{flag} {path}: no such file.")
    emb = _load(args.run)
    try:
        results = evaluate(emb, args.similarity, args.entailment)
    except (ValueError, UnicodeDecodeError) as error:
        raise CommandError(str(error)) from None
    print(format_table(results))
    _write_eval(args.run, results)


def _write_eval(run_dir, results):
    """Writes `eval.json` atomically (`keras_gauss.io.atomic_file`)."""
    import json
    import math

    from keras_gauss.io import atomic_file

    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, float) and math.isnan(value):
            return None
        return value

    with atomic_file(os.path.join(run_dir, "eval.json"), overwrite=True) as f:
        f.write(json.dumps(clean(results), indent=2) + "\n")


def run_neighbors(args):
    from keras_gauss.cli import CommandError
    from keras_gauss.pipelines.evaluate import neighbors

    if args.k < 1:
        raise CommandError(f"--k must be >= 1, got {args.k}.")
    emb = _load(args.run)
    try:
        rows = neighbors(emb, args.word, k=args.k, by=args.by)
    except KeyError as error:
        raise CommandError(f"unknown word: {error.args[0]}") from None
    print(f"{'neighbour':<20} {'cosine':>7} {'log det':>9}")
    for word, cosine, log_det in rows:
        print(f"{word:<20} {cosine:7.3f} {log_det:9.2f}")
