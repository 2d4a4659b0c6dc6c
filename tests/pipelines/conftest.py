"""Fixtures of the pipeline tests: tiny corpora written to temporary files."""

from pathlib import Path

import numpy as np
import pytest

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
NEWS = SHARED_DATA / "corpus" / "news2017.txt.gz"


@pytest.fixture
def write_corpus(tmp_path):
    """Write lines to ``tmp_path/name`` (UTF-8) and return the path."""

    def write(lines, name="corpus.txt"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return path

    return write


# Two topics of four words each; the CLI tests' corpora draw a line from one
# of them (alternately) plus "the".
TOPICS = (["cat", "dog", "horse", "cow"], ["hammer", "saw", "drill", "wrench"])


@pytest.fixture(scope="session")
def two_topic_corpus(tmp_path_factory):
    """`make(lines, length)`: a new `corpus.txt` of `lines` lines of `length`
    words, line `i` drawn from `TOPICS[i % 2]` and "the" (seed 0), in a
    directory of its own."""

    def make(lines, length):
        rng = np.random.default_rng(0)
        text = [" ".join(rng.choice(TOPICS[i % 2] + ["the"], length)) for i in range(lines)]
        path = tmp_path_factory.mktemp("topics") / "corpus.txt"
        path.write_text("\n".join(text) + "\n", encoding="utf-8")
        return path

    return make
