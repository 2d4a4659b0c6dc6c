"""Trains small keras_gauss models on the backend in KERAS_BACKEND (the torch check).

    KERAS_BACKEND=torch python torch_run.py OUT_DIR

For each model of `MODELS`: starts from `OUT_DIR/NAME.start.npz` (the
weights the parent wrote), fits two epochs on `ranking_data()` in order, saves
`OUT_DIR/NAME.torch.keras` and writes the trained weights, the losses and
the predictions on `ranking_data(seed=1)` to `OUT_DIR/NAME.torch.npz`. The parent
(`test_torch_backend.py`) does the same on TensorFlow and compares.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import keras_gauss as kg  # noqa: E402

# tests/keras_gauss, for the shared models (the child jobs have it on the path; a run by hand not)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ranking_models  # noqa: E402
from ranking_models import DIM, NEGATIVES, VOCAB, ranking_data  # noqa: E402


def el_two_tables():
    model = kg.GaussianModel(*ranking_models.el_two_tables())
    model.compile(optimizer=kg.SparseAdagrad(0.1), loss=kg.MaxMarginRanking(margin=0.5))
    return model


def kl_shared_table():
    model = kg.GaussianModel(*ranking_models.kl_shared_table())
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
    x, y = ranking_data()
    history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    probe, _ = ranking_data(seed=1)
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

    x, y = ranking_data()
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
