"""`keras-gauss` subcommands for hierarchies."""

from pathlib import Path


def add_parser(subparsers):
    demo = subparsers.add_parser(
        "demo",
        help="embed the paper's two small synthetic trees in 2-d (Figure 3)",
        description=(
            "Embed two small synthetic trees (animal, artifact) as 2-d "
            "diagonal Gaussians with KL divergence and a shared table, as in "
            "the paper's Figure 3. Writes model.keras, nodes.tsv, "
            "metrics.json and synthetic_hierarchy.png to --out."
        ),
    )
    demo.add_argument("--out", default="runs/demo", help="output directory (default: runs/demo)")
    demo.add_argument("--epochs", type=int, default=20, help="epochs of 200 steps (default: 20)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--overwrite", action="store_true",
                      help="replace an existing run in --out")
    demo.set_defaults(handler=run_demo)


def check_out_dir(path, overwrite):
    """Refuses an output directory that already holds a run."""
    from keras_gauss.cli import CommandError

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise CommandError(f"--out {path} exists and is not a directory.")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise CommandError(
            f"--out {path} already holds files (another run?); "
            "pass --overwrite to replace them."
        )
    return path


def run_demo(args):
    from keras_gauss.cli import CommandError

    if args.epochs < 1:
        raise CommandError(f"--epochs must be >= 1, got {args.epochs}.")
    out = check_out_dir(args.out, args.overwrite)
    from hierarchy.synthetic import train_synthetic

    metrics = train_synthetic(out, epochs=args.epochs, seed=args.seed)
    print(
        f"edge accuracy {metrics['edge_accuracy']:.3f} "
        f"(true edges scored above their reversal), "
        f"{metrics['train_seconds']:.1f} s; figure: {out / 'synthetic_hierarchy.png'}"
    )
