"""Tokenization with ``tf.strings`` ops, usable inside ``tf.data`` pipelines.

Rules of :func:`tokenize`:

* ``lowercase=True`` lowercases with Unicode rules (invalid UTF-8 becomes U+FFFD);
* ``strip_punctuation=True`` turns every character that is not a Unicode letter,
  digit, apostrophe (``'`` or ``’``) or hyphen into a separator, then drops the
  apostrophes and hyphens that are not *inside* a word (leading, trailing or
  repeated, as in ``--``): ``"Don't 'quote' state-of-the-art -- ok!"`` gives
  ``don't quote state-of-the-art ok``;
* tokens are then split on whitespace (so with ``strip_punctuation=False``
  punctuation stays attached: ``"ok!"`` is one token).

:func:`token_ids` maps lines straight to vocabulary ids under the same rules.
It runs a C++ op (``keras_gauss/fused/tokenize.cc``, built with the fused
training ops) on the lines that are pure ASCII and these ``tf.strings`` ops
on the others, so its ids are the same as
``vocab.lookup(tokenize(lines))`` with unknown words dropped, at a fraction
of the cost (``tf.strings``' lowercasing, three regular expressions, split
and hash-table lookup cost the corpus trainer as much CPU as training).
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["token_ids", "tokenize"]

_NON_WORD = r"[^\p{L}\p{N}\s'’-]+|['’-]{2,}"
_LEADING_MARKS = r"(^|\s)['’-]+"
_TRAILING_MARKS = r"['’-]+(\s|$)"


def tokenize(lines: tf.Tensor, lowercase: bool = True, strip_punctuation: bool = True) -> tf.RaggedTensor:
    """Split text into tokens.

    Args:
        lines: ``tf.string`` tensor of any rank (typically a batch of lines).
        lowercase: Lowercase the text first.
        strip_punctuation: Remove punctuation, keeping intra-word apostrophes and
            hyphens (see the module docstring).

    Returns:
        A ``tf.RaggedTensor`` of ``tf.string`` with one more (ragged) dimension
        than ``lines`` holding the tokens (for a scalar line, a dense 1-D tensor).

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


def _fused_module(use_fused):
    if use_fused is False:
        return None
    from keras_gauss.fused import build

    module = build.load()
    if module is None and use_fused:
        raise RuntimeError(f"the fused tokenizer op is unavailable: {build.error()}")
    return module


def _tf_token_ids(lines, vocab, lowercase, strip_punctuation):
    ids = vocab.lookup(tokenize(lines, lowercase, strip_punctuation))
    return tf.ragged.boolean_mask(ids, ids >= 0)


def token_ids(lines: tf.Tensor, vocab, lowercase: bool = True, strip_punctuation: bool = True,
              use_fused: bool | None = None) -> tf.RaggedTensor:
    """Vocabulary ids of the tokens of each line, unknown words dropped.

    The same as ``vocab.lookup(tokenize(lines, lowercase, strip_punctuation))``
    without the ``-1`` entries, computed by a C++ op for ASCII lines (see the
    module docstring); in a ``tf.data`` map or eagerly.

    Args:
        lines: ``tf.string`` vector of lines.
        vocab: the ``pipelines.Vocabulary``.
        lowercase: Lowercase the text first.
        strip_punctuation: Remove punctuation (see the module docstring).
        use_fused: ``True`` requires the C++ op, ``False`` uses only
            ``tf.strings`` ops, ``None`` (default) uses the op when it can be
            built.

    Returns:
        An int32 ``tf.RaggedTensor`` of shape ``(lines, None)``.

    Raises:
        RuntimeError: ``use_fused=True`` and the op cannot be built.

    Example:
        >>> vocab = Vocabulary(["hello", "world"], [2, 1])  # doctest: +SKIP
        >>> token_ids(tf.constant(["Hello, World!", "Hello you"]), vocab).to_list()  # doctest: +SKIP
        [[0, 1], [0]]
    """
    lines = tf.convert_to_tensor(lines, tf.string)
    if lines.shape.rank != 1:
        raise ValueError(f"token_ids takes a vector of lines, got shape {lines.shape}")
    module = _fused_module(use_fused)
    if module is None:
        return _tf_token_ids(lines, vocab, lowercase, strip_punctuation)
    flat, splits, fallback = module.keras_gauss_ascii_token_ids(
        lines, vocab.words_tensor, lowercase=lowercase, strip_punctuation=strip_punctuation)
    fast = tf.RaggedTensor.from_row_splits(flat, splits, validate=False)
    # Lines with non-ASCII bytes: tf.strings ops, then every row back in place.
    slow_rows = tf.where(fallback)[:, 0]
    fast_rows = tf.where(tf.logical_not(fallback))[:, 0]
    slow = _tf_token_ids(tf.gather(lines, slow_rows), vocab, lowercase, strip_punctuation)
    merged = tf.concat([tf.gather(fast, fast_rows), tf.cast(slow, tf.int32)], axis=0)
    return tf.gather(merged, tf.argsort(tf.concat([fast_rows, slow_rows], axis=0)))
