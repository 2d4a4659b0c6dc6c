"""The training commands' GPU settings (`device_settings` of
`keras_gauss.hierarchy.cli` and `keras_gauss.pipelines.cli`): `unset`
makes parsed arguments that give none of them; `check_cpu_kept` asserts
the cases that keep the CPU trainer with its defaults."""

import argparse


def unset(settings, **given):
    """Parsed arguments that give none of `settings` (a command's
    `GPU_SETTINGS`: each `None`), but `given`.

    Example:

    >>> unset({"engine": "keras", "batch_size": 4096}, batch_size=512)
    Namespace(engine=None, batch_size=512)
    """
    return argparse.Namespace(**{**dict.fromkeys(settings), **given})


def check_cpu_kept(device_settings, settings, cpu):
    """Asserts that `device_settings` says nothing and leaves the CPU
    trainer's defaults `cpu` (`{name: value}` of `settings`' names) where
    --engine native is given, where there is no GPU, and with a --distribution.

    Example:

    >>> from keras_gauss.hierarchy.cli import device_settings  # doctest: +SKIP
    >>> check_cpu_kept(device_settings, {"engine": "keras", "batch_size": 4096},
    ...                {"engine": "native", "batch_size": 1024})  # doctest: +SKIP
    """
    for args, gpu in ((unset(settings, engine="native"), "Fake GPU"), (unset(settings), None),
                      (unset(settings, distribution="data"), "Fake GPU")):
        if gpu is None:  # this machine: no GPU (or not KERAS_BACKEND=jax)
            assert device_settings(args) is None
        else:
            assert device_settings(args, gpu=gpu) is None
        assert {k: v for k, v in vars(args).items() if k != "distribution"} == cpu
