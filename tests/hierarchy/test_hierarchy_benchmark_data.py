from pathlib import Path

import pytest

from keras_gauss.hierarchy.benchmark_data import read_entailment, read_hyperlex

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
HYPERLEX = DATA / "hyperlex" / "hyperlex-nouns.txt"
BARONI = DATA / "entailment" / "baroni2012.tsv"

HYPERLEX_TEXT = """WORD1 WORD2 POS TYPE AVG_SCORE AVG_SCORE_0_10 STD SCORES..
# a comment
Conflict disagreement N r-hyp-1 5.20 8.67 1.25 5 6 6 6 6 5 2 6 4 6

mason worker N hyp-3 4.50 7.5 1.76 6 6 4 4 6 3 6 3 5 0 5 6
run walk V hyp-1 1.0 1.67 1.0 1 1
"""


def write(tmp_path, text, name="data.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_read_hyperlex(tmp_path):
    path = write(tmp_path, HYPERLEX_TEXT)
    assert read_hyperlex(path) == [("conflict", "disagreement", 5.2), ("mason", "worker", 4.5)]
    assert read_hyperlex(path, pos=None)[-1] == ("run", "walk", 1.0)
    assert read_hyperlex(path, pos="V") == [("run", "walk", 1.0)]


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ("mason worker N hyp-3 4.50 7.5", "at least 7"),
        ("mason worker N hyp-3 high 7.5 1.76 6 6", "AVG_SCORE"),
        ("mason worker N hyp-3 nan 7.5 1.76 6 6", "AVG_SCORE"),
    ],
)
def test_read_hyperlex_malformed_line_names_file_and_line(tmp_path, bad_line, message):
    path = write(tmp_path, HYPERLEX_TEXT + bad_line + "\n", name="hl.txt")
    with pytest.raises(ValueError, match=message) as error:
        read_hyperlex(path)
    assert "hl.txt" in str(error.value) and "line 7" in str(error.value)


def test_read_entailment(tmp_path):
    text = "# header comment\nAche\tpain\tTrue\thyper\n\nadult\tgent\tfalse\trandom\ncat\tanimal\tTRUE\n"
    assert read_entailment(write(tmp_path, text)) == [
        ("ache", "pain", True),
        ("adult", "gent", False),
        ("cat", "animal", True),
    ]


def test_read_entailment_takes_comma_and_space_separated_files(tmp_path):
    # A CSV or space-separated file was refused ("expected at least 3
    # tab-separated columns ... got 1") though its fields are unambiguous.
    tab = read_entailment(write(tmp_path, "ache\tpain\tTrue\thyper\nice cream\tfood\tfalse\n"))
    text = "ache, pain, True, hyper\n\"ice cream\",food,false\n"
    assert read_entailment(write(tmp_path, text, name="e.csv")) == tab
    text = "# word1 word2 label\nache  pain True hyper\nice_cream food false\n"
    assert read_entailment(write(tmp_path, text, name="e.txt")) == [
        ("ache", "pain", True), ("ice_cream", "food", False)]


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ("cat animal", "at least 3 columns .* separated by tabs, else commas, else spaces"),
        ("cat,animal", "at least 3 columns"),
        ("cat\tanimal\tyes\thyper", "must be True or False"),
        ("cat\t\tTrue\thyper", "empty word"),
    ],
)
def test_read_entailment_malformed_line_names_file_and_line(tmp_path, bad_line, message):
    path = write(tmp_path, "ache\tpain\tTrue\thyper\n\n" + bad_line + "\n", name="ent.tsv")
    with pytest.raises(ValueError, match=message) as error:
        read_entailment(path)
    assert "ent.tsv" in str(error.value) and "line 3" in str(error.value)


@pytest.mark.skipif(not DATA.is_dir(), reason="shared data directory not available")
def test_real_files():
    hyperlex = read_hyperlex(HYPERLEX)
    assert len(hyperlex) == 2163
    assert hyperlex[0] == ("conflict", "disagreement", 5.2)
    assert all(0.0 <= score <= 6.0 for _, _, score in hyperlex)
    baroni = read_entailment(BARONI)
    assert len(baroni) == 2770
    assert sum(label for _, _, label in baroni) == 1385
    assert ("ache", "pain", True) in baroni
