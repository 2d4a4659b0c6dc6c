import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_gauss.tf_data import array_batches, without_autotune


def test_without_autotune_turns_the_autotuner_off_and_leaves_the_input():
    data = tf.data.Dataset.range(5).map(lambda i: i * 2, num_parallel_calls=tf.data.AUTOTUNE)
    untuned = without_autotune(data.prefetch(tf.data.AUTOTUNE))
    assert untuned.options().autotune.enabled is False
    assert data.options().autotune.enabled is None
    assert list(untuned.as_numpy_iterator()) == [0, 2, 4, 6, 8]


@pytest.mark.parametrize("rows, batch_size, sizes", [(7, 3, [3, 3, 1]), (6, 3, [3, 3]),
                                                     (2, 5, [2])])
def test_array_batches_are_the_rows_in_order_without_the_autotuner(rows, batch_size, sizes):
    x = {"word": np.arange(rows), "negatives": np.arange(2 * rows).reshape(rows, 2)}
    y = np.arange(rows, dtype="float32")[:, None] * [1, 0]
    data = array_batches(x, y, batch_size)
    assert data.options().autotune.enabled is False
    batches = list(data.as_numpy_iterator())
    assert [len(b[1]) for b in batches] == sizes
    assert np.array_equal(np.concatenate([b[0]["negatives"] for b in batches]), x["negatives"])
    assert np.array_equal(np.concatenate([b[1] for b in batches]), y)
    assert [b.tolist() for b in array_batches(np.arange(3), batch_size=2).as_numpy_iterator()] == [
        [0, 1], [2]]


def test_array_batches_train_as_fit_on_the_arrays():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(50, 3)).astype("float32"), rng.normal(size=(50, 1)).astype("float32")
    weights = []
    for feed in ("arrays", "array_batches"):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        if feed == "arrays":
            model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        else:
            model.fit(array_batches(x, y, batch_size=16), epochs=2, shuffle=False, verbose=0)
        weights.append(model.get_weights())
    for a, b in zip(*weights):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_shuffled_array_batches_read_every_row_once_in_a_new_order_each_epoch():
    x = {"word": np.arange(10), "negatives": np.arange(20).reshape(10, 2)}
    y = np.arange(10, dtype="float32")[:, None] * [1, 0]
    data = array_batches(x, y, batch_size=4, shuffle=True, seed=3)
    assert data.options().autotune.enabled is False
    assert int(data.cardinality()) == 3  # fit knows the steps of an epoch
    epochs = []
    for _ in range(2):  # an iteration a fit epoch
        batches = list(data.as_numpy_iterator())
        assert [len(b[1]) for b in batches] == [4, 4, 2]
        words = np.concatenate([b[0]["word"] for b in batches])
        assert sorted(words.tolist()) == list(range(10))  # every row once
        # the rows of each input and of the labels stay together
        assert np.array_equal(np.concatenate([b[0]["negatives"] for b in batches]),
                              x["negatives"][words])
        assert np.array_equal(np.concatenate([b[1] for b in batches])[:, 0], words)
        epochs.append(words.tolist())
    assert epochs[0] != epochs[1] and epochs[0] != list(range(10))
    again = array_batches(x, y, batch_size=4, shuffle=True, seed=3)
    assert [np.concatenate([b[0]["word"] for b in again.as_numpy_iterator()]).tolist()
            for _ in range(2)] == epochs  # the seed's orders


@pytest.mark.parametrize("x, y, batch_size, message", [
    (np.zeros(4), None, 0, "batch_size must be an integer >= 1, got 0"),
    (np.zeros(4), None, 2.0, "batch_size must be an integer >= 1, got 2.0"),
    (np.zeros(4), np.zeros(3), 2, r"different numbers of rows: \[3, 4\]"),
    (np.zeros(0), None, 2, "no rows to batch"),
])
def test_array_batches_refuse_bad_input_in_one_line(x, y, batch_size, message):
    with pytest.raises(ValueError, match=message):
        array_batches(x, y, batch_size)
    with pytest.raises(ValueError, match="shuffle must be True or False, got 'yes'"):
        array_batches(np.zeros(4), batch_size=2, shuffle="yes")
