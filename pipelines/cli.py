"""`keras-gauss` subcommands for corpora: train-corpus, evaluate, neighbors."""

import argparse
import os

from keras_gauss import energies
from keras_gauss.checks import command_line_text


def add_parser(subparsers):
    from keras_gauss.checkpoint import checkpoint_arguments
    from keras_gauss.pipelines.train import GPU_SETTINGS
    from keras_gauss.pipelines.train import LR_BASE
    from keras_gauss.pipelines.train import LR_BASE_BATCH
    from keras_gauss.pipelines.train import LR_BATCH_EXPONENT
    from keras_gauss.pipelines.train import LR_MAX
    from keras_gauss.pipelines.train import PAIRS
    from keras_gauss.pipelines.train import CorpusConfig

    defaults = CorpusConfig()
    # What `--learning-rate` is on a GPU when not given (`device_settings`).
    gpu_rate = (f"{LR_BASE} x (batch size / {LR_BASE_BATCH}) ** {LR_BATCH_EXPONENT}, at most "
                f"{LR_MAX}: {GPU_SETTINGS['learning_rate']} at {GPU_SETTINGS['batch_size']}")
    # ... and AdaGrad's floor (`adagrad_floor_for_batch`).
    gpu_floor = {field: (f"{getattr(defaults, field)} x ({LR_BASE_BATCH} / batch size) ** 2, "
                         f"{GPU_SETTINGS[field]} at {GPU_SETTINGS['batch_size']}")
                 for field in ("initial_accumulator", "epsilon")}
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
            "--batch-size 16384 --learning-rate 0.5 --sample 1e-3 --window 15 "
            "(benchmarks/corpus_quality.py)."
        ),
    )
    train.add_argument("--corpus", default=None,
                       help="text file/directory or tfds:NAME (default: WordNet glosses)")
    train.add_argument("--out", default=None, help="run directory to write")
    train.add_argument("--overwrite", action="store_true",
                       help="replace an existing run in --out")
    checkpoint_arguments(train)
    for field in ("dim", "epochs", "window", "negatives", "min_count", "max_size",
                  "sample", "batch_size", "learning_rate", "margin", "max_norm",
                  "min_variance", "max_variance", "init_variance", "initial_accumulator",
                  "epsilon", "seed"):
        default = getattr(defaults, field)
        kind = float if isinstance(default, float) else int
        on_gpu = field in GPU_SETTINGS  # filled in by `device_settings`
        gpu = (f"; on a GPU {gpu_rate}" if field == "learning_rate"
               else f"; on a GPU {gpu_floor[field]}" if field in gpu_floor
               else f"; {GPU_SETTINGS.get(field)} on a GPU")
        shown = "no limit: every word seen --min-count times" if default is None else default
        train.add_argument(f"--{field.replace('_', '-')}", type=kind,
                           default=None if on_gpu else default,
                           help=f"(default: {shown}" + (gpu if on_gpu else "") + ")")
    train.add_argument("--variance-learning-rate", type=float, default=None,
                       help="the variances' AdaGrad learning rate, --engine native only "
                            "(default: --learning-rate)")
    train.add_argument("--energy", choices=energies.names(task="corpus"),
                       default=defaults.energy,
                       help="expected likelihood (symmetric) or KL (default: %(default)s)")
    train.add_argument("--covariance", choices=("diagonal", "spherical"),
                       default=defaults.covariance, help="(default: %(default)s)")
    train.add_argument("--fixed-window", dest="dynamic_window", action="store_false",
                       help="use every context up to --window (default: word2vec's "
                            "reduced window drawn from 1..window per word)")
    train.add_argument("--engine", default=None, metavar="{native,keras}",
                       help="native: the multi-threaded C++ trainer, which draws the pairs "
                            "itself (no TensorFlow on text files); keras: tf.data pairs into "
                            "model.fit with the layers (any backend, --distribution) "
                            f"(default: {defaults.engine}; on a GPU with KERAS_BACKEND=jax: "
                            "keras with --pairs device, --batch-size "
                            f"{GPU_SETTINGS['batch_size']} and --learning-rate "
                            f"{gpu_rate}, for the settings not given)")
    # An earlier flag: its value gets the line saying what to use instead.
    train.add_argument("--fused", dest="engine", action="store_const", const="fused",
                       help=argparse.SUPPRESS)
    train.add_argument("--threads", type=int, default=defaults.threads,
                       help="threads of --engine native (default: 0, the cores this "
                            "process may use)")
    train.add_argument("--pairs", default=None, metavar="{host,device}",
                       help="where --engine keras draws its pairs: host (the tf.data stream, "
                            "a pass over the shuffled lines) or device (the corpus as token "
                            "ids on the device, pairs drawn inside the compiled step at "
                            "random positions by the same rules); --engine keras only "
                            f"(default: {PAIRS[0]}; {GPU_SETTINGS['pairs']} on a GPU with "
                            "KERAS_BACKEND=jax, where --engine keras is the default)")
    from keras_gauss.distribution import add_arguments

    add_arguments(train)
    train.set_defaults(handler=run_train_corpus)

    evaluate = subparsers.add_parser(
        "evaluate",
        help="score a run on word similarity and entailment files",
        description=(
            "Score a run directory: Spearman rho on word similarity files "
            "(word1 TAB word2 TAB score) by cosine between means (m) and "
            "between distributions (d), and average precision / best F1 on "
            "entailment files (word1 TAB word2 TAB True|False) by KL and "
            "cosine; a line without a tab may separate its fields by commas "
            "(CSV) or spaces. Pairs with unknown words are skipped (see "
            "coverage; a line per file names the first of those words); a "
            "file with no known pair is an error. On a WordNet run a word "
            "stands for its synsets, or for its own node where the run has "
            "word nodes (the general word2 of an entailment pair always for "
            "its synsets), and a pair scores its best pair. "
            "--hyperlex files (HyperLex's format, its nouns) get Spearman rho "
            "by the entailment energy, graded as train-wordnet --hyperlex "
            "grades them. Prints a table and writes DIR/eval.json."
        ),
    )
    evaluate.add_argument("run", metavar="DIR", help="run directory")
    evaluate.add_argument("--similarity", nargs="+", default=[], metavar="FILE",
                          help="word similarity files")
    evaluate.add_argument("--entailment", nargs="+", default=[], metavar="FILE",
                          help="entailment files (Baroni et al. 2012 format)")
    evaluate.add_argument("--hyperlex", nargs="+", default=[], metavar="FILE",
                          help="graded entailment files (HyperLex's format)")
    evaluate.set_defaults(handler=run_evaluate)

    neighbors = subparsers.add_parser(
        "neighbors",
        help="a word's or a node's nearest neighbours (by the run's energy, similarity or variance)",
        description=(
            "Print the --k nearest neighbours of WORD. --by energy ranks by "
            "the run's energy, as the serving `neighbors` signature does, so on a "
            "hierarchy run the first rows are what WORD most plausibly is-a: with "
            "KL, highest -KL(N_WORD || N_candidate) first; with the containment "
            "energy, first the boxes that hold WORD's (energy at least the run's "
            "is-a threshold, box no smaller than WORD's), smallest first, so the "
            "nearest hypernyms lead, then the others by energy; on a corpus run, "
            "highest energy first. --by similarity ranks by cosine "
            "between means; --by variance shows those neighbours broadest "
            "first (descending log det of the covariance: the paper's "
            "specificity table). Default: energy on hierarchy runs, "
            "similarity on corpus runs. On a hierarchy run a lemma (dog) "
            "lists the synsets to ask for (dog.n.01, ...)."
        ),
    )
    neighbors.add_argument("run", metavar="DIR", help="run directory")
    neighbors.add_argument("word", metavar="WORD", type=command_line_text)
    neighbors.add_argument("--k", type=int, default=10, help="(default: 10)")
    neighbors.add_argument("--by", choices=("energy", "similarity", "variance"), default=None,
                           help="(default: energy on hierarchy runs, similarity on corpus runs)")
    neighbors.set_defaults(handler=run_neighbors)


def device_settings(args, gpu=None):
    """Fills in the `train-corpus` settings left unset (None): on a GPU
    (`keras_gauss.job.jax_gpu`, or `gpu`, its name) with `GPU_SETTINGS`
    (the keras engine, pairs drawn on the device, the GPU batch, and for
    the learning rate and AdaGrad's initial accumulator and epsilon
    `optimizer_for_batch` of the batch, given or not)
    unless `--engine native` or a `--distribution` was asked for, else with
    `CorpusConfig`'s defaults (`keras_gauss.job.device_settings`). Returns
    the line that says the GPU is used, or None.

    Example:

    >>> import argparse
    >>> args = argparse.Namespace(engine=None, pairs=None, batch_size=None,
    ...                           learning_rate=None, initial_accumulator=None, epsilon=None)
    >>> device_settings(args, gpu="NVIDIA H200")
    'GPU NVIDIA H200: --engine keras, --pairs device, --batch-size 65536, --learning-rate 0.8, --initial-accumulator 6.25e-08, --epsilon 6.25e-09 (--engine native: the C++ trainer on the CPU)'
    >>> args.batch_size
    65536
    """
    from keras_gauss import job
    from keras_gauss.pipelines.train import GPU_SETTINGS
    from keras_gauss.pipelines.train import CorpusConfig
    from keras_gauss.pipelines.train import optimizer_for_batch

    settings = dict(GPU_SETTINGS)
    if isinstance(args.batch_size, int) and args.batch_size > 0:
        # the rate and floor of the batch given (a bad batch: CorpusConfig.validate says so)
        settings.update(optimizer_for_batch(args.batch_size))
    return job.device_settings(args, settings, CorpusConfig(), gpu)


def run_train_corpus(args):
    import dataclasses

    from keras_gauss.checks import CommandError
    from keras_gauss.checkpoint import output_dir
    from keras_gauss.checkpoint import run_training_command
    from keras_gauss.checks import TrainingDivergedError
    from keras_gauss.pipelines.train import CorpusConfig
    from keras_gauss.pipelines.train import train_corpus

    if args.corpus is not None and not args.corpus.strip():  # ("" is the working directory)
        raise CommandError("--corpus is empty: give a text file or directory, or leave "
                           "--corpus out to train on the WordNet glosses.")
    line = device_settings(args)
    if line and not args.quiet:
        print(line, flush=True)
    fields = {f.name for f in dataclasses.fields(CorpusConfig)}
    config = CorpusConfig(**{k: v for k, v in vars(args).items() if k in fields})
    args.out = output_dir(args)
    try:
        config.validate()
        metrics = run_training_command(train_corpus, args, config, args.corpus, args.out)
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


def _load(run_dir, verbose=False):
    from keras_gauss.callbacks import Phase
    from keras_gauss.checks import CommandError

    loading = Phase(f"loading {run_dir}", verbose)
    from keras_gauss.run_format import DamagedRunError
    from keras_gauss.runs import load_run
    from keras_gauss.pipelines.evaluate import Embeddings

    try:
        emb = Embeddings.from_run(load_run(run_dir))
    except (FileNotFoundError, DamagedRunError) as error:
        raise CommandError(str(error)) from None
    loading.done()
    return emb


def run_evaluate(args):
    from keras_gauss.checks import CommandError
    from keras_gauss.pipelines.evaluate import evaluate
    from keras_gauss.pipelines.evaluate import file_names
    from keras_gauss.pipelines.evaluate import format_table
    from keras_gauss.checks import listing
    from keras_gauss.pipelines.evaluate import scored_anything
    from keras_gauss.pipelines.evaluate import undefined_notes
    from keras_gauss.pipelines.evaluate import unknown_notes
    from keras_gauss.hierarchy.wordnet import WordNetUnavailableError

    if not args.similarity and not args.entailment and not args.hyperlex:
        raise CommandError("give at least one --similarity, --entailment or --hyperlex file.")
    from keras_gauss.inputs import InputFileError, check_input_file

    for flag in ("similarity", "entailment", "hyperlex"):
        for path in getattr(args, flag):
            try:
                check_input_file(path, f"--{flag}")  # never opens a FIFO
            except InputFileError as error:
                raise CommandError(str(error)) from None
    stamp = _run_stamp(args.run)  # the run read: eval.json goes into it only
    emb = _load(args.run, verbose=not args.quiet)
    try:
        results = evaluate(emb, args.similarity, args.entailment, args.hyperlex)
    except (ValueError, UnicodeDecodeError, WordNetUnavailableError) as error:
        raise CommandError(str(error)) from None
    for kind, flag in (("similarity", "similarity"), ("entailment", "entailment"),
                       ("graded", "hyperlex")):
        paths = file_names(getattr(args, flag))  # each result's file, as given
        for name, result in results.get(kind, {}).items():
            if not result["n_pairs"]:
                raise CommandError(f"--{flag} {paths[name]}: the file holds no pairs; nothing "
                                   "to score.")
            if not result["n_covered"]:
                raise CommandError(
                    f"--{flag} {paths[name]}: none of its {result['n_pairs']} pairs has both "
                    f"words in the vocabulary of {args.run} (unknown: "
                    f"{listing(result['unknown'])}); nothing to score.")
    notes = undefined_notes(results)
    if not scored_anything(results):  # every measure undefined: nothing was scored
        raise CommandError(f"nothing could be scored: {'; '.join(notes)}")
    print(format_table(results))
    for note in unknown_notes(results):  # the words behind a coverage below 100%
        print(note)
    for note in notes:  # a measure that is undefined says why (as n/a in the table)
        print(note)
    _write_eval(args.run, results, stamp)


def _run_stamp(run_dir):
    """What tells the run in `run_dir` from another: the identity of the
    directory and of its files (a replaced run is another directory, a
    rewritten file another inode or time)."""
    stamp = []
    for name in ("", ".keras-gauss", "run.json", "model.keras", "metrics.json"):
        try:
            info = os.stat(os.path.join(run_dir, name))
        except OSError:
            stamp.append(None)
            continue
        stamp.append((info.st_dev, info.st_ino) if not name else
                     (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size))
    return stamp


def _write_eval(run_dir, results, stamp):
    """Writes `eval.json` atomically (with the mode of the other run files)
    under the run's lock, only into the run that was read (`stamp`,
    `_run_stamp`); `CommandError` (one line) when it cannot: another
    process writes the run, the run was replaced, or the file system
    refuses."""
    import json

    from keras_gauss.checks import CommandError
    from keras_gauss.io import OutputExistsError
    from keras_gauss.io import OutputLock
    from keras_gauss.io import OutputNotWritableError
    from keras_gauss.io import atomic_file
    from keras_gauss.run_format import jsonable

    path = os.path.join(run_dir, "eval.json")
    try:
        lock = OutputLock(run_dir).acquire()  # a training job holds it from start to end
    except OSError as error:  # OutputBusyError, or a lock file that cannot be made
        reason = error if isinstance(error, OutputExistsError) else (
            f"cannot take its lock ({error.strerror or error})")
        raise CommandError(f"{path} not written: {reason}") from None
    try:
        if _run_stamp(run_dir) != stamp:
            raise CommandError(f"{path} not written: {run_dir} was replaced while evaluate "
                               "read it; run evaluate again on the new run.")
        with atomic_file(path, overwrite=True) as f:
            f.write(json.dumps(jsonable(results), indent=2) + "\n")
    except (OutputExistsError, OutputNotWritableError) as error:
        raise CommandError(f"{path} not written: {error}") from None
    except OSError as error:
        raise CommandError(f"{path} not written: {error.strerror or error}") from None
    finally:
        lock.release()


def run_neighbors(args):
    from keras_gauss.checks import CommandError
    from keras_gauss.run_format import DamagedRunError
    from keras_gauss.runs import UnknownWordError, load_run

    if args.k < 1:
        raise CommandError(f"--k must be >= 1, got {args.k}.")
    try:
        run = load_run(args.run)
    except (FileNotFoundError, DamagedRunError) as error:
        raise CommandError(str(error)) from None
    by = args.by or ("energy" if run.is_hierarchy else "similarity")
    word = args.word
    if not run.is_hierarchy and word not in run.index:
        word = word.lower()  # the corpus tokenizer lowercases
    try:
        rows = run.neighbors(word, by="similarity" if by == "variance" else by, k=args.k)
    except UnknownWordError as error:
        known = f"{args.run} ({len(run.words):,} entries)"
        if error.suggestions and all("." in w for w in error.suggestions):
            raise CommandError(
                f"{args.word!r} is not an entry of {known}; its synsets are: "
                f"{', '.join(error.suggestions)} (ask for one of them).") from None
        if error.suggestions:
            raise CommandError(f"{args.word!r} is not in the vocabulary of {known}; "
                               f"did you mean {', '.join(error.suggestions)}?") from None
        raise CommandError(f"unknown word: {args.word!r} is not in the vocabulary "
                           f"of {known}.") from None
    if not rows:
        raise CommandError(f"{word!r} has no neighbours: it is the only entry of "
                           f"{args.run}.")
    log_det = run.log_det()
    table = [(w, score, float(log_det[run.index[w]])) for w, score in rows]
    if by == "variance":
        table.sort(key=lambda row: -row[2])
    title = "energy" if by == "energy" else "cosine"
    print(format_neighbors(table, ("neighbour", title, "log det")))


def _fixed(value, digits):
    """`value` with `digits` decimals, never `-0.00`."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def format_neighbors(rows, header, digits=(3, 2)):
    """A neighbours table whose columns fit the longest entry.

    Args:
        rows: `(name, score, log_det)` tuples.
        header: the three column titles.
        digits: decimals of the two number columns.

    Returns:
        The table as one string (a header line, then one line a row).

    Example:

    >>> print(format_neighbors([("dog.n.01", -0.0001, 1.5)], ("neighbour", "energy", "log det")))
    neighbour  energy  log det
    dog.n.01    0.000     1.50
    """
    from keras_gauss.pipelines.evaluate import display_width
    from keras_gauss.pipelines.evaluate import pad_to_width

    cells = [[str(name), _fixed(a, digits[0]), _fixed(b, digits[1])] for name, a, b in rows]
    widths = [max([display_width(str(h))] + [display_width(c[i]) for c in cells])
              for i, h in enumerate(header)]

    def line(a, b, c):
        return f"{pad_to_width(a, widths[0])}  {b.rjust(widths[1])}  {c.rjust(widths[2])}"

    return "\n".join([line(*map(str, header))] + [line(*c) for c in cells])
