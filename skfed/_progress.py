"""One progress format for every estimator's ``verbose`` output.

``verbose=1``: one line per round (every k-th when there are more than
about 40, plus the first and the last), as

    [Name] round i/N: <objective the caller holds>, 1.23 s, 456.7 kB sent

``verbose=2`` adds, where the protocol times its steps, a line of
per-phase seconds.

Encrypted fits (``estimate=True``) append to the first round's line how
long the remaining rounds will take at that pace (:func:`remaining_time`):

    [Name] round 1/N: ..., 4.10 s, 1.2 MB sent; about 7 min for the other 99 rounds

or, for fits that usually stop before ``N`` (``estimate="at most"``,
HyFDCA's tolerance), ``; at most 7 min for the other 99 rounds``.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import time

#: At most about this many round lines per fit.
MAX_LINES = 40


def human_bytes(n):
    """``n`` bytes as a short string: ``"456.7 kB"``, ``"1.2 GB"``."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def format_duration(seconds):
    """``"12 s"``, ``"7 min"``, ``"1.5 h"``: a duration rounded for reading."""
    seconds = max(0.0, float(seconds))
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def remaining_time(elapsed, done, total):
    """Seconds the ``total - done`` remaining rounds take at the pace so far.

    Parameters
    ----------
    elapsed : float
        Seconds the ``done`` rounds took.
    done, total : int
        Rounds finished, rounds planned.

    Returns
    -------
    seconds : float
        ``elapsed / done * (total - done)`` (0 when nothing remains). An
        upper bound for fits that may stop early; rounds of equal cost are
        assumed (true of SecureBoost's and HyFDCA's encrypted rounds, whose
        cost is the same encryptions and decryptions every round).
    """
    done, total = int(done), int(total)
    if done <= 0 or total <= done:
        return 0.0
    return float(elapsed) / done * (total - done)


class Progress:
    """Prints the progress lines of one fit.

    Parameters
    ----------
    name : str
        Shown in brackets at the start of each line.
    total : int
        The number of rounds planned (``max_iter``, ``n_estimators``).
    verbose : int
        0 prints nothing; 1 round lines; 2 also per-phase seconds.
    fed : Federation, optional
        Whose message log gives the bytes sent so far.
    unit : str, default="round"
        What one line counts ("round", "step", "iteration").
    estimate : bool or "at most", default=False
        Append to the first line the time the other rounds will take at
        the first round's pace (for encrypted fits, whose rounds are slow
        enough for a user to wonder). ``"at most"``: worded as the upper
        bound it is, for fits that stop when a tolerance is met.
    """

    def __init__(self, name, total, verbose, fed=None, unit="round",
                 estimate=False):
        self.name = name
        self.total = int(total)
        self.verbose = int(verbose or 0)
        self.fed = fed
        self.unit = unit
        self.every = max(1, -(-self.total // MAX_LINES))
        self.estimate = estimate if estimate == "at most" else bool(estimate)
        self.start = time.perf_counter()

    def due(self, i, last=False):
        """Whether round ``i`` (counted from 1) gets a line."""
        return bool(self.verbose) and (
            last or i == 1 or i == self.total or i % self.every == 0)

    def report(self, i, objective, phases=None, last=False):
        """Print round ``i``'s line (if due): ``objective`` is the text of
        what the caller legitimately holds; ``phases`` maps a phase to its
        seconds (printed with ``verbose=2``); ``last=True`` prints the line
        of a fit that stops early even when it is not due."""
        if not self.due(i, last):
            return
        seconds = time.perf_counter() - self.start
        sent = "" if self.fed is None else (
            f", {human_bytes(self.fed.log.summary().total_bytes)} sent")
        wait = ""
        if self.estimate and i == 1 and not last and self.total > 1:
            words = "at most" if self.estimate == "at most" else "about"
            wait = (f"; {words} "
                    f"{format_duration(remaining_time(seconds, 1, self.total))}"
                    f" for the other {self.total - 1} {self.unit}s")
        print(f"[{self.name}] {self.unit} {i}/{self.total}: {objective}, "
              f"{seconds:.2f} s{sent}{wait}", flush=True)
        if self.verbose > 1 and phases:
            print("    seconds: " + ", ".join(f"{p} {s:.2f}"
                                              for p, s in phases.items()),
                  flush=True)
