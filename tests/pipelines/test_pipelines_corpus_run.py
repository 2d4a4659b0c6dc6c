"""What every corpus engine checks before training (`keras_gauss.pipelines.corpus_run`)."""

import pytest

from cli_errors import cli_exit

TRAIN = ["--dim", "4", "--epochs", "1", "--window", "2", "--sample", "0",
         "--batch-size", "64", "--seed", "0", "--checkpoint-every", "0"]


@pytest.mark.parametrize("engine", ["native", "keras"])
def test_a_vocabulary_of_one_word_is_one_line_and_no_run(tmp_path, capsys, engine):
    # With one word every negative is the context itself: the loss stays at
    # the margin and the tables at their start (a run was written anyway).
    one = tmp_path / "one.txt"
    one.write_text("word word word\nword word\n")
    code, err = cli_exit(["train-corpus", "--corpus", one, "--out", tmp_path / "r",
                          "--engine", engine, "--min-count", "1", *TRAIN], capsys)
    assert code == 2 and "the vocabulary is one word ('word', --min-count 1)" in err, err
    assert "more distinct words." in err and not (tmp_path / "r").exists()
    two = tmp_path / "two.txt"
    two.write_text("the cat sat\nthe dog sat\nthe cat\n")
    code, err = cli_exit(["train-corpus", "--corpus", two, "--out", tmp_path / "r",
                          "--engine", engine, "--min-count", "1", "--max-size", "1",
                          *TRAIN], capsys)
    assert code == 2 and "('the', --max-size 1)" in err and "a larger --max-size" in err
    assert not (tmp_path / "r").exists()
