"""Argument checks shared by the layers, optimizers, the native trainer and the jobs.

Every float setting is checked when it is given: a NaN or an infinity never
gets into a table, and a message names the setting.
"""

import dataclasses
import math
import os

import numpy as np


class CommandError(Exception):
    """A user-facing error of a command: `keras-gauss` prints it as
    `keras-gauss: error: ...` and exits with status 2."""


def check_number(value, name, *, above=None, at_least=None, at_most=None, below=None,
                 integer=False):
    """Returns `value` if it is a finite number in range; raises otherwise.

    Args:
        value: the setting (a Python or numpy number).
        name: how the message names it (`` `learning_rate` ``, `--window`).
        above / at_least / at_most / below: the range (open / closed bounds).
        integer: the value must be an integer.

    Raises:
        TypeError: not a number (or not an integer when `integer`).
        ValueError: not finite, or out of range.

    Example:

    >>> check_number(0.1, "`learning_rate`", above=0)
    0.1
    """
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, kinds):
        what = "an integer" if integer else "a number"
        raise TypeError(f"{name} must be {what}, got {value!r}.")
    if not integer and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}.")
    for bound, ok, text in ((above, lambda b: value > b, ">"),
                            (at_least, lambda b: value >= b, ">="),
                            (at_most, lambda b: value <= b, "<="),
                            (below, lambda b: value < b, "<")):
        if bound is not None and not ok(bound):
            raise ValueError(f"{name} must be {text} {bound}, got {value}.")
    return value


def listing(items, shown=5):
    """The first `shown` of `items`, quoted, and how many more: how a message
    names what it refuses or misses.

    Example:

    >>> listing(["a", "b", "c"], shown=2)
    "'a', 'b' and 1 more"
    """
    return (", ".join(map(repr, items[:shown]))
            + (f" and {len(items) - shown} more" if len(items) > shown else ""))


def utf8_words(words, what):
    """The words as `str` (bytes decoded), checked to be UTF-8 text.

    Args:
        words: `str` or `bytes` entries (others are returned as they are).
        what: how the message names the files (`"word2vec"`).

    Raises:
        ValueError: naming the entries UTF-8 cannot hold: bytes that do not
            decode, or a `str` with a lone surrogate (what `os.fsdecode` and
            `errors="surrogateescape"` make of such bytes).

    Example:

    >>> utf8_words([b"caf\\xc3\\xa9", "dog"], "word2vec")
    ['café', 'dog']
    """
    text, bad = [], []
    for word in words:
        try:
            if isinstance(word, bytes):
                word = word.decode("utf-8")
            elif isinstance(word, str):
                word.encode("utf-8")
        except UnicodeError:
            bad.append(word)
        text.append(word)
    if bad:
        raise ValueError(
            f"{what} files are written in UTF-8, which cannot hold {listing(bad)}.")
    return text


def command_line_text(text):
    """A command-line argument that names a word or a node (`neighbors`'s
    WORD, `--root`, `--drop-root`) as the UTF-8 text the run's files hold.

    Where the locale cannot decode the argument (`LC_ALL=C` with
    `PYTHONUTF8=0`: Python keeps its bytes as lone surrogates), its bytes
    are decoded as UTF-8; other text is returned as it is.

    Example:

    >>> command_line_text("caf\\udcc3\\udca9")
    'café'
    """
    if not any("\udc80" <= c <= "\udcff" for c in text):
        return text
    try:
        return os.fsencode(text).decode("utf-8", "surrogateescape")
    except UnicodeError:  # (a file system encoding that cannot give the bytes back)
        return text


def is_number(value):
    """True for Python and numpy scalars (not tensors, schedules or bools)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))


def check_tables_finite(means, variances, where):
    """Raises `ValueError` unless the means are finite and the variances
    finite and positive; the message names `where` (a file, a layer).

    Example:

    >>> check_tables_finite(np.zeros((2, 3)), np.ones((2, 3)), "model.keras")
    """
    means = np.asarray(means)
    variances = np.asarray(variances)
    bad = ~np.isfinite(means).all(axis=-1)
    if bad.any():
        raise ValueError(f"{where}: {int(bad.sum())} of {len(bad)} rows have non-finite "
                         f"means (first: row {int(np.argmax(bad))}); the table is "
                         "unusable (a diverged run?).")
    bad = ~(np.isfinite(variances) & (variances > 0)).all(axis=-1)
    if bad.any():
        raise ValueError(f"{where}: {int(bad.sum())} of {len(bad)} rows have non-finite "
                         f"or non-positive variances (first: row {int(np.argmax(bad))}); "
                         "the table is unusable (a diverged run?).")


def checked_in_jax_step(value, bad, raise_error, *args):
    """`value`, behind a check that runs with a compiled JAX step: where the
    traced boolean `bad` is true when the step runs, `raise_error(*args)` is
    called on the host and must raise; the step then fails with its message
    (inside a `jax.errors.JaxRuntimeError`, or a `ValueError` where JAX's
    C++ dispatch ran the step) instead of going on with a wrong value.

    The call is a `jax.pure_callback` in the bad branch of a `lax.cond` that
    hands `value` on: the good path costs one scalar test, and what uses the
    returned value runs after the check. (A `jax.debug.callback` there, an
    effect, made a `GaussianModel` step on CPU 30-50% slower; this form
    costs about a tenth of that.) While the step is traced for a TensorFlow
    graph (jax2tf: Keras's `model.export` or `ExportArchive` on JAX), where
    a host callback cannot be serialized, the check is left out and `value`
    comes back unchecked.

    Args:
        value: a JAX array (or tracer) to pass on.
        bad: a traced boolean scalar, true for a bad step.
        raise_error: a function that raises the error for a bad step.
        *args: arrays handed to `raise_error` (as NumPy values).

    Example (`step(-1.0)` fails with "x must be >= 0, got -1.0"):

    >>> import jax
    >>> def negative(x):
    ...     raise ValueError(f"x must be >= 0, got {x}")
    >>> step = jax.jit(lambda x: checked_in_jax_step(x * 2, x < 0, negative, x))
    >>> float(step(1.5))
    3.0
    """
    import jax

    if tracing_for_tensorflow():
        return value

    def fail(value, *args):
        raise_error(*args)
        return value  # (never reached)

    def failed(value):
        shape = jax.ShapeDtypeStruct(value.shape, value.dtype)
        return jax.pure_callback(fail, shape, value, *args)

    return jax.lax.cond(bad, failed, lambda value: value, jax.numpy.asarray(value))


def tracing_for_tensorflow():
    """True while a TensorFlow graph is being built (`tf.function`; on JAX:
    jax2tf converting a step for `model.export`).

    Example:

    >>> tracing_for_tensorflow()  # eager (or TensorFlow not imported)
    False
    """
    import sys

    tf = sys.modules.get("tensorflow")
    return tf is not None and tf.inside_function()


# Relative slack of the bounds checks: a float32 projection lands within a
# few ulps of its bound.
BOUND_TOLERANCE = 1e-5


def check_table_bounds(means, variances, where, max_norm=None, min_variance=None,
                       max_variance=None):
    """Raises `ValueError` unless the table is finite (`check_tables_finite`),
    every mean's norm is at most `max_norm` and every variance lies in
    `[min_variance, max_variance]` (each bound None: unchecked), to a
    relative `BOUND_TOLERANCE`; the message names `where`, the bound and the
    first row outside it.

    Example:

    >>> check_table_bounds(np.full((2, 2), 3.0), np.ones((2, 2)), "model.keras", max_norm=4.0)
    Traceback (most recent call last):
    ...
    ValueError: model.keras: 2 of 2 rows have means of norm above max_norm 4 (first: row 0, norm 4.243)...
    """
    check_tables_finite(means, variances, where)
    means = np.asarray(means, np.float64)
    variances = np.asarray(variances, np.float64)
    checks = []
    if max_norm is not None:
        norms = np.linalg.norm(means, axis=-1)
        checks.append((norms > max_norm * (1 + BOUND_TOLERANCE), norms,
                       f"means of norm above max_norm {max_norm:g}", "norm"))
    if min_variance is not None:
        low = variances.min(axis=-1)
        checks.append((low < min_variance * (1 - BOUND_TOLERANCE), low,
                       f"variances below min_variance {min_variance:g}", "variance"))
    if max_variance is not None:
        high = variances.max(axis=-1)
        checks.append((high > max_variance * (1 + BOUND_TOLERANCE), high,
                       f"variances above max_variance {max_variance:g}", "variance"))
    for bad, values, what, name in checks:
        if bad.any():
            row = int(np.argmax(bad))
            raise ValueError(f"{where}: {int(bad.sum())} of {len(bad)} rows have {what} "
                             f"(first: row {row}, {name} {values[row]:.4g}); the table is "
                             "outside the bounds it was trained with.")


class TrainingDivergedError(ValueError):
    """The loss or a table stopped being finite: no run is written."""


def check_loss(loss, where):
    """Raises `TrainingDivergedError` unless `loss` (a float) is finite."""
    if not math.isfinite(loss):
        raise TrainingDivergedError(
            f"training diverged: the loss is {loss} {where}; no run was written. "
            "Try a lower --learning-rate.")


INT32_MAX = 2**31 - 1


def check_config(config, positive):
    """Validates the settings every trainer shares; errors name the flag.

    Every number must be finite (and an integer field at most 2^31 - 1),
    the fields in `positive` and `max_variance` `> 0`, both variance bounds
    positive normal float32 numbers (the tables'), and `min_variance <=
    max_variance`.

    Args:
        config: a config dataclass with `min_variance`, `max_variance` and
            `covariance` fields.
        positive: names of fields that must be `> 0`.

    Raises:
        ValueError: naming the first bad setting as its command-line flag.
    """
    def flag(name):
        return f"--{name.replace('_', '-')}"

    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if isinstance(value, bool) or value is None or isinstance(value, str):
            continue
        try:
            if isinstance(value, (int, np.integer)):
                check_number(value, flag(field.name), integer=True, at_most=INT32_MAX)
            else:
                check_number(value, flag(field.name))
        except TypeError as error:
            raise ValueError(str(error)) from None
    for name in (*positive, "max_variance"):  # a variance bound is positive
        value = getattr(config, name)
        if isinstance(value, bool) or not value > 0:
            raise ValueError(f"{flag(name)} must be > 0, got {value}.")
    check_variance_range(config.min_variance, config.max_variance, "float32",
                         (flag("min_variance"), flag("max_variance")))
    if config.min_variance > config.max_variance:
        raise ValueError(
            f"--min-variance ({config.min_variance}) must not exceed "
            f"--max-variance ({config.max_variance})."
        )
    if config.covariance not in ("diagonal", "spherical"):
        raise ValueError(
            f"--covariance must be 'diagonal' or 'spherical', got {config.covariance!r}."
        )


def check_variance_range(min_variance, max_variance, dtype, names):
    """Raises `ValueError` unless the variance bounds are numbers the
    tables' `dtype` holds: `min_variance` at least its smallest positive
    normal number (below it the bound rounds to 0, or to a subnormal whose
    log-determinant and KL lose all precision) and `max_variance` at most
    its largest (beyond it, infinity: no bound). A dtype NumPy does not
    know (bfloat16) is not checked.

    Args:
        min_variance, max_variance: the bounds (numbers).
        dtype: the tables' dtype (`"float32"`).
        names: how the message names the two bounds (`"--min-variance"`).

    Example:

    >>> check_variance_range(1e-50, 5.0, "float32", ("`min_variance`", "`max_variance`"))
    Traceback (most recent call last):
    ValueError: `min_variance` 1e-50: the tables are float32, which hold variances in [1.18e-38, 3.4e+38].
    """
    try:
        tables = np.finfo(dtype)
    except (TypeError, ValueError):
        return
    for name, value, bad in ((names[0], min_variance, min_variance < float(tables.tiny)),
                             (names[1], max_variance, max_variance > float(tables.max))):
        if bad:
            raise ValueError(f"{name} {value:g}: the tables are {tables.dtype.name}, "
                             f"which hold variances in [{tables.tiny:.3g}, {tables.max:.3g}].")


def check_table_memory(rows, dim, tables, what="--dim"):
    """Raises `ValueError` when `tables` float32 tables of `rows x dim` with
    their AdaGrad accumulators (and the variances') cannot fit in memory."""
    need = 4 * 4 * rows * dim * tables  # means + variances, each with an accumulator
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return
    if need > total:
        raise ValueError(
            f"{what} {dim}: {tables} table(s) of {rows:,} rows need "
            f"{need / 2**30:.1f} GiB, more than this machine's {total / 2**30:.1f} GiB "
            "of memory.")
