"""HyFDCA's class Notes: the round, the choices where skfed departs from
the paper, what each party learns, and the maths of sample weights.

Kept apart from :mod:`._estimator` (which reads as Algorithm 1) and
substituted into :class:`~skfed.linear_model.HyFDCAClassifier`'s docstring
by :func:`with_notes`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import textwrap

__all__ = ["NOTES", "SOLVER", "PAPER_NOTES", "with_notes"]

_MARKER = "%(hyfdca_notes)s"
_SOLVER_MARKER = "%(hyfdca_solver)s"

SOLVER = """\
solver : {"accelerated", "paper"}, default="accelerated"
    ``"accelerated"``: skfed's round (below and in Notes): the duals stay on
    the clients, the server chooses each step by an exact line search with
    momentum, and stops at ``tol``; one pass over the rows per round
    converges, with any participation of row groups. ``"paper"``:
    Algorithm 1 of [1]_ as published: the server holds the **encrypted**
    global duals and adds the clients' encrypted, averaged changes; each
    client updates ``local_iterations`` (``H``) of its coordinates per
    round with the theorems' fixed step; no objective is evaluated, so
    ``tol`` is not used (``max_iter`` rounds run), ``objective_curve_``
    and ``duality_gap_`` are NaN and the published ``w`` is the last one.
    It diverges when ``H`` is too large for the data (one pass per round
    usually is; the paper tunes ``H``, e.g. 13 on 569 rows): the fit then
    stops with :class:`DivergenceError`. Its ``local_iterations="auto"`` is
    ``ceil(sqrt(n_k))`` per client (our default, not the paper's: it
    converged on the five tables of ``benchmarks/bench_hyfdca_paper_h.py``,
    where one pass diverged on all five). ``"paper"`` also runs section
    4.3's cyclic participation on a vertical split (``participation < 1``,
    ``schedule="cyclic"``), which ``"accelerated"`` refuses. Parameters
    by solver: ``tol`` and ``packing`` only for ``"accelerated"``;
    ``step_size``, ``local_iterations``, ``participation`` and
    ``schedule`` mean the same for both except as stated under each."""

NOTES = """\
One round of ``solver="accelerated"`` (Algorithm 1 with the practical
local method, Algorithm 5; ``solver="paper"`` is described after it):

1. The server picks the participants; the row groups whose clients all
   take part move this round.
2. The round's point: the duals plus momentum. Each client sends its
   part ``X_k^T (y * delta) / (lambda N)`` of the change of ``w`` by
   secure aggregation (pairwise ring masks): the server learns one sum
   per column group. It sends each client the weights of its columns.
3. SecureInnerProduct (Algorithm 2): each client encrypts
   ``x_{k,i}^T w_k`` for its rows; the server adds the parts of each
   row and returns ``enc(x_i^T w)`` to one client of the row group,
   which decrypts it and sends ``x_i^T w`` to its partners (one
   decryption per row group). Skipped when clients hold whole rows: they
   compute it themselves.
4. LocalDualMethod: every client computes its rows' dual direction and
   sends its part of the direction's change of ``w`` by secure
   aggregation; one client per row group shares two kinds of sums over
   its rows (losses, and conjugates along the direction) by secure
   aggregation too: the server learns only their totals.
5. The server computes ``P`` and ``D`` exactly, stops when the gap is
   below ``tol``, else chooses the step length by line search on ``D``
   and sends it; the clients move their duals, the server its ``w``.

Choices where the paper is silent or loose, and where skfed departs:

- The server holds no dual variable, not even encrypted: the clients of
  a row group compute the same step from the same inputs, so nothing
  needs averaging, and ``w`` is kept exact by summing the changes the
  clients send. The paper's per-client ``w_hat_k`` in plaintext, which
  let the server read a client's row, becomes one secure sum per column
  group.
- The coordinate step uses ``||x_i||^2`` (the paper's closed form omits
  it, i.e. assumes unit-norm rows). The squared norms are summed once at
  setup like the inner products: the clients of a row group learn
  ``||x_i||^2`` of their rows.
- The paper's constant ``gamma_t`` with all coordinates updated against
  the same ``w`` overshoots on correlated features; the line search,
  momentum and curvature scale of ``step_size="auto"`` make one pass
  per round converge (see the user guide for measured rounds).
- Partial participation: the paper's stale variables are avoided; a row
  group's duals move only when all its clients are present.
- Fixed-point scale: the clients agree on the binary order of magnitude
  of their largest row part (a federated maximum) before anything is
  encrypted; every encryption and secure sum is scaled from it (and from
  ``||w||``, which the server sends as one exponent per round), with 40
  significant bits. Encrypted and plaintext fits agree to ~1e-10.
- Multiclass problems are solved one-vs-rest, all classes in the same
  messages.
- The clients share one Paillier (or, with ``encryption="ou"``,
  Okamoto-Uchiyama) key pair generated from the operating system's
  randomness (never ``random_state``); the server never holds a key. One
  client per row group decrypts the sums of its partners' encrypted parts
  and adds its own, never encrypted (the paper has every client encrypt
  and decrypt; the values and what each party learns are the same).
  Horizontal splits need no encryption at all (every exchange is a
  secure sum).

What each party learns (see the user guide for the measured audit): the
server sees ciphertexts of the inner products and squared norms, one
sum per column group of the clients' weight changes, the loss and
conjugate sums totalled over the row groups (a secure sum; one row
group's only in a round where it takes part alone), and the model ``w``; client ``k`` sees the
margins, squared norms and duals of its own rows and the weights of its
own columns.

Sample weights (``fit(..., sample_weight=s)``). With weights ``s_i >= 0``
and their total ``S = sum_i s_i`` the objective is

``P(w) = lambda/2 ||w||^2 + 1/S sum_i s_i l(y_i x_i^T w)``

(``S = N`` without weights). Dividing by ``S`` rather than ``N`` makes an
integer weight ``k`` the same as ``k`` copies of the row and a zero weight
the same as no row; it is the ``1/N`` form with the weights rescaled to
mean 1, and :class:`~sklearn.svm.LinearSVC` with ``C = 1 / (lambda S)`` and
the same ``sample_weight``. The conjugate of ``s l`` is ``u -> s l*(u/s)``,
so the dual is

``D(alpha) = 1/S sum_i -s_i l*(-alpha_i / s_i) - lambda/2 ||w||^2``,
``w = 1/(lambda S) sum_i alpha_i x_i``.

With ``alpha_i = s_i y_i u_i`` the dual box of ``y_i alpha_i`` is ``s_i``
times the unweighted one (``[0, s_i]`` for the hinge and logistic losses)
and ``-s_i l*(-alpha_i / s_i) = s_i g(u_i)`` with the unweighted ``g``:

``D(u) = 1/S sum_i s_i g(u_i) - lambda/2 ||w||^2``,
``w = 1/(lambda S) sum_i s_i y_i u_i x_i``.

Moving ``u_i`` by ``d`` changes ``S D`` by ``s_i (g(u_i + d) - g(u_i) - d b
- c_i d^2 / 2)`` with ``b = y_i x_i^T w`` and ``c_i = s_i ||x_i||^2 /
(lambda S)``: the unweighted coordinate step with its curvature times
``s_i``. So the clients keep ``u`` in the unweighted box, scale the
curvature by ``s_i``, send ``X_k^T (y * s * v) / (lambda S)`` as the
change of ``w`` for a change ``v`` of ``u``, and report ``sum_i s_i
l(margin_i)`` and ``sum_i s_i g(u_i)``; the server's formulas are those of
the unweighted case with ``N = S``. A zero weight gives the row no
curvature and no part in ``w`` or ``D``. The weights stay with the clients
holding the rows (like the labels); the clients learn ``S`` at setup by a
secure sum over one client per row group (the server learns ``S`` and the
binary order of magnitude of each row group's total weight).

Sparse ``X`` (CSR, CSC or COO): every client gets its block as CSR and
computes ``x_{k,i}^T w_k``, ``X_k^T v`` and its rows' squared norms with
sparse products; no dense copy of ``X`` or of a block is made. The model
equals the dense fit's up to floating-point reassociation.
"""

PAPER_NOTES = """\
``solver="paper"``: one round of Algorithm 1 as published. ``K^t`` are the
round's clients, ``K-bar^t`` those of them absent the round before.

1. The server sends the clients of ``K-bar^t`` ``enc(alpha_0)`` of their
   rows; they decrypt and run PrimalAggregation (Algorithm 4).
2. SecureInnerProduct (Algorithm 2) for ``K^t``: the server sends each
   client the weights of its columns; each encrypts ``x_{k,i}^T w_k``;
   the server adds, per row, the latest parts of **every** client holding
   it (an absent client's last part: section 4.3's stale ``w``), and each
   client decrypts the sums of its rows.
3. LocalDualMethod (Algorithm 3, with Algorithm 5's exact 1-D maximiser):
   each client draws ``H`` of its rows without replacement and moves each
   towards ``u_i in -dl(x_i^T w)`` by at most ``c_k gamma_t |u_i -
   alpha_i|``; it sends ``enc(gamma_t / |B_n| delta alpha)`` for **all**
   its rows (zeros for the others), ``|B_n|`` the clients holding row
   ``n``.
4. The server adds them to ``enc(alpha_0)`` homomorphically and sends each
   client of ``K^t`` the ciphertexts of its rows, which it decrypts; then
   PrimalAggregation for ``K^t``. With cyclic vertical participation the
   round ends with Algorithm 2 again (its parts are used while the client
   is away); otherwise that second call is the next round's first.

Steps (``step_size="auto"``), from the theorem that covers the setting:
cyclic vertical participation, ``gamma_t = 1/t`` and ``c_k = 1`` (Theorem
4.11); a horizontal split (all clients or random subsets), ``gamma_t = 1``
and ``c_k = 1`` (Theorem 4.8); any other split, ``gamma_t = 1`` and ``c_k =
N_k / N`` (Theorem 4.4; no theorem covers random row groups of a hybrid
split, the same steps are used). A float ``step_size`` is a constant
``gamma_t``. The theorems also need ``H <= N`` (``H`` above a client's
rows means all of them).

Readings where the paper is loose, chosen to keep its guarantees:

- PrimalAggregation's ``w_hat_k`` would reach the server in plaintext per
  client; a client holding part of a row group's rows would give the
  server ``sum_{i in I_k} alpha_i x_{k,i}`` alone. Each client instead
  sends the change of its ``w_hat_k / (lambda N)`` since its last upload,
  summed over its column group by secure aggregation (a column group
  with one client this round, e.g. a vertical split, is a one-term sum:
  that part is the weights of its own columns, which the server publishes
  anyway). The server's ``w`` is the same.
- Algorithm 5 omits ``||x_i||^2`` (unit-norm rows); it is kept here, the
  squared norms summed once like Algorithm 2. ``alpha`` is kept in label
  direction and per unit weight (``y_i alpha_i / s_i``), encrypted with
  absolute precision ``2**-44``: encrypted and plaintext fits agree to
  about ``1e-9``.
- The server never holds a key: it initialises ``enc(alpha_0)`` with the
  first round's sum (``alpha^0 = 0``). Each client draws its own
  coordinates (from ``random_state``), as Algorithm 3 says.
- Partial participation on a hybrid or horizontal split moves row groups
  whole, as the accelerated solver does; on a vertical split it is
  section 4.3's cyclic sets of clients (Assumption 4.10; ``ceil(1 /
  participation)`` sets, at least two, as equal as the count allows).
- No objective is computed; the server checks what it holds, ``w``: non-
  finite weights, or a ``lambda/2 ||w||^2`` above the zero model's
  objective (so ``P(w) > P(0)``) in the last half of the rounds, raise
  :class:`DivergenceError` with a constant ``gamma_t``; with ``gamma_t =
  1/t`` (which overshoots only in its first rounds) the latter warns
  (ConvergenceWarning: raise ``max_iter``).
"""


def with_notes(cls):
    """Put :data:`NOTES` (with :data:`PAPER_NOTES`) and :data:`SOLVER` in
    place of their marker lines of ``cls.__doc__``."""
    texts = {_MARKER: NOTES.rstrip("\n") + "\n\n" + PAPER_NOTES.rstrip("\n"),
             _SOLVER_MARKER: SOLVER.rstrip("\n")}
    lines = []
    for line in cls.__doc__.splitlines():
        if line.strip() in texts:
            indent = line[: len(line) - len(line.lstrip())]
            lines.append(textwrap.indent(texts[line.strip()], indent))
        else:
            lines.append(line)
    cls.__doc__ = "\n".join(lines)
    return cls
