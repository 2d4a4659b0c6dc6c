"""Trains, or loads and scores, a corpus run on the backend in KERAS_BACKEND.

    python backend_run.py train CORPUS RUN_DIR OUT.npz
    python backend_run.py load RUN_DIR OUT.npz [RETRAINED.keras [SERVE_DIR]]
    python backend_run.py train ... -- load ...   (both, in this order, one process)

`train` runs `train_corpus` (engine "keras") on a tiny corpus; `load` loads
a run written on another backend. Both write the model's energies on fixed
examples and the word table to OUT.npz; `load` with RETRAINED also fits the
loaded model on the examples for one epoch and saves it there, and with
SERVE_DIR exports the run for TF Serving there (`export_run`, version 1).
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402


def examples(vocab_size):
    rng = np.random.default_rng(7)
    n = 32
    x = {"word": rng.integers(0, vocab_size, n).astype("int32"),
         "context": rng.integers(0, vocab_size, n).astype("int32"),
         "negatives": rng.integers(0, vocab_size, (n, 1)).astype("int32")}
    y = np.zeros((n, 2), "float32")
    y[:, 0] = 1
    return x, y


def scores(model, path):
    table = model.get_layer("words")
    x, _ = examples(table.input_dim)
    np.savez(path, energies=np.asarray(model.predict(x, verbose=0)),
             means=np.asarray(table.means.numpy()),
             variances=np.asarray(table.variances.numpy()),
             backend=np.array(keras.backend.backend()),
             model_class=np.array(type(model).__name__))


def main(argv):
    if "--" in argv:
        cut = argv.index("--")
        main(argv[:cut])
        return main(argv[cut + 1:])
    from keras_gauss.runs import load_run

    if argv[0] == "train":
        from keras_gauss.pipelines.train import CorpusConfig
        from keras_gauss.pipelines.train import train_corpus

        corpus, run_dir, out = argv[1:]
        config = CorpusConfig(dim=8, epochs=3, window=3, min_count=1, sample=0.0,
                              batch_size=256, learning_rate=0.1, seed=0, engine="keras")
        train_corpus(config, corpus, run_dir, verbose=0)
        scores(load_run(run_dir).model, out)
    else:
        run_dir, out, *retrained = argv[1:]
        model = load_run(run_dir).model
        scores(model, out)
        if len(retrained) > 1:
            from keras_gauss.export.serving import export_run

            export_run(run_dir, retrained[1])
        if retrained:
            x, y = examples(model.get_layer("words").input_dim)
            model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
            model.save(retrained[0])


if __name__ == "__main__":
    main(sys.argv[1:])
