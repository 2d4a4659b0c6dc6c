import keras
import numpy as np
import pytest
from recording import RecordingSparseAdagrad

from keras_gauss import NormClip
from keras_gauss import ProjectConstraints


def _model(learning_rate=100.0):
    table = keras.layers.Embedding(
        20, 4, name="words",
        embeddings_initializer=keras.initializers.RandomNormal(stddev=3.0),
    )
    ids = keras.Input((2,), dtype="int32")
    out = keras.layers.Flatten()(table(ids))
    model = keras.Model(ids, out)
    optimizer = RecordingSparseAdagrad(norm_tables=[table.embeddings],
                                       learning_rate=learning_rate)
    # (torch runs one step per call)
    model.compile(optimizer=optimizer, loss="mse",
                  steps_per_execution=1 if keras.backend.backend() == "torch" else 4)
    return model, table, optimizer


def _data(n=32):
    rng = np.random.default_rng(0)
    return rng.integers(0, 20, (n, 2)), np.full((n, 8), 10.0, "float32")


def test_projects_after_every_step_and_restores():
    model, table, optimizer = _model()
    assert table.embeddings.constraint is None
    assert np.linalg.norm(table.embeddings.numpy(), axis=-1).max() > 0.5
    x, y = _data()
    callback = ProjectConstraints({"words/embeddings": NormClip(0.5)})
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[callback])

    assert int(optimizer.steps.numpy()) == 8
    max_norm = float(optimizer.max_row_norm.numpy())
    assert max_norm <= 0.5 + 1e-6
    assert max_norm > 0.49  # the steps pushed rows onto the bound
    # every row, touched or not, was projected when training began
    assert np.linalg.norm(table.embeddings.numpy(), axis=-1).max() <= 0.5 + 1e-6
    assert table.embeddings.constraint is None  # restored

    # Without the callback the next run is unconstrained again.
    optimizer.max_row_norm.assign(0.0)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert float(optimizer.max_row_norm.numpy()) > 1.0


def test_restores_a_previous_constraint():
    model, table, optimizer = _model()
    previous = keras.constraints.NonNeg()
    table.embeddings.constraint = previous
    x, y = _data(8)
    model.fit(x, y, batch_size=4, verbose=0,
              callbacks=[ProjectConstraints({"words/embeddings": NormClip(0.5)})])
    assert float(optimizer.max_row_norm.numpy()) <= 0.5 + 1e-6
    assert table.embeddings.constraint is previous


def test_unknown_path_names_it():
    model, _, _ = _model()
    x, y = _data(8)
    callback = ProjectConstraints({"wrods/embeddings": NormClip(0.5)})
    with pytest.raises(ValueError, match="wrods/embeddings"):
        model.fit(x, y, batch_size=4, verbose=0, callbacks=[callback])


def test_non_callable_constraint():
    with pytest.raises(TypeError, match="words/embeddings"):
        ProjectConstraints({"words/embeddings": 0.5})


@pytest.mark.parametrize("bad", [{}, None, [("words/embeddings", NormClip(1.0))]])
def test_constraints_must_be_a_non_empty_dict(bad):
    with pytest.raises(ValueError, match="non-empty dict"):
        ProjectConstraints(bad)
