"""Trains small keras-gauss models on the backend in KERAS_BACKEND; writes the results.

    KERAS_BACKEND=jax python backend_training.py OUT.npz

Every model starts from the same tables (drawn here with NumPy: Keras's
random initializers draw different numbers on each backend), sees the same
examples in the same order, and its tables and per-epoch losses are saved
under `<case>/<variable path>` and `<case>/loss`. On JAX the script also
records how many variables took `SparseAdagrad`'s row update, and checks on
the traced train step that no operation but a row scatter (or the row update
kernel, `keras_gauss.kernels`) makes an array of a table's shape (a dense
gradient or a dense update would).
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_gauss.callbacks import ProjectConstraints  # noqa: E402
from keras_gauss.constraints import NormClip  # noqa: E402
from keras_gauss.constraints import VarianceClip  # noqa: E402
from keras_gauss.hierarchy.model import build_kl_model  # noqa: E402
from keras_gauss.losses import MaxMarginRanking  # noqa: E402
from keras_gauss.losses import ThresholdedDivergence  # noqa: E402
from keras_gauss.optimizers import SparseAdagrad  # noqa: E402
from keras_gauss.pipelines.model import build_corpus_model  # noqa: E402

VOCAB, K, N = 40, 2, 64


def start_tables(model, seed):
    rng = np.random.default_rng(seed)
    for v in model.weights:
        if v.path.endswith("means"):
            v.assign(rng.uniform(-0.6, 0.6, v.shape).astype("float32"))
        else:
            v.assign(rng.uniform(0.1, 3.0, v.shape).astype("float32"))


def corpus_data(seed):
    rng = np.random.default_rng(seed)
    x = {"word": rng.integers(0, 30, N).astype("int32"),
         "context": rng.integers(0, 30, N).astype("int32"),
         "negatives": rng.integers(0, 30, (N, K)).astype("int32")}
    y = np.zeros((N, 1 + K), "float32")
    y[:, 0] = 1
    return x, y


def hierarchy_data(seed):
    rng = np.random.default_rng(seed)
    x = {name: rng.integers(0, 30, shape).astype("int32") for name, shape in (
        ("general", N), ("specific", N), ("neg_general", (N, K)), ("neg_specific", (N, K)))}
    y = np.zeros((N, 1 + K), "float32")
    y[:, 0] = 1
    return x, y


def cases():
    """name -> (model, data, fit keyword arguments)."""
    def corpus(energy, covariance="diagonal", optimizer=None, callbacks=(), steps=1):
        model = build_corpus_model(VOCAB, 4, negatives=K, energy=energy,
                                   covariance=covariance, max_norm=1.0,
                                   min_variance=0.2, max_variance=2.5)
        model.compile(optimizer=optimizer or SparseAdagrad(0.1),
                      loss=MaxMarginRanking(0.5), steps_per_execution=steps)
        model.scan_steps = steps > 1  # (on the CPU only when asked)
        return model, corpus_data(1), {"callbacks": list(callbacks)}

    def hierarchy(loss):
        model = build_kl_model(VOCAB, 4, negatives=K, max_norm=1.0,
                               min_variance=0.2, max_variance=2.5)
        model.compile(optimizer=SparseAdagrad(0.1), loss=loss)
        return model, hierarchy_data(2), {}

    return {
        "corpus_el": lambda: corpus("el"),
        # 4 steps an epoch: a call of 3 steps (on JAX one compiled scan), then 1
        "corpus_el_3_steps_a_call": lambda: corpus("el", steps=3),
        "corpus_kl_spherical": lambda: corpus("kl", "spherical"),
        "corpus_el_keras_adagrad": lambda: corpus(
            "el", optimizer=keras.optimizers.Adagrad(0.1)),
        "corpus_el_project": lambda: corpus("el", callbacks=[ProjectConstraints({
            "words/means": NormClip(0.3), "contexts/variances": VarianceClip(0.5, 1.5)})]),
        "hierarchy_ranking": lambda: hierarchy(MaxMarginRanking(1.0)),
        "hierarchy_thresholded": lambda: hierarchy(ThresholdedDivergence(0.5, 2.0)),
    }


def device_pairs_fit(steps_per_execution):
    """The corpus model trained 10 steps on pairs drawn on the device."""
    from keras_gauss.layers import SkipGramSampler
    from keras_gauss.pipelines.device_pairs import device_trainer

    model = build_corpus_model(VOCAB, 4, negatives=K, max_norm=1.0, min_variance=0.2,
                               max_variance=2.5)
    model.compile(optimizer=SparseAdagrad(0.1), loss=MaxMarginRanking(0.5))
    start_tables(model, seed=3)
    lines = np.repeat(np.arange(8, dtype="int32"), 12)
    ids = np.random.default_rng(4).integers(0, 30, len(lines)).astype("int32")
    sampler = SkipGramSampler.from_arrays(ids, lines, np.full(VOCAB, 0.8, "float32"),
                                          np.arange(30, dtype="int32"), window=3,
                                          batch_size=16, negatives=K, seed=5)
    trainer = device_trainer(model, sampler, steps_per_execution, scan=True)
    y = np.tile(np.array([[1.0] + [0.0] * K], "float32"), (10, 1))
    trainer.fit({"step": np.arange(10, dtype="int32")}, y, batch_size=1, epochs=1,
                shuffle=False, verbose=0)
    return model


def only_row_scatters_make_tables(model, x, y):
    """On JAX: every array of a table's shape in the traced step comes from a scatter."""
    import jax

    state = ([v.value for v in model.trainable_variables],
             [v.value for v in model.non_trainable_variables],
             [v.value for v in model.optimizer.variables],
             [v.value for v in model.metrics_variables])
    data = (x, y)
    jaxpr = jax.make_jaxpr(model.train_step)(state, data)
    shapes = {tuple(v.shape) for v in model.trainable_variables}
    makers = set()

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            for sub in _subjaxprs(eqn.params):
                walk(sub)
            for out in eqn.outvars:
                if tuple(getattr(out.aval, "shape", ())) in shapes:
                    name = eqn.primitive.name
                    if "target_name" in eqn.params:  # an FFI call: which one
                        name += ":" + str(eqn.params["target_name"])
                    makers.add(name)

    walk(jaxpr.jaxpr)
    return sorted(makers)


def _subjaxprs(params):
    from jax.extend.core import ClosedJaxpr
    from jax.extend.core import Jaxpr

    for value in params.values():
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, ClosedJaxpr):
                yield v.jaxpr
            elif isinstance(v, Jaxpr):
                yield v


def main(out):
    results = {}
    row_updates = []
    if keras.backend.backend() == "jax":
        from keras_gauss.models import RowGradient
        from keras_gauss.optimizers import sparse_adagrad

        original = sparse_adagrad.SparseAdagrad.update_step

        def counting(self, gradient, *args):
            if isinstance(gradient, RowGradient):
                row_updates.append(1)
            return original(self, gradient, *args)

        sparse_adagrad.SparseAdagrad.update_step = counting
    for name, make in cases().items():
        keras.utils.set_random_seed(0)
        model, (x, y), kwargs = make()
        start_tables(model, seed=3)
        history = model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0, **kwargs)
        results[f"{name}/loss"] = np.array(history.history["loss"])
        for v in model.trainable_variables:
            results[f"{name}/{v.path}"] = np.asarray(v.numpy())
        if name == "corpus_el" and keras.backend.backend() == "jax":
            results["jax/table_makers"] = np.array(
                only_row_scatters_make_tables(model, {k: v[:16] for k, v in x.items()}, y[:16]))
        if name == "corpus_el_3_steps_a_call" and keras.backend.backend() == "jax":
            results["jax/train_function"] = np.array(model.train_function.__qualname__)
    if keras.backend.backend() == "jax":
        for steps in (1, 4):  # the device-pairs trainer, 10 steps: 4 + 4 + 2 a call
            keras.utils.set_random_seed(0)
            model = device_pairs_fit(steps)
            for v in model.trainable_variables:
                results[f"jax/device_pairs_{steps}/{v.path}"] = np.asarray(v.numpy())
    results["jax/row_updates"] = np.array(len(row_updates))
    np.savez(out, **results)


if __name__ == "__main__":
    main(sys.argv[1])
