"""Serving and interop exports of Gaussian embeddings.

- `export_run(run_dir, serve_dir, version, k)`: a run directory as a
  TensorFlow Serving SavedModel (`serve_dir/<version>/`) whose signatures take
  strings: `serving_default` (energy of query/candidate pairs), `embed`
  (mean and variance) and `neighbors` (top-k candidates).
- `export_energy_model(layer_or_model, vocabulary, path, energy, ...)`: the
  same endpoints for a model you composed, via `keras.export.ExportArchive`.
- `export_tables(means, variances, words, path, energy, ...)`: the same from
  numpy tables.
- `save_word2vec` / `export_run_word2vec`: means in word2vec text or binary
  format (gensim's `KeyedVectors.load_word2vec_format` reads both).
- `write_projector` / `export_run_projector`: TensorBoard projector files.

The command line is `keras-gauss export RUN_DIR --format ... --out ...`.
Out-of-vocabulary conventions are in `keras_gauss.export.serving`.
"""

from keras_gauss._lazy import lazy_exports

# Each public name loads its module on first use (PEP 562): the `keras-gauss`
# command's parser imports `keras_gauss.export.cli` without TensorFlow.
_EXPORTS = {
    "export_run_projector": "projector", "write_projector": "projector",
    "OOV_ENERGY": "serving", "export_energy_model": "serving", "export_run": "serving",
    "export_tables": "serving",
    "export_run_word2vec": "word2vec", "save_word2vec": "word2vec",
}

__all__ = [
    "OOV_ENERGY",
    "export_energy_model",
    "export_run",
    "export_run_projector",
    "export_run_word2vec",
    "export_tables",
    "save_word2vec",
    "write_projector",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)
