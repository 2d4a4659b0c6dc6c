"""Phase: one line for a long step, with its duration; a clean break on failure."""

import io
import re

import pytest

from keras_gauss.callbacks.progress import Phase


def test_phase_prints_one_line_with_its_duration():
    out = io.StringIO()
    step = Phase("preparing WordNet", stream=out)
    assert out.getvalue() == "preparing WordNet..."
    seconds = step.done()
    assert seconds >= 0 and re.fullmatch(r"preparing WordNet\.\.\. \d+\.\d s\n", out.getvalue())
    with Phase("saving", stream=out):
        pass
    assert out.getvalue().splitlines()[1].startswith("saving... ")


def test_silent_and_broken_lines():
    out = io.StringIO()
    Phase("quiet", verbose=False, stream=out).done()
    assert out.getvalue() == ""
    with pytest.raises(RuntimeError):
        with Phase("evaluating", stream=out):
            raise RuntimeError("boom")
    assert out.getvalue() == "evaluating...\n"
    Phase("loading", stream=out)  # never done: the next error breaks the line
    Phase.break_line()
    Phase.break_line()
    assert out.getvalue() == "evaluating...\nloading...\n"


def test_training_ends_an_open_set_up_phase():
    from keras_gauss.callbacks import ProgressLogger

    out = io.StringIO()
    Phase("setting up the fused step", stream=out)
    logger = ProgressLogger(mode="lines", stream=out)
    logger.set_params({"epochs": 1, "steps": 1})
    logger.on_train_begin()
    assert re.fullmatch(r"setting up the fused step\.\.\. \d+\.\d s\n", out.getvalue())
