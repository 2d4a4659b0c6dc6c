"""TensorBoard Embedding Projector files for Gaussian embeddings.

A projector export is a directory with

- `vectors.tsv`: one mean a line, tab-separated values, no header;
- `metadata.tsv`: a header `word\\tcount\\tlog_det_variance`, then one line
  per word in the same order; `count` is the corpus count, left blank for
  runs without counts (WordNet runs); `log_det_variance` is
  `sum_i log Sigma_ii` over all `d` dimensions (a spherical variance counts
  `d` times), small for specific words, large for broad ones: colour the
  points by it to see specificity;
- `projector_config.pbtxt`, so `tensorboard --logdir DIR` opens it directly.

Load `vectors.tsv` and `metadata.tsv` at https://projector.tensorflow.org
("Load") or run `tensorboard --logdir DIR` and open the Projector tab.
"""

import numpy as np

from keras_gauss.export.word2vec import check_words

METADATA_HEADER = "word\tcount\tlog_det_variance"
CONFIG = """embeddings {
  tensor_name: "means"
  tensor_path: "vectors.tsv"
  metadata_path: "metadata.tsv"
}
"""


def write_projector(directory, words, means, variances, counts=None,
                    overwrite=False):
    """Writes projector files for Gaussian embeddings.

    The directory is written to a temporary sibling and renamed when
    complete.

    Args:
        directory: the output directory.
        words: the `n` words.
        means: `(n, d)` means.
        variances: `(n, d)` or `(n, 1)` variances.
        counts: `n` counts, or `None` (blank column).
        overwrite: replace a projector export of ours (never anything else).

    Returns:
        The directory as a `Path`.

    Raises:
        ValueError: mismatched sizes, or a word holding a tab or line break.
        keras_gauss.io.OutputExistsError: the directory holds files and
            `overwrite` is False.

    Example:

    >>> import numpy as np
    >>> write_projector("projector", ["cat", "dog"], np.eye(2), np.ones((2, 2)))
    PosixPath('.../projector')
    """
    from keras_gauss.checks import check_tables_finite
    from keras_gauss.io import PROJECTOR, atomic_directory, check_output_dir

    means = np.asarray(means, dtype=np.float32)
    variances = np.asarray(variances, dtype=np.float32)
    if means.ndim != 2 or variances.ndim != 2 or variances.shape[0] != means.shape[0] \
            or variances.shape[1] not in (1, means.shape[1]):
        raise ValueError(
            f"means must be (n, d) and variances (n, d) or (n, 1); got "
            f"{means.shape} and {variances.shape}.")
    words = check_words(words, means.shape[0], separators=("\t",),
                        what="projector metadata")
    if counts is not None and len(counts) != len(words):
        raise ValueError(f"{len(counts)} counts for {len(words)} words.")
    check_tables_finite(means, variances, "projector export")
    variances = np.broadcast_to(variances, means.shape)
    log_det = np.sum(np.log(variances.astype(np.float64)), axis=-1)
    path = check_output_dir(directory, overwrite, content=PROJECTOR)
    with atomic_directory(path, overwrite, content=PROJECTOR) as tmp:
        with open(tmp / "vectors.tsv", "w", encoding="utf-8", newline="\n") as out:
            for row in means.tolist():
                out.write("\t".join(format(x, ".9g") for x in row) + "\n")
        with open(tmp / "metadata.tsv", "w", encoding="utf-8", newline="\n") as out:
            out.write(METADATA_HEADER + "\n")
            for i, word in enumerate(words):
                count = "" if counts is None else str(int(counts[i]))
                out.write(f"{word}\t{count}\t{log_det[i]:.9g}\n")
        (tmp / "projector_config.pbtxt").write_text(CONFIG)
    return path


def export_run_projector(run_dir, directory, overwrite=False):
    """Writes projector files for a run's `table` (see `write_projector`).

    Args:
        run_dir: a run directory (see `keras_gauss.runs`).
        directory: the output directory.
        overwrite: replace a projector export of ours (never anything else).

    Returns:
        The directory as a `Path`.

    Raises:
        FileNotFoundError: `run_dir` holds no trained run.
        keras_gauss.io.OutputExistsError: the directory holds files and
            `overwrite` is False.

    Example:

    >>> from keras_gauss.pipelines.train import demo_run
    >>> _ = demo_run("runs/tiny")  # a tiny corpus run, in well under a second
    >>> export_run_projector("runs/tiny", "tiny_projector")
    PosixPath('.../tiny_projector')
    """
    from keras_gauss.io import PROJECTOR, check_output_dir
    from keras_gauss.runs import load_run

    check_output_dir(directory, overwrite, content=PROJECTOR)
    run = load_run(run_dir)
    means, variances = run.tables()
    return write_projector(directory, run.words, means, variances,
                           counts=run.counts, overwrite=overwrite)
