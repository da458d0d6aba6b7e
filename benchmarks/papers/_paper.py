"""What the ``benchmarks/papers/*.py`` scripts share (not a benchmark).

Each script reproduces one paper's headline experiment and prints, row by
row, the paper's figure beside skfed's and a centralized reference. This
module puts the checkout's root (its ``skfed``) and ``benchmarks/`` on the
import path (so the scripts measure this checkout's code and reuse
``_common.py``, ``_fedavg.py``, ``_fdskl_numpy.py`` and the convergence
helpers instead of copying them), parses the options every script takes and
measures wall and CPU time, since the machine may be shared.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import sys
import time
from contextlib import contextmanager

BENCHMARKS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(BENCHMARKS)
# The checkout's skfed first: ``python benchmarks/papers/x.py`` puts only the
# script's folder on the path, so an installed (or editable elsewhere) skfed
# would be measured instead of the code these scripts ship with.
for path in (BENCHMARKS, ROOT):
    if path not in sys.path:
        sys.path.insert(0, path)

import skfed  # noqa: E402
from _common import text_table  # noqa: E402

__all__ = ["BENCHMARKS", "ROOT", "clock", "parse_args", "run", "text_table"]


def parse_args(doc, argv=None):
    """``--quick`` (the < 2 minute version) and ``--plot FILE`` (a PNG)."""
    parser = argparse.ArgumentParser(
        description=doc.strip().splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes: under two minutes on 2 cores")
    parser.add_argument("--plot", metavar="FILE",
                        help="also save the figure as a PNG to FILE")
    return parser.parse_args(argv)


@contextmanager
def clock():
    """Yield a dict that holds ``wall`` and ``cpu`` seconds on exit (CPU of
    this process, all threads: the parties are threads)."""
    out = {}
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield out
    finally:
        out["wall"] = time.perf_counter() - wall
        out["cpu"] = time.process_time() - cpu


def run(title, main, argv=None, doc=""):
    """Print a header with the load, run ``main(args)``, print the totals."""
    args = parse_args(doc or title, argv)
    print(f"{title}\n{'=' * len(title)}")
    print(f"skfed {skfed.__version__} from {os.path.dirname(skfed.__file__)}")
    print(f"{'quick' if args.quick else 'full'} run; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start")
    with clock() as spent:
        main(args)
    print(f"\ntotal {spent['wall']:.0f} s wall, {spent['cpu']:.0f} s CPU; "
          f"load average {os.getloadavg()[0]:.1f} at the end")


def save_figure(fig, path):
    """Save a small PNG (the docs commit these files)."""
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    print(f"figure saved to {path}")
