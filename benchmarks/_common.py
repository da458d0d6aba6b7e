"""Pieces several benchmark scripts share (not a benchmark itself)."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.preprocessing import StandardScaler


def hard_variants(X, quick=False):
    """The table standardised, and three harder versions of it.

    ``unscaled``: columns multiplied by factors from 1 to 1e3;
    ``near-constant column``: the first column with a spread of 1e-8;
    ``wide``: 40 (``quick``) or 200 extra columns of noise.
    """
    Xs = StandardScaler().fit_transform(X)
    rng = np.random.RandomState(0)
    unscaled = Xs * np.logspace(0, 3, X.shape[1])[None, :]
    near = Xs.copy()
    near[:, 0] = 1.0 + 1e-8 * rng.normal(size=len(X))
    wide = np.hstack([Xs, rng.normal(size=(len(X), 40 if quick else 200))])
    return {"standardised": Xs, "unscaled": unscaled,
            "near-constant column": near, "wide": wide}


def rss_kib():
    """Resident memory of this process in KiB (Linux), -1 if unknown."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def text_table(header, rows):
    """Right-aligned columns under a header and a rule of dashes."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(x).rjust(w) for x, w in zip(row, widths))
             for row in (header, *rows)]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)
