"""The quick tour behind ``python -m skfed``.

Fits every estimator on data that ships with scikit-learn, split across
simulated parties, next to its centralized baseline, and prints one table:
estimator, parties, score, baseline score, messages, bytes and time.
Each algorithm contributes one ``TourCase`` from a ``_case_*`` function in
:mod:`skfed._tour_cases`. Run ``python -m skfed --help`` for the options.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import contextlib
import sys
import time
import warnings

from threadpoolctl import threadpool_limits

from . import _tour_cases
from ._config import config_context
from ._optional import import_optional
from .crypto import InsecureKeyWarning
from .federation import record_messages

__all__ = ["run_tour", "main"]

QUICK_NOTE = (
    "--quick: smaller data, fewer iterations and 512-bit Paillier keys, "
    "opted in with skfed.config_context(allow_insecure_keys=True). Such keys "
    "are breakable: for a demonstration only, never for real data.")

KEY_NOTE = (
    "Keys: SecureBoost and HyFDCA use 1024-bit Paillier keys here (about "
    "80-bit security) so that the tour takes about a minute; the estimators' "
    "default is 2048 bits (112-bit), which private data needs. The tour "
    "silences skfed's InsecureKeyWarning for this choice.")


def _score(case, model, X, y):
    if case.score is not None:
        return case.score(model, X, y)
    return model.score(X, y)


_ORDER = ("FDSKL", "SecureBoost", "FederatedKernelKMeans", "AVFKAM", "HyFDCA")


def _rank(case):
    return next((i for i, key in enumerate(_ORDER) if case.name.startswith(key)),
                len(_ORDER))


def _cases(quick=False, estimator=None):
    """The tour cases, in the README's order.

    ``estimator`` keeps the cases whose name starts with it (case-insensitive).
    """
    cases = sorted((make(quick=quick) for make in _tour_cases.CASES), key=_rank)
    if estimator is not None:
        prefix = estimator.lower()
        cases = [c for c in cases if c.name.lower().startswith(prefix)]
    return cases


def _names():
    return [c.name.split(" ")[0] for c in
            sorted((make() for make in _tour_cases.CASES), key=_rank)]


@contextlib.contextmanager
def _tour_keys(quick):
    """The tour's small keys, stated once (QUICK_NOTE, KEY_NOTE) instead of
    an InsecureKeyWarning per fit; --quick also opts in below 1024 bits."""
    with config_context(**({"allow_insecure_keys": True} if quick else {})), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureKeyWarning)
        yield


def run_tour(cases=None, out=print, quick=False, record=False):
    """Fit each case federated and centralized; print and return the rows.

    With ``record=True`` each row also holds the case's
    :class:`~skfed.federation.MessageRecorder` and fitted estimator
    (``"recorder"``, ``"model"``; not printed).
    """
    cases = _cases(quick) if cases is None else cases
    rows = []
    with _tour_keys(quick):
        for case in cases:
            X_train, X_test, y_train, y_test = case.make_data()
            X_eval = X_train if X_test is None else X_test
            y_eval = y_train if y_test is None else y_test
            with (record_messages() if record else contextlib.nullcontext()) as rec:
                start = time.perf_counter()
                model = case.estimator.fit(X_train, y_train, **case.fit_params)
                seconds = time.perf_counter() - start
            score = _score(case, model, X_eval, y_eval)
            # The baselines are small: one BLAS/OpenMP thread each is fastest
            # (on 2 busy cores, threads spinning on KernelPCA + KMeans took
            # 6 s instead of 0.04 s). Their time is not reported.
            with threadpool_limits(limits=1):
                base = case.baseline.fit(X_train, y_train)
                base_score = _score(case, base, X_eval, y_eval)
            comm = model.communication_
            row = {
                "estimator": case.name,
                "data": case.dataset,
                "parties": _n_parties(model.partition_),
                "metric": case.metric,
                "score": score,
                "baseline": f"{case.baseline_name} {base_score:.3f}",
                "messages": comm.total_messages,
                "MB": comm.total_bytes / 1e6,
                "seconds": seconds,
            }
            rows.append(row)
            if record:
                row["recorder"], row["model"] = rec, model
    printed = [{k: v for k, v in r.items() if k not in ("recorder", "model")}
               for r in rows]
    out(_format(printed) if rows else "No federated estimators are available yet.")
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


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m skfed",
        description="skfed quick tour: fit each federated estimator on data "
                    "shipped with scikit-learn, next to its centralized "
                    "baseline, and print score, messages, bytes and time.")
    parser.add_argument(
        "--estimator", metavar="NAME",
        help="run only the case whose estimator name starts with NAME "
             "(case-insensitive), one of: " + ", ".join(_ORDER))
    parser.add_argument(
        "--quick", action="store_true",
        help="smaller data, fewer iterations and 512-bit keys (insecure, "
             "opted in explicitly): a few seconds in all")
    parser.add_argument(
        "--plot", metavar="FILE",
        help="save the message timeline of one case (the first one run; "
             "use with --estimator) to FILE, e.g. timeline.png; needs "
             "matplotlib")
    return parser


def main(argv=None):
    """Command-line entry point; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.plot is not None:
        # Checked first: the cases take a minute, the plot is drawn last.
        try:
            _matplotlib()
        except ImportError as exc:
            print(f"python -m skfed: error: {exc} Or run without --plot.",
                  file=sys.stderr)
            return 2
    cases = _cases(args.quick, args.estimator)
    if not cases:
        parser.error(f"no tour case matches --estimator {args.estimator!r}; "
                     f"choose one of: {', '.join(_names())}")
    print("skfed quick tour: each estimator next to its centralized baseline")
    if args.quick:
        print(QUICK_NOTE)
    elif any(_small_key(case) for case in cases):
        print(KEY_NOTE)
    print()
    rows = run_tour(cases, quick=args.quick, record=args.plot is not None)
    if args.plot is not None:
        _save_timeline(rows[0], args.plot)
        print(f"\nTimeline of {rows[0]['estimator']} saved to {args.plot}")
    return 0


def _matplotlib():
    return import_optional("matplotlib", "python -m skfed --plot")


def _small_key(case):
    params = case.estimator.get_params(deep=False)
    return (params.get("encryption", None) == "paillier"
            and params.get("key_size", 2048) < 2048)


def _save_timeline(row, path):
    _matplotlib().use("Agg")
    plt = import_optional("matplotlib.pyplot", "python -m skfed --plot")

    fig, (left, right) = plt.subplots(
        1, 2, figsize=(12, 8), gridspec_kw={"width_ratios": [3, 2]})
    row["recorder"].plot_timeline(ax=left, contract=row["model"],
                                  rounds=(None, 0, 1))
    left.set_title(f"{row['estimator']}: set-up and first two rounds",
                   pad=25)
    row["model"].communication_.plot(by="phase", ax=right)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
