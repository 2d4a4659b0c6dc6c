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


def test_heavy_subsampling_is_announced_with_the_setting_that_keeps_more(tmp_path, capsys):
    # A toy corpus under the default --sample 1e-4 trained on about 5% of
    # its tokens, unannounced (gensim logs "downsampling leaves estimated N
    # word corpus (P% of prior M)").
    from keras_gauss.cli import main
    from keras_gauss.pipelines.corpus_run import start_lines
    from keras_gauss.pipelines.train import CorpusConfig

    corpus = tmp_path / "toy.txt"
    corpus.write_text("the cat sat on the mat\nthe dog sat on the log\n" * 500)
    assert main(["train-corpus", "--corpus", str(corpus), "--out", str(tmp_path / "r"),
                 "--engine", "native", "--min-count", "1", "--dim", "4",
                 "--checkpoint-every", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    note = next(i for i, line in enumerate(lines) if line.startswith("downsampling"))
    assert lines[note - 1].startswith("7 words, 6,000 tokens; 4-d"), lines
    assert lines[note].startswith("downsampling (--sample 0.0001) leaves estimated ")
    assert lines[note].endswith("% of prior 6,000) an epoch; give a higher --sample to keep "
                                "more (--sample 0: no subsampling).")
    kept = float(lines[note].split("estimated ")[1].split(" word")[0])
    assert 0 < kept < 0.1 * 6000

    def estimate(sample):  # the advice's direction: a higher --sample keeps more
        counts = [3000, 1000, 1000, 500, 250, 125, 125]
        line = start_lines(CorpusConfig(sample=sample), counts, "native")[-1]
        return float(line.split("estimated ")[1].split(" word")[0].replace(",", ""))

    assert estimate(1e-4) < estimate(1e-3)
    # subsampling off, or keeping most of the tokens: nothing to announce
    counts = [300, 200, 100]
    assert len(start_lines(CorpusConfig(sample=0.0), counts, "native")) == 1
    assert len(start_lines(CorpusConfig(sample=0.1), counts, "native")) == 1
