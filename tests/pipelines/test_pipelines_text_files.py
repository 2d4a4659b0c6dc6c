"""Corpus paths without TensorFlow (`keras_gauss.pipelines.text_files`)."""

import pytest

from keras_gauss.pipelines.text_files import expand_paths


def test_sub_directories_of_a_corpus_directory_are_named_never_skipped_silently(tmp_path):
    # corpus/2019/*.txt and corpus/2020/*.txt beside corpus/top.txt trained
    # on top.txt alone, without a word.
    corpus = tmp_path / "corpus"
    for name in ("2019", "2020", ".hidden"):
        (corpus / name).mkdir(parents=True)
        (corpus / name / "a.txt").write_text("the cat sat\n")
    (corpus / "top.txt").write_text("the dog sat\n")
    with pytest.warns(UserWarning, match=r"^--corpus .*corpus: training on its 1 file\(s\) "
                                         r"only; its 2 sub-directories \(2019, 2020\) are "
                                         r"not read\.$"):
        assert expand_paths(corpus, recursive=False) == [corpus / "top.txt"]
    assert expand_paths(corpus, recursive=True) == [
        corpus / "2019" / "a.txt", corpus / "2020" / "a.txt", corpus / "top.txt"]
    (corpus / "top.txt").unlink()
    with pytest.raises(ValueError, match=r"corpus directory .*corpus holds no files, only 2 "
                                         r"sub-directories \(2019, 2020\), whose files are "
                                         "not read"):
        expand_paths(corpus, recursive=False)
