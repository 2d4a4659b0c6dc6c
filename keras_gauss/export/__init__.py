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

from keras_gauss.export.projector import export_run_projector
from keras_gauss.export.projector import write_projector
from keras_gauss.export.serving import OOV_ENERGY
from keras_gauss.export.serving import export_energy_model
from keras_gauss.export.serving import export_run
from keras_gauss.export.serving import export_tables
from keras_gauss.export.word2vec import export_run_word2vec
from keras_gauss.export.word2vec import save_word2vec

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
