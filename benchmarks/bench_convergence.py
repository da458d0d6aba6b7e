"""Do the defaults converge? Every iterative estimator, every loss, hard data.

One row per estimator x loss x setting, each fitted with default settings
(only ``gamma`` is given where the setting says "wide kernel"):

- ``standardised``: a standardised table, the case the defaults are made for;
- ``unscaled``: the same table with columns multiplied by factors up to 1e3;
- ``wide kernel``: a small ``gamma``, so random features barely vary by row;
- ``near-constant column``: one column with a spread of 1e-8;
- ``paper-exact step`` (kernel methods): the papers' loop, batch 1, one
  random feature per step;
- ``partial participation`` (HyFDCA): 50% of the clients per round.

``objective_ratio`` is the final objective over the optimum of the same
objective computed centrally (each family says how in ``note``);
``diverged`` is whether the fit ended in an error or warning that says so,
``nonfinite`` whether any output (decision values, embedding) was not
finite. The acceptance is zero divergences and zero non-finite outputs.

Usage::

    python benchmarks/bench_convergence.py           # every family
    python benchmarks/bench_convergence.py --quick   # smaller tables
    python benchmarks/bench_convergence.py --only kernel hyfdca
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import importlib
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

FAMILIES = {
    "kernel": "_convergence_kernel",
    "kmeans": "_convergence_kmeans",
    "hyfdca": "_convergence_hyfdca",
    "secureboost": "_convergence_secureboost",
}
COLUMNS = ["estimator", "loss", "setting", "objective_ratio", "diverged",
           "nonfinite", "seconds"]


def _split_note(row):
    """A row's note is ``definition; detail; ...``: the definition is the
    same for a whole estimator, the details are the row's own."""
    definition, _, detail = str(row.get("note", "")).partition("; ")
    return definition, detail


def format_table(rows):
    header = COLUMNS + ["detail"]
    cells = [[_fmt(row.get(c, "")) for c in COLUMNS] + [_split_note(row)[1][:70]]
             for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


def _fmt(value):
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", choices=sorted(FAMILIES))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = []
    for family in args.only or FAMILIES:
        module = importlib.import_module(FAMILIES[family])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for row in module.cases(quick=args.quick):
                rows.append(row)
                print(format_table([row]).splitlines()[1], flush=True)
    print()
    print(format_table(rows))
    notes = dict.fromkeys((r["estimator"], _split_note(r)[0]) for r in rows)
    print("\nobjective_ratio:")
    for estimator, note in notes:
        print(f"  {estimator}: {note}")
    diverged = sum(bool(r["diverged"]) for r in rows)
    nonfinite = sum(bool(r["nonfinite"]) for r in rows)
    print(f"\n{len(rows)} fits, {diverged} diverged, {nonfinite} with non-finite "
          f"outputs, {time.perf_counter() - start:.0f} s "
          f"(load average {os.getloadavg()[0]:.1f})")
    return 1 if diverged or nonfinite else 0


if __name__ == "__main__":
    sys.exit(main())
