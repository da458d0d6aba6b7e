"""HyFDCA's class Notes: the round, the choices where skfed departs from
the paper, what each party learns, and the maths of sample weights.

Kept apart from :mod:`._hyfdca` (which reads as Algorithm 1) and
substituted into :class:`~skfed.linear_model.HyFDCAClassifier`'s docstring
by :func:`with_notes`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import textwrap

__all__ = ["NOTES", "with_notes"]

_MARKER = "%(hyfdca_notes)s"

NOTES = """\
One round (Algorithm 1 with the practical local method, Algorithm 5):

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


def with_notes(cls):
    """Put :data:`NOTES` in place of the marker line of ``cls.__doc__``."""
    lines = []
    for line in cls.__doc__.splitlines():
        if line.strip() == _MARKER:
            indent = line[: len(line) - len(line.lstrip())]
            lines.append(textwrap.indent(NOTES.rstrip("\n"), indent))
        else:
            lines.append(line)
    cls.__doc__ = "\n".join(lines)
    return cls
