"""Reproducibility (issue 12, item 8): one native thread, the keras engine and
train-wordnet give bitwise-identical tables for a seed; Hogwild threads
(the default `--threads 0`) need not."""

import pytest

from keras_gauss.cli import main
from run_files import assert_same_run

TRAIN = ["--dim", "4", "--epochs", "2", "--window", "2", "--min-count", "1",
         "--sample", "0.2", "--batch-size", "16", "--seed", "3"]


@pytest.fixture(scope="module")
def corpus(two_topic_corpus):
    return two_topic_corpus(200, 8)


@pytest.mark.parametrize("engine", [["--engine", "native", "--threads", "1"],
                                    ["--engine", "keras"]])
def test_same_seed_same_tables_bit_for_bit(corpus, tmp_path, engine):
    for name in ("a", "b"):
        out = tmp_path / name
        assert main(["train-corpus", "--corpus", str(corpus), "--out", str(out),
                     *TRAIN, *engine]) == 0
    assert_same_run(tmp_path / "a", tmp_path / "b")
