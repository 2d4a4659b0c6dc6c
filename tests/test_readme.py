"""The README's Python blocks run as written."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _python_blocks():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_quick_start_trains():
    (block,) = [b for b in _python_blocks() if "model.fit(x, y" in b]
    namespace = {}
    exec(compile(block, "README.md", "exec"), namespace)
    means, variances = namespace["means"], namespace["variances"]
    assert tuple(means.shape) == (3, 50) and tuple(variances.shape) == (3, 50)
    assert float(namespace["model"].optimizer.iterations.numpy()) == 16
