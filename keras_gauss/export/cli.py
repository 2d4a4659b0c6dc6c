"""`keras-gauss export`: serve a run with TF Serving, or hand its means to
word2vec readers (gensim) and TensorBoard's projector."""

from keras_gauss.checks import CommandError

FORMATS = ("serving", "word2vec", "word2vec-binary", "projector")

DESCRIPTION = """\
Export a trained run directory (model.keras, vocabulary, run.json).

formats (--format):
  serving          TensorFlow Serving SavedModel in OUT/VERSION (OUT is the
                   model base path): saved_model.pb, variables/, the
                   vocabulary in assets/. Signatures take strings:
                     serving_default (= energy): query, candidate ->
                       energy, query_in_vocabulary, candidate_in_vocabulary
                     embed: word -> mean, variance, in_vocabulary
                     neighbors: query -> candidates, energies (top K by
                       energy, the query itself left out), in_vocabulary
                   Energy is the run's: EL (symmetric log expected
                   likelihood) or KL, energy(query, candidate) =
                   -KL(N_query || N_candidate), high when "query is-a
                   candidate" (or a hierarchy run's containment energy).
                   Unknown strings never fail a request: they get
                   in_vocabulary=false, energy -3.4028235e38 (lowest float32,
                   ranks last), zero mean/variance, empty neighbours.
  word2vec         the means as a word2vec text file OUT (gensim:
                   KeyedVectors.load_word2vec_format(OUT))
  word2vec-binary  the same in word2vec's binary format (binary=True)
  projector        TensorBoard projector directory OUT: vectors.tsv (means),
                   metadata.tsv (word, count, log_det_variance),
                   projector_config.pbtxt; view it with
                   `tensorboard --logdir OUT` (extra: keras-gauss[viz])

Every output is written to a temporary sibling and renamed when complete,
with a marker of ours (.keras-gauss inside a directory, .NAME.keras-gauss
beside a file); --overwrite replaces only an export of ours of the same
format, and nothing is written into a run or over a run.
"""


def add_parser(subparsers):
    import argparse

    export = subparsers.add_parser(
        "export",
        help="export a run for TF Serving, word2vec readers or TensorBoard's projector",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    export.add_argument("run_dir", metavar="RUN_DIR", help="a trained run directory")
    export.add_argument("--out", required=True,
                        help="serving: the model base path (VERSION is made inside); "
                             "word2vec: the file; projector: the directory")
    export.add_argument("--format", choices=FORMATS, default="serving",
                        help="what to write (default: serving)")
    export.add_argument("--version", type=int, default=None,
                        help="serving: the model version directory (default: 1)")
    export.add_argument("--k", type=int, default=None,
                        help="serving: neighbours returned by `neighbors` (default: 10)")
    export.add_argument("--candidate-table", default=None, metavar="LAYER",
                        help="serving: embed candidates with this GaussianEmbedding layer "
                             "(e.g. contexts, for the trained word-context energy); "
                             "default: the run's table on both sides")
    export.add_argument("--overwrite", action="store_true",
                        help="replace an export of ours of the same format (never a run or "
                             "anything else)")
    export.set_defaults(handler=run_export)


def run_export(args):
    if args.format != "serving":
        for flag in ("version", "k", "candidate_table"):
            if getattr(args, flag) is not None:
                raise CommandError(
                    f"--{flag.replace('_', '-')} applies to --format serving only.")
    from keras_gauss.export import serving  # (without TensorFlow)

    try:
        version = serving.check_version(1 if args.version is None else args.version,
                                        "--version")
    except ValueError as error:
        raise CommandError(str(error)) from None
    if args.k is not None and args.k < 1:
        raise CommandError(f"--k must be >= 1, got {args.k}.")

    from keras_gauss.callbacks import Phase

    exporting = Phase(f"exporting {args.run_dir} ({args.format})", not args.quiet)
    from keras_gauss.io import OutputExistsError, OutputNotWritableError

    try:
        if args.format == "serving":
            k = serving.DEFAULT_K if args.k is None else args.k
            out = serving.export_run(args.run_dir, args.out, version=version, k=k,
                                     overwrite=args.overwrite,
                                     candidate_table=args.candidate_table)
        elif args.format == "projector":
            from keras_gauss.export.projector import export_run_projector

            out = export_run_projector(args.run_dir, args.out, overwrite=args.overwrite)
        else:
            from keras_gauss.export.word2vec import export_run_word2vec

            out = export_run_word2vec(args.run_dir, args.out,
                                      binary=args.format == "word2vec-binary",
                                      overwrite=args.overwrite)
    except (OutputExistsError, OutputNotWritableError) as error:
        raise CommandError(f"--out {error}") from None
    except (FileNotFoundError, ValueError) as error:
        raise CommandError(str(error)) from None
    exporting.done()
    print(f"{args.format} export written to {out}")
    if args.format == "projector":
        print(f"view it with `tensorboard --logdir {out}` (pip install keras-gauss[viz])")
