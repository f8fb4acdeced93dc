"""The figures of ``benches/catalog.py`` across runs: each the median of the runs, printed
beside the figure before (an earlier run's file, ``--previous``, or the numbers measured before
issue #34), with the issue's targets."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

#: The figures before issue #34 (its text; ``benches/catalog.py`` at stop 38 where the issue
#: gives none), as text: some were ranges over several runs.
BEFORE_34: dict[str, str] = {
    "append p50 ms: rest-staged": "7.5-10",
    "append p50 ms: rest-inline": "7.5-10",
    "append p50 ms: pg-inline": "5.52",
    "append p50 ms: pg-staged": "6.00",
    "append p50 ms: uc-staged": "11.7",
    "pg statements per ratification": "5",
    "commits/s: sqlite": "87-96",
    "commits/s: postgresql": "51-58",
    "commits/s: rest": "26-28",
}

#: Issue #34's targets: (figure, "<=" or ">=", bound).
TARGETS_34 = [
    ("append p50 ms: rest-inline", "<=", 6.0),
    ("append p50 ms: rest-staged", "<=", 6.0),
    ("commits/s: rest", ">=", 80.0),
    ("pg statements per ratification", "<=", 2.0),
]


def load_previous(path: str | None) -> dict[str, str]:
    """The figures to print beside the new ones: an earlier run's (``--save``), else
    :data:`BEFORE_34`."""
    if path is None:
        return dict(BEFORE_34)
    saved = json.loads(Path(path).read_text())
    return {k: f"{v:.2f}" for k, v in saved.items()}


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the runs that measured it, in first-seen order."""
    keys: dict[str, None] = {}
    for run in runs:
        keys.update(dict.fromkeys(run))
    return {k: statistics.median(run[k] for run in runs if k in run) for k in keys}


def report(runs: list[dict[str, float]], previous: dict[str, str], save: str | None) -> None:
    """Prints every figure (median of the runs, each run's value, the previous figure) and
    the targets; saves the medians to ``save`` when given."""
    figures = medians(runs)
    print(f"\nsummary: medians of {len(runs)} run(s), beside the previous figures")
    print(f"{'figure':<40}{'median':>10}  {'runs':<28}{'previous':>10}")
    for key, value in figures.items():
        each = ", ".join(f"{run[key]:.2f}" for run in runs if key in run)
        print(f"{key:<40}{value:10.2f}  {each:<28}{previous.get(key, '-'):>10}")
    for key, op, bound in TARGETS_34:
        if key not in figures:
            print(f"target (issue #34): {key} {op} {bound:g}: not measured")
            continue
        value = figures[key]
        met = value <= bound if op == "<=" else value >= bound
        verdict = "met" if met else "MISSED"
        print(f"target (issue #34): {key} {op} {bound:g}: {verdict} ({value:.2f})")
    if save:
        Path(save).write_text(json.dumps(figures, indent=2) + "\n")
        print(f"(saved to {save}: --previous {save} prints the next run beside these)")
