"""The README's Python blocks run as written (in order, in one namespace, in a scratch
folder), so the tour stays true. The block using dlib's model files needs optional extras
and is checked by tests/test_dlib_models.py instead."""

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    runnable = [b for b in blocks if "dnnpy.models" not in b]
    assert len(runnable) >= 3
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile("import numpy as np\n", "README.md", "exec"), namespace)
    for i, block in enumerate(runnable):
        exec(compile(block, f"README.md python block {i}", "exec"), namespace)
    assert (tmp_path / "classifier.dnnpy").is_file()


def test_docs_first_network_prints_what_the_page_says(capsys):
    """docs/index.md's first block, run as written, prints the block that follows it."""
    text = (README.parent / "docs" / "index.md").read_text()
    code, printed = re.search(r"## A first network.*?```python\n(.*?)```\s*prints\s*```\n(.*?)```",
                              text, re.S).groups()
    import dnnpy
    dnnpy.set_random_seed(0)         # a fresh process's initialisation, whatever ran before
    exec(compile(code, "docs/index.md", "exec"), {})
    assert capsys.readouterr().out.rstrip("\n") == printed.rstrip("\n")   # print(net) ends with "\n"
