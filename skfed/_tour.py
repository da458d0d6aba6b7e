"""The quick tour behind ``python -m skfed``.

Fits every estimator on data that ships with scikit-learn, split across
simulated parties, next to its centralized baseline, and prints one table:
estimator, parties, score, baseline score, messages, bytes and time.
Each algorithm contributes one ``TourCase`` from a ``_case_*`` function.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["TourCase", "run_tour", "main"]


@dataclass
class TourCase:
    """One line of the tour.

    ``make_data`` returns ``(X_train, X_test, y_train, y_test)`` (or
    ``(X, None, y, None)`` for clustering, scored on the training rows);
    ``estimator`` and ``baseline`` are unfitted estimators; ``score`` maps
    ``(fitted, X, y)`` to a number (default: the estimator's ``score``).
    """

    name: str
    dataset: str
    make_data: Callable[[], tuple]
    estimator: Any
    baseline: Any
    baseline_name: str
    metric: str = "accuracy"
    score: Callable | None = None
    fit_params: dict = field(default_factory=dict)


def _score(case, model, X, y):
    if case.score is not None:
        return case.score(model, X, y)
    return model.score(X, y)


_ORDER = ("FDSKL", "SecureBoost", "FederatedKernelKMeans", "AVFKAM", "HyFDCA")


def _rank(case):
    return next((i for i, key in enumerate(_ORDER) if case.name.startswith(key)),
                len(_ORDER))


def _cases():
    """Every available tour case, in the README's order."""
    from skfed import _tour_cases

    return sorted((make() for make in _tour_cases.CASES), key=_rank)


def run_tour(cases=None, out=print):
    """Fit each case federated and centralized; print and return the rows."""
    cases = _cases() if cases is None else cases
    rows = []
    for case in cases:
        X_train, X_test, y_train, y_test = case.make_data()
        X_eval = X_train if X_test is None else X_test
        y_eval = y_train if y_test is None else y_test
        start = time.perf_counter()
        model = case.estimator.fit(X_train, y_train, **case.fit_params)
        seconds = time.perf_counter() - start
        score = _score(case, model, X_eval, y_eval)
        base = case.baseline.fit(X_train, y_train)
        base_score = _score(case, base, X_eval, y_eval)
        comm = model.communication_
        rows.append({
            "estimator": case.name,
            "data": case.dataset,
            "parties": _n_parties(model.partition_),
            "metric": case.metric,
            "score": score,
            "baseline": f"{case.baseline_name} {base_score:.3f}",
            "messages": comm.total_messages,
            "MB": comm.total_bytes / 1e6,
            "seconds": seconds,
        })
    out(_format(rows) if rows else "No federated estimators are available yet.")
    return rows


def _n_parties(partition):
    for attr in ("n_clients", "n_parties"):
        value = getattr(partition, attr, None)
        if value is not None:
            return int(value)
    return None


def _format(rows):
    header = list(rows[0])
    cells = [[_cell(r[h]) for h in header] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def _cell(value):
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def main():
    print("skfed quick tour: each estimator next to its centralized baseline\n")
    run_tour()
