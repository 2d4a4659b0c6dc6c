"""train-wordnet is reproducible: the same seed gives the same tables, bit for bit."""

import numpy as np

from keras_gauss.hierarchy.train import WordNetConfig, train_wordnet
from keras_gauss.runs import load_run


def test_same_seed_same_tables_bit_for_bit(tmp_path):
    config = WordNetConfig(root="mammal.n.01", dim=4, epochs=1, batch_size=256,
                           val_size=0.05, test_size=0.05, seed=5)
    tables = []
    for name in ("a", "b"):
        train_wordnet(config, tmp_path / name, verbose=0)
        tables.append([w.numpy() for w in load_run(tmp_path / name).model.weights])
    for first, second in zip(*tables):
        np.testing.assert_array_equal(first, second)
