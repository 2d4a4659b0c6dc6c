"""train-wordnet is reproducible: the same seed gives the same tables, bit for bit."""


from keras_gauss.hierarchy.train import WordNetConfig, train_wordnet
from run_files import assert_same_run


def test_same_seed_same_tables_bit_for_bit(tmp_path):
    config = WordNetConfig(root="mammal.n.01", dim=4, epochs=1, batch_size=256,
                           val_size=0.05, test_size=0.05, seed=5)
    for name in ("a", "b"):
        train_wordnet(config, tmp_path / name, verbose=0)
    assert_same_run(tmp_path / "a", tmp_path / "b")
