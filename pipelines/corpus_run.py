"""What every corpus engine writes into a run: its metrics and `run.json`'s entries.

Example:

>>> corpus_run_info(type("Config", (), {"energy": "el"})())["table"]
'words'
"""

import dataclasses

import numpy as np

from keras_gauss.pipelines.sampling import keep_probabilities


def no_pairs(sample=0.0):
    """The error of a corpus run without a pair: its lines have fewer than
    two in-vocabulary tokens, or (subsampling with threshold `sample`) an
    epoch kept fewer than two of every line.

    Example:

    >>> no_pairs()
    'the corpus yields no (word, context) pairs: every line has fewer than two in-vocabulary tokens.'
    """
    if sample > 0:
        return ("the corpus yields no (word, context) pairs: every line has fewer than two "
                f"in-vocabulary tokens, or subsampling (--sample {sample}) kept fewer than two "
                "of every line; give --sample 0 (subsampling off) or a larger corpus.")
    return ("the corpus yields no (word, context) pairs: every line has fewer than two "
            "in-vocabulary tokens.")


def check_vocabulary(words, config):
    """Raises `ValueError` (one line) for a vocabulary of one word: every
    negative would be that word, the context itself, so the loss stays at
    the margin and nothing is learned.

    Args:
        words: the vocabulary's words.
        config: the run's `CorpusConfig` (for the settings the message names).

    Example:

    >>> check_vocabulary(["cat", "dog"], None)
    >>> check_vocabulary(["cat"], type("Config", (), {"min_count": 5, "max_size": None})())
    Traceback (most recent call last):
    ValueError: the vocabulary is one word ('cat', --min-count 5): its negatives would all be 'cat', the context itself, and nothing would be learned; give a corpus of more distinct words or a lower --min-count.
    """
    if len(words) != 1:
        return
    limit = (f"--max-size {config.max_size}" if config.max_size == 1
             else f"--min-count {config.min_count}")
    advice = ("a larger --max-size" if config.max_size == 1 else
              "a lower --min-count" if config.min_count > 1 else None)
    raise ValueError(f"the vocabulary is one word ({words[0]!r}, {limit}): its negatives "
                     f"would all be {words[0]!r}, the context itself, and nothing would be "
                     "learned; give a corpus of more distinct words"
                     + (f" or {advice}." if advice else "."))


# The share of the tokens an epoch keeps below which `start_lines` says so.
SUBSAMPLING_NOTE_BELOW = 0.5


def start_lines(config, counts, engine):
    """The lines a corpus run prints as it starts: what it trains, and, when
    subsampling (`config.sample`) keeps less than `SUBSAMPLING_NOTE_BELOW`
    of the tokens an epoch (a small corpus under the default threshold),
    how many it keeps, as gensim's "downsampling leaves estimated N word
    corpus" line, with the setting that keeps more.

    Args:
        config: the run's `CorpusConfig`.
        counts: the vocabulary's counts (`(rows,)`).
        engine: the engine's name.

    Example:

    >>> from keras_gauss.pipelines.train import CorpusConfig
    >>> for line in start_lines(CorpusConfig(dim=4), [600, 300, 100], "native"):
    ...     print(line)
    3 words, 1,000 tokens; 4-d diagonal EL, window 10, 1 negative(s), 1 epoch(s), engine native
    downsampling (--sample 0.0001) leaves estimated 17 word corpus (1.7% of prior 1,000) an epoch; give a higher --sample to keep more (--sample 0: no subsampling).
    """
    counts = np.asarray(counts, np.float64)
    total = int(counts.sum())
    lines = [f"{len(counts):,} words, {total:,} tokens; {config.dim}-d {config.covariance} "
             f"{config.energy.upper()}, window {config.window}, {config.negatives} "
             f"negative(s), {config.epochs} epoch(s), engine {engine}"]
    kept = float((counts * keep_probabilities(counts, config.sample)).sum())
    if total and kept < SUBSAMPLING_NOTE_BELOW * total:
        lines.append(f"downsampling (--sample {config.sample:g}) leaves estimated "
                     f"{kept:,.0f} word corpus ({100 * kept / total:.1f}% of prior {total:,}) "
                     "an epoch; give a higher --sample to keep more (--sample 0: no "
                     "subsampling).")
    return lines


def corpus_metrics(config, train_seconds, pairs, tokens, losses, vocab_size):
    """The `metrics.json` entries of a corpus run, whichever engine ran it."""
    return {
        "train_seconds": train_seconds,
        "seconds_per_epoch": train_seconds / config.epochs,
        "pairs": pairs,
        "pairs_per_second": pairs / train_seconds,
        "tokens": tokens,
        "tokens_per_second": tokens / train_seconds,
        "final_loss": losses[-1] if losses else None,
        "loss_per_epoch": losses,
        "vocab_size": vocab_size,
        "batch_size": config.batch_size,
        "config": dataclasses.asdict(config),
    }


def corpus_run_info(config):
    """`run.json`'s entries of a corpus run (`keras_gauss.run_format.write_run_info`)."""
    return {"kind": "corpus", "energy": config.energy, "table": "words",
            "vocabulary": "vocab.tsv", "context_table": "contexts"}
