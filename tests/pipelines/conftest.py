"""Fixtures of the pipeline tests: tiny corpora written to temporary files."""

from pathlib import Path

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
