"""Writes the HLO text of keras-gauss train steps as XLA receives them on a GPU.

    KERAS_BACKEND=jax python lowered_steps.py OUT_DIR

One `<case>.hlo` per train step (before XLA's optimizations), with the
layers' reference `keras.ops` code (`KERAS_GAUSS_KERNELS=reference`: what a
JAX GPU runs): the corpus model with `SparseAdagrad`, Keras's `Adagrad` and
`SGD`, the hierarchy model, and the corpus model behind the device-pairs
sampler. `fusion_check.unguarded_work` reads them.
"""

import os
import sys
from pathlib import Path

os.environ["KERAS_GAUSS_KERNELS"] = "reference"

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_gauss.hierarchy.model import build_kl_model  # noqa: E402
from keras_gauss.layers import SkipGramSampler  # noqa: E402
from keras_gauss.losses import MaxMarginRanking  # noqa: E402
from keras_gauss.optimizers import SparseAdagrad  # noqa: E402
from keras_gauss.pipelines.device_pairs import device_trainer  # noqa: E402
from keras_gauss.pipelines.model import build_corpus_model  # noqa: E402

VOCAB, N = 50, 16


def corpus(optimizer):
    model = build_corpus_model(VOCAB, 4, negatives=1, energy="el", max_norm=1.0,
                               min_variance=0.2, max_variance=2.5)
    model.compile(optimizer=optimizer, loss=MaxMarginRanking(0.5))
    rng = np.random.default_rng(0)
    x = {"word": rng.integers(0, VOCAB, N).astype("int32"),
         "context": rng.integers(0, VOCAB, N).astype("int32"),
         "negatives": rng.integers(0, VOCAB, (N, 1)).astype("int32")}
    return model, x, np.tile(np.array([[1.0, 0.0]], "float32"), (N, 1))


def hierarchy():
    model = build_kl_model(VOCAB, 4, negatives=1)
    model.compile(optimizer=SparseAdagrad(0.1), loss=MaxMarginRanking(1.0))
    rng = np.random.default_rng(1)
    x = {name: rng.integers(0, VOCAB, shape).astype("int32") for name, shape in (
        ("general", N), ("specific", N), ("neg_general", (N, 1)), ("neg_specific", (N, 1)))}
    return model, x, np.tile(np.array([[1.0, 0.0]], "float32"), (N, 1))


def device_pairs():
    model, _, _ = corpus(SparseAdagrad(0.1))
    lines = np.repeat(np.arange(10, dtype="int32"), 20)
    ids = np.random.default_rng(2).integers(0, VOCAB, len(lines)).astype("int32")
    sampler = SkipGramSampler.from_arrays(
        ids, lines, np.full(VOCAB, 0.9, "float32"), np.arange(VOCAB, dtype="int32"),
        window=3, batch_size=N, seed=1)
    trainer = device_trainer(model, sampler, steps_per_execution=1)
    return trainer, {"step": np.zeros(1, "int32")}, np.array([[1.0, 0.0]], "float32")


CASES = {
    "corpus_sparse_adagrad": lambda: corpus(SparseAdagrad(0.1)),
    "corpus_keras_adagrad": lambda: corpus(keras.optimizers.Adagrad(0.1)),
    "corpus_keras_sgd": lambda: corpus(keras.optimizers.SGD(0.1)),
    "hierarchy_sparse_adagrad": hierarchy,
    "device_pairs_sparse_adagrad": device_pairs,
}


def lowered_text(model, x, y):
    """The HLO text of `model.train_step` on `(x, y)`, before XLA's optimizations."""
    model.optimizer.build(model.trainable_variables)
    state = ([v.value for v in model.trainable_variables],
             [v.value for v in model.non_trainable_variables],
             [v.value for v in model.optimizer.variables],
             [v.value for v in model.metrics_variables])
    lowered = jax.jit(model.train_step).lower(state, (x, y))
    return lowered.compiler_ir("hlo").as_hlo_text()


def main(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name, make in CASES.items():
        keras.utils.set_random_seed(0)
        (out / f"{name}.hlo").write_text(lowered_text(*make()))


if __name__ == "__main__":
    main(sys.argv[1])
