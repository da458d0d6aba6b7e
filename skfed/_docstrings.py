"""Parameter documentation shared by every estimator, written once.

Estimator docstrings write ``%(partition_vertical)s`` and the like; the
:func:`fill_doc` decorator substitutes the entries below (plain text
replacement, so other ``%`` signs in a docstring are safe).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import textwrap

__all__ = ["SHARED_NOTES", "SHARED_PARAMETERS", "fill_doc"]

SHARED_PARAMETERS = {
    "partition_vertical": """
partition : None, int, list of column groups or VerticalPartition, default=None
    Which party holds which columns. ``None`` splits the columns evenly over
    two parties (one if ``X`` has a single column); an int ``k`` over ``k``
    parties; a list such as ``[[0, 1], [2, 3]]`` or, for a DataFrame,
    ``[["age", "income"], ["balance"]]`` gives each party's columns (disjoint,
    covering every column). A :class:`~skfed.partition.VerticalPartition`
    also says which parties hold the labels (party 0 by default). The
    resolved partition is stored in ``partition_``.""",
    "partition_horizontal": """
partition : None, int or HorizontalPartition, default=None
    Which party (user) holds which rows. ``None`` means two parties, an int
    ``k`` means ``k``; rows go to parties by the partition's rule (``"even"``
    contiguous blocks or a seeded ``"random"`` split). To give the owner of
    every row yourself, pass ``sample_party`` to ``fit`` (integer party ids,
    or labels numbered in sorted order, as scikit-learn's ``groups``): it is
    split with ``X`` by cross-validation (with metadata routing enabled,
    request it with ``set_fit_request(sample_party=True)``).""",
    "partition_hybrid": """
partition : None, HybridPartition, VerticalPartition, HorizontalPartition or \
list of column groups, default=None
    Which client holds which block of rows and columns. ``None`` is a 2 x 2
    grid (two row groups times two column groups); a
    :class:`~skfed.partition.HybridPartition` sets the grid; a vertical spec
    (or list of column groups) means one row group, a horizontal one means
    one column group. Row groups may come from ``fit(..., sample_party=...)``
    (integer ids, or labels numbered in sorted order).""",
    "partition_preprocessing": """
partition : None, int, list of column groups or partition object, default=None
    Which party holds which rows and/or columns. ``None`` splits the rows
    evenly over two parties (one if ``X`` has a single row), an int ``k``
    over ``k`` parties; a :class:`~skfed.partition.HorizontalPartition` or
    :class:`~skfed.partition.HybridPartition` splits rows, and the holders of
    a column's rows combine their statistics through secure sums; a list of
    column groups or a :class:`~skfed.partition.VerticalPartition` gives
    every party whole columns, which it fits alone: nothing crosses. Row
    owners may come from ``fit(..., sample_party=...)`` (integer ids, or
    labels numbered in sorted order; with metadata routing, request it with
    ``set_fit_request(sample_party=True)``). The resolved partition is
    stored in ``partition_``.""",
    "min_row_holders": """
min_row_holders : int, default=2
    The fewest holders a column's rows may be split over. Every holder
    learns the fitted statistics, and subtracting its own share leaves the
    sum over the others: with two row holders, each learns the other's
    totals (count, sum, sum of squares, or its histogram). ``3`` or more
    refuses such a fit with a ``ValueError`` before any party starts, so that
    what a holder can subtract always mixes two others or more. Columns held
    whole by one party (a vertical split) send nothing and are never
    refused.""",
    "random_state": """
random_state : int, RandomState instance or None, default=None
    Seeds every random choice of the protocol (per-party seeds are drawn
    from it in a fixed order), so two fits with the same seed agree.
    Cryptographic keys and encryption randomness never come from it.""",
    "party_keys": """
party_keys : {"auto", "random_state", "os"}, default="auto"
    Where each party's private key comes from. The key fixes the party's
    block of the random directions and its phases, which nobody else can
    compute, so it shapes the model. ``"os"``: every party draws its key
    from the operating system, as a deployment does; the model then changes
    with every fit (same distribution). ``"random_state"``: the keys derive
    from ``random_state``, so fits are reproducible, but whoever knows the
    seed (the threat model counts it as public) rebuilds every party's key
    and, from the messages it received, every other party's columns.
    ``"auto"``: ``"os"`` when ``random_state`` is None, ``"random_state"``
    otherwise (``party_keys_`` is the one used). Each party's key is part
    of its share of the fitted model (``export_shares()``); masks never
    depend on it.""",
    "party_keys_": """
party_keys_ : {"random_state", "os"}
    Where the keys of this fit came from (``party_keys`` with ``"auto"``
    resolved).""",
    "encryption": """
encryption : {"paillier"} or None, default="paillier"
    ``"paillier"`` runs the protocol with Paillier encryption where the paper
    encrypts. ``None`` runs the same protocol in plaintext: for teaching and
    for checking losslessness, never for real private data.""",
    "encryption_schemes": """
encryption : {"paillier", "ou"} or None, default="paillier"
    The additively homomorphic scheme where the paper encrypts, under the
    key of the party that owns the data (HyFDCA: one key pair the clients
    share; the server never holds it). ``"paillier"`` (Paillier 1999).
    ``"ou"``: Okamoto-Uchiyama (``n = p**2 q``, as SecretFlow's default),
    about an order of magnitude cheaper to encrypt with the same key size and the
    same model; secure if factoring ``n = p**2 q`` is hard (see the security
    page of the user guide). ``None`` runs the same protocol in plaintext:
    for teaching and for checking losslessness, never for real private
    data.""",
    "key_size": """
key_size : int, default=2048
    Modulus size in bits (Paillier's ``n = p q`` or OU's ``n = p**2 q``).
    2048 is the secure default; small keys (e.g. 512) only make tests and
    demonstrations fast.""",
    "n_jobs": """
n_jobs : int or None, default=None
    Worker threads for encryption and decryption. ``None`` means 1, ``-1``
    all cores. Every party always has exactly one thread of its own,
    whatever ``n_jobs`` says.""",
    "verbose": """
verbose : int, default=0
    Print progress when positive, in one format for every estimator:
    ``[Name] round i/N: <objective>, <seconds> s, <bytes> sent``, one line
    per round (every k-th when there are more than about 40, plus the first
    and the last); the objective is what the printing party legitimately
    holds. ``verbose=2`` adds per-phase seconds where the protocol times
    its steps (SecureBoost).""",
}


#: Paragraphs of Notes several estimators share (``%(name)s`` as well).
SHARED_NOTES = {
    "whole_simulation": """
The fitted estimator is the whole simulation: it holds every party's key
and coefficients at once, so whoever holds it can compute every party's
block of the random directions and, with the messages it received during
the fit, solve for the other parties' columns. Never hand it to one
party: ``export_shares()`` gives each party its own share (its key, its
coefficients, the public parameters),
:func:`~skfed.kernel_methods.predict_with_shares` predicts from the shares
as the estimator does (bit for bit), and ``consolidate()`` joins them into
one plaintext model when every party agrees to.""",
}


def fill_doc(obj):
    """Substitute ``%(name)s`` markers of :data:`SHARED_PARAMETERS` (or
    :data:`SHARED_NOTES`) in a docstring.

    The marker must stand alone on its line; the entry is indented to match.
    """
    doc = obj.__doc__
    if not doc:
        return obj
    lines = []
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.startswith("%(") and stripped.endswith(")s"):
            key = stripped[2:-2]
            shared = {**SHARED_PARAMETERS, **SHARED_NOTES}
            if key not in shared:
                raise KeyError(f"No shared documentation for {key!r}.")
            indent = line[: len(line) - len(line.lstrip())]
            entry = shared[key].strip("\n")
            lines.append(textwrap.indent(entry, indent))
        else:
            lines.append(line)
    obj.__doc__ = "\n".join(lines)
    return obj
