"""The parity table of docs/dlib_parity.md, from a run of the suite:

    DNNPY_PARITY_REPORT=/tmp/parity.jsonl python -m pytest -q -m dlib_cpp tests/dlib_cpp
    python tests/dlib_cpp/report.py /tmp/parity.jsonl > table.md

One row per layer, loss and input layer of dlib's catalogue: the cases whose nets use it, the
checks they passed, and the largest difference between dnnpy and dlib measured in those
nets (over every compared tensor of the whole net, so it bounds this layer's share).
"""

from __future__ import annotations

import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import cases as C  # noqa: E402
from test_catalogue import COMPUTATIONAL, INPUTS, LOSSES  # noqa: E402


def checks_of(case):
    out = ["bytes"]
    if not case.random:
        out.append("forward")
    if case.steps and not case.random:
        out += ["sgd", "adam"]
    if case.twin is not None:
        out.append("twin")
    return out


def main(path):
    rows = [json.loads(line) for line in open(path)]
    err = collections.defaultdict(lambda: [0.0, 0.0])      # (case, kind) -> [abs, rel]
    for r in rows:
        kind = "adam" if r["check"] == "adam step" else "other"
        e = err[(r["case"], kind)]
        e[0] = max(e[0], r["max_abs"])
        e[1] = max(e[1], r["max_rel"])
    names = COMPUTATIONAL + [n + "_" for n in LOSSES] + [C.INPUT_CLASSES.get(n, n) for n in INPUTS]
    classes = {name: C.classes_in(case, names) for name, case in C.CASES.items()}

    def row(label, cls):
        names = [n for n in C.CASES if cls in classes[n]]
        checks = sorted({c for n in names for c in checks_of(C.CASES[n])},
                        key=["bytes", "forward", "sgd", "adam", "twin"].index)
        a = max((err[(n, "other")][0] for n in names), default=0.0)
        r = max((err[(n, "other")][1] for n in names), default=0.0)
        ra = max((err[(n, "adam")][1] for n in names), default=0.0)
        return (f"| `{label}` | {', '.join(names)} | {', '.join(checks)} | {a:.1e} | {r:.1e} | "
                f"{ra:.1e} |")

    print("| name | cases | checks passed | max abs diff | max rel diff | max rel diff after adam |")
    print("|---|---|---|---|---|---|")
    for n in COMPUTATIONAL:
        print(row(n, n))
    for n in LOSSES:
        print(row(n, n + "_"))
    for n in INPUTS:
        print(row(n, C.INPUT_CLASSES.get(n, n)))


if __name__ == "__main__":
    main(sys.argv[1])
