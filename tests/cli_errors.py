"""`keras-gauss` commands that must fail with one clear line, run in this
process: `cli_exit(argv, capsys)` returns `(exit code, the line)`;
`cli_error` also asserts the exit code 2 (bad input) and returns the line.
Both assert one line on stderr and no traceback."""

import pytest


def cli_exit(argv, capsys):
    from keras_gauss.cli import main

    with pytest.raises(SystemExit) as info:
        main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return info.value.code, err


def cli_error(argv, capsys):
    code, err = cli_exit(argv, capsys)
    assert code == 2, err
    return err.strip()
