"""Trains small keras_gauss models on the backend in KERAS_BACKEND (the torch check).

    KERAS_BACKEND=torch python torch_run.py OUT_DIR

For each model of `MODELS`: starts from `OUT_DIR/NAME.start.npz` (the
weights the parent wrote), fits two epochs on `data()` in order, saves
`OUT_DIR/NAME.torch.keras` and writes the trained weights, the losses and
the predictions on `data(seed=1)` to `OUT_DIR/NAME.torch.npz`. The parent
(`test_torch_backend.py`) does the same on TensorFlow and compares.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import keras_gauss as kg  # noqa: E402

VOCAB, DIM, NEGATIVES = 25, 6, 3


def data(seed=0, n=32):
    rng = np.random.default_rng(seed)
    x = [rng.integers(0, VOCAB, (n, 1)).astype("int32"),
         rng.integers(0, VOCAB, (n, 1 + NEGATIVES)).astype("int32")]
    y = np.tile(np.eye(1, 1 + NEGATIVES, dtype="float32"), (n, 1))
    return x, y


def el_two_tables():
    words = kg.GaussianEmbedding(VOCAB, DIM, name="words")
    contexts = kg.GaussianEmbedding(VOCAB, DIM, covariance="spherical", name="contexts")
    word = keras.Input((1,), dtype="int32", name="word")
    context = keras.Input((1 + NEGATIVES,), dtype="int32", name="context")
    model = kg.GaussianModel([word, context], kg.ELEnergy(include_constant=False)(
        *words(word), *contexts(context)))
    model.compile(optimizer=kg.SparseAdagrad(0.1), loss=kg.MaxMarginRanking(margin=0.5))
    return model


def kl_shared_table():
    nodes = kg.GaussianEmbedding(VOCAB, DIM, name="nodes", max_norm=1.5, min_variance=0.2,
                                 max_variance=3.0)
    general = keras.Input((1,), dtype="int32", name="general")
    specific = keras.Input((1 + NEGATIVES,), dtype="int32", name="specific")
    model = kg.GaussianModel([general, specific], kg.KLEnergy()(*nodes(general),
                                                                *nodes(specific)))
    model.compile(optimizer=kg.SparseAdagrad(0.3), loss=kg.MaxMarginRanking(margin=1.0))
    return model


def containment_threshold():
    nodes = kg.GaussianEmbedding(VOCAB, DIM, name="nodes")
    general = keras.Input((1,), dtype="int32", name="general")
    specific = keras.Input((1 + NEGATIVES,), dtype="int32", name="specific")
    model = kg.GaussianModel([general, specific], kg.ContainmentEnergy()(*nodes(general),
                                                                         *nodes(specific)))
    model.compile(optimizer=kg.SparseAdagrad(0.3),
                  loss=kg.ThresholdedDivergence(threshold=0.0, margin=0.25))
    return model


MODELS = {"el": el_two_tables, "kl": kl_shared_table, "containment": containment_threshold}


def train(name, out_dir):
    """Fits `MODELS[name]` from its start weights; returns `(model, arrays)`."""
    model = MODELS[name]()
    start = np.load(os.path.join(out_dir, f"{name}.start.npz"))
    model.set_weights([start[f"w{i}"] for i in range(len(model.weights))])
    x, y = data()
    history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    probe, _ = data(seed=1)
    arrays = {f"w{i}": keras.ops.convert_to_numpy(w) for i, w in enumerate(model.weights)}
    arrays["loss"] = np.array(history.history["loss"])
    arrays["predictions"] = keras.ops.convert_to_numpy(model.predict(probe, verbose=0))
    arrays["sparse"] = np.array(_sparse_gradients(model))
    return model, arrays


def _sparse_gradients(model):
    """On torch: whether, as in `GaussianModel`'s train step, every table's gradient is a
    sparse (row) tensor, not a dense one of the table's shape."""
    if keras.backend.backend() != "torch":
        return True
    import torch

    from keras_gauss.models.row_lookups import TorchRowLookups

    x, y = data()
    model.zero_grad()
    with TorchRowLookups():
        loss = model.compute_loss(x=x, y=y, y_pred=model(x, training=True))
    loss.backward()
    tables = [v for layer in model.layers if isinstance(layer, kg.GaussianEmbedding)
              for v in (layer.means, layer.variances)]
    sparse = all(v.value.grad is not None and v.value.grad.layout == torch.sparse_coo
                 for v in tables)
    model.zero_grad()
    return sparse


def main(out_dir):
    for name in MODELS:
        model, arrays = train(name, out_dir)
        model.save(os.path.join(out_dir, f"{name}.{keras.backend.backend()}.keras"))
        np.savez(os.path.join(out_dir, f"{name}.{keras.backend.backend()}.npz"), **arrays)


if __name__ == "__main__":
    main(sys.argv[1])
