"""docs/core_in_one_page.md's example runs as printed: its two layers pass test_layer in
float64, a second backward pass without zeroing gives the same gradient, and the in-place
run disables the overwritten layer's getter."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "core_in_one_page.md"


def test_the_core_page_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], str(DOC), "exec"), {"__name__": "core_in_one_page"})
    assert "in-place" in capsys.readouterr().out
