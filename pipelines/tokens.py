"""Tokenization with `tf.strings` ops, usable inside `tf.data` pipelines.

Rules of `tokenize`:

* `lowercase=True` lowercases with Unicode rules (invalid UTF-8 becomes U+FFFD);
* `strip_punctuation=True` turns every character that is not a Unicode letter,
  combining mark (a vowel sign of Hindi or Thai, an accent written apart:
  part of its word), digit, apostrophe (`'` or `’`) or hyphen into a
  separator, then drops the
  apostrophes and hyphens that are not *inside* a word (leading, trailing or
  repeated, as in `--`): `"Don't 'quote' state-of-the-art -- ok!"` gives
  `don't quote state-of-the-art ok`;
* tokens are then split on whitespace (so with `strip_punctuation=False`
  punctuation stays attached: `"ok!"` is one token).
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["tokenize"]

_NON_WORD = r"[^\p{L}\p{M}\p{N}\s'’-]+|['’-]{2,}"
_LEADING_MARKS = r"(^|\s)['’-]+"
_TRAILING_MARKS = r"['’-]+(\s|$)"


def tokenize(lines: tf.Tensor, lowercase: bool = True, strip_punctuation: bool = True) -> tf.RaggedTensor:
    """Split text into tokens.

    Args:
        lines: `tf.string` tensor of any rank (typically a batch of lines).
        lowercase: Lowercase the text first.
        strip_punctuation: Remove punctuation, keeping intra-word apostrophes and
            hyphens (see the module docstring).

    Returns:
        A `tf.RaggedTensor` of `tf.string` with one more (ragged) dimension
        than `lines` holding the tokens (for a scalar line, a dense 1-D tensor).

    Example:
        >>> tokenize(tf.constant(["Hello, World!"])).to_list()
        [[b'hello', b'world']]
    """
    if lowercase:
        lines = tf.strings.lower(lines, encoding="utf-8")
    if strip_punctuation:
        lines = tf.strings.regex_replace(lines, _NON_WORD, " ")
        lines = tf.strings.regex_replace(lines, _LEADING_MARKS, r"\1")
        lines = tf.strings.regex_replace(lines, _TRAILING_MARKS, r"\1")
    return tf.strings.split(lines)
