"""HyFDCA's privacy contract: what each message of a fit may carry.

The contract is a whitelist of every message of a fit, phase by phase, as
:mod:`._protocol` sends them. What the paper (section 3) requires is
encrypted stays so: the partial inner products (from many pairs ``(w_t,
x_i^T w_t)`` the server could solve for ``x_i``) and the squared norms. The
dual variables, which the paper encrypts so that the server cannot pair
them with ``w``, never leave the clients here. The clients' parts of each
change of ``w`` (the paper's ``w_hat_k``, sent in plaintext per client) are
summed by secure aggregation: the server learns one total per column group.

What remains, declared below rather than hidden:

- A column group with a single client taking part in a round (a vertical
  split, or partial participation leaving one row group) has a one-term
  sum: the server sees that client's weight change, as in the paper.
- The objective and the line search need loss and conjugate sums over
  the rows. One client per row group shares its group's part in a secure
  sum: the server learns the totals over the row groups taking part (over
  all rows when every row group takes part, the default), never one row
  group's. A round in which a single row group takes part (partial
  participation, or one row group holding every row) is a one-term sum:
  the server sees that group's sums, declared as an ``Aggregate`` over at
  least ``min_rows`` rows; the same round shows it the group's weight
  change alone too. ``report_inversion`` (:mod:`._attacks`) measures
  what the report series gives away.
- The clients learn, for their rows, the full inner products ``x_i^T w``
  (hence their partners' parts, by subtraction), as in the paper. One
  client per row group decrypts its partners' summed parts, adds its own
  (which it never encrypts) and sends the inner products to its partners
  (one decryption per row group, not per client).
- The coordinate steps' curvature (a declared deviation: the paper's boxes
  assume unit rows). By default (``dual_curvature="auto"``) where clients
  hold parts of rows: one public scalar, the mean squared row norm over all
  rows, by one secure sum at setup (phase ``curvature``): no per-row norm
  leaves a client. With ``dual_curvature="row_norm"`` each row's squared
  norm, summed like the inner products (phases ``squared norms``), so the
  clients of a row group learn their partners' ``||x_{k',i}||^2``, which
  fix the metric of the partners' column space the margins span
  (``partner_block`` in :mod:`._attacks`). Whole rows need nothing sent;
  ``dual_curvature="paper"`` sends nothing either. Only the exchange the
  fit's setting uses is declared: any other is flagged.
- Each row group has its own key pair, shared by its clients only: a
  ciphertext is under the key of the row group whose rows it carries, and
  ``check_messages`` binds each key to the rows of the first client using
  it (a client receiving another row group's ciphertexts is a violation;
  sizes are bounded by the rows of the sender or receiver).
- With ``sample_weight``: every client learns the total weight of all rows
  (the objective divides by it) and the server the binary order of
  magnitude of each row group's total weight. A row's weight stays with the
  clients holding the row, like its label; the reports are sums of weighted
  losses and conjugates.

Prediction sends no message: the published model ``w`` is applied where the
whole row is (``predict`` is not federated), so the contract has no predict
rule.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from .._privacy_core import (Aggregate, Ciphertext, Contract, Inherent,
                             OwnShare, Public, Rule, secure_sum_rules)

__all__ = ["hyfdca_contract", "paper_rules", "WEIGHT_SUM_PHASES"]

#: the secure sums of a round: the point's shift (momentum) and the
#: direction's change of w
WEIGHT_SUM_PHASES = ("point", "direction")


def _alone(phase):
    return f"{phase}/alone"


# Size bounds, from public sizes: one value per task (a class, or one for
# binary labels); a client's weights (its columns and the intercept) per
# task; the objective report's loss and line-search sums per task.
_TASKS = "est.coef_.shape[0]"
_WEIGHTS = f"(features + 1) * {_TASKS}"
#: a reporter's share: per task, the loss change, one conjugate change per
#: step length and the count of entries out of bound, each rounded and with
#: its rounding error (``_reports.client_report``)
_REPORT_SHARE = f"2 * (2 + len(est._grid())) * {_TASKS}"


def paper_rules():
    """The phases only ``solver="paper"`` sends (Algorithm 1 as published):
    the duals, which the server holds and adds only as ciphertexts under the
    key of the clients' row group, and Algorithm 4's ``w_hat_k`` changes, summed securely per
    column group. It also uses ``setup/scale``, the curvature's phases, ``primal
    weights`` and ``inner products`` (every client decrypting its rows'
    sums) as declared for the accelerated solver."""
    rules = [
        Rule("duals", "client", "server",
             (Ciphertext("client", "gamma_t / |B_n| * delta alpha for every "
                         "row of the client (zeros where not updated), under "
                         "its row group's key",
                         max_size=f"sender_rows * {_TASKS}"),),
             note="Algorithm 1: the server only ever holds enc(alpha_0); in "
                  "the clear it could pair alpha with w and solve W = A alpha "
                  "for the data"),
        Rule("duals", "server", "client",
             (Ciphertext("client", "enc(alpha_0) of the client's rows (the "
                         "homomorphic sum), under the key of the receiver's "
                         "row group", max_size=f"receiver_rows * {_TASKS}"),),
             note="the client decrypts its own rows' duals"),
        Rule("primal aggregation/request", "server", "client",
             (Public("nothing (the request carries no argument)",
                     max_size=1),)),
        *secure_sum_rules("primal aggregation", "client", "server",
                          _WEIGHTS),
        Rule("primal aggregation/alone/request", "server", "client",
             (Public("nothing (the request carries no argument)",
                     max_size=1),)),
        Rule("primal aggregation/alone/upload", "client", "server",
             (Inherent("the change of the client's w_hat_k / (lambda N), "
                       "alone: its column group has one client this round "
                       "(a vertical split: the weights of its own columns, "
                       "published as the model)", dtype="u",
                       max_size=_WEIGHTS),),
             note="no one to sum with"),
    ]
    return rules


def hyfdca_contract(min_rows=1, solver="accelerated", curvature="mean",
                    n_rows=1):
    """The HyFDCA contract (fit; prediction sends nothing).

    Parameters
    ----------
    min_rows : int, default=1
        Rows of the smallest row group: a report the server sees alone (one
        row group taking part) is a sum over at least that many rows.
    solver : {"accelerated", "paper"}, default="accelerated"
        ``"paper"`` adds :func:`paper_rules` (an accelerated fit sending
        duals would be flagged).
    curvature : {"mean", "row_norm", "local", None}, default="mean"
        The curvature exchange of the fit
        (:func:`._protocol.curvature_exchange`): ``"mean"`` declares the
        secure sum of the mean squared row norm (phase ``curvature``),
        ``"row_norm"`` the rows' squared norms (phases ``squared norms``);
        ``"local"`` and ``None`` send nothing, and any such message is
        flagged.
    n_rows : int, default=1
        Rows of the table: the mean curvature is an aggregate over them.
    """
    rules = [
        Rule("setup/scale", "client", "server",
             (Public("binary exponent of the client's largest row-part norm",
                     dtype="i", max_size=1),),
             note="one integer per client; the server keeps the maximum"),
        Rule("setup/scale", "server", "client",
             (Public("the agreed binary exponent (federated maximum)",
                     dtype="i", max_size=1),)),
        # With sample_weight: the total weight S, by secure aggregation over
        # one client per row group (the weights never leave their rows).
        Rule("setup/weights/scale", "client", "server",
             (Public("binary exponent of the row group's total weight",
                     dtype="i", max_size=1),),
             note="one integer per row group; the server keeps the maximum"),
        *secure_sum_rules("setup/weights", "client", "server", max_size=1),
        Rule("setup/weights/request", "server", "client",
             (Public("the largest binary exponent (shares are scaled by its "
                     "inverse power of two)", dtype="i", max_size=1),)),
        Rule("setup/weights/alone/request", "server", "client",
             (Public("the binary exponent of the total weight", dtype="i",
                     max_size=1),)),
        Rule("setup/weights/alone/upload", "client", "server",
             (Aggregate(min_rows, "the total weight of all rows, alone: one "
                        "row group holds every row (it is the sum)",
                        dtype="u", max_size=1),)),
        Rule("setup/weights", "server", "client",
             (Aggregate(min_rows, "the total weight S of all rows",
                        dtype="f", max_size=1),),
             note="the average of the objective divides by it"),
        Rule("inner products", "client", "server",
             (Ciphertext("client", "x_{k,i}^T w_k of the client's rows, "
                         "under its row group's key",
                         max_size=f"sender_rows * {_TASKS}"),),
             note="Algorithm 2: encrypted, or the server could solve "
                  "B = W x_i for the row"),
        Rule("inner products", "server", "client",
             (Ciphertext("client", "x_{k,i}^T w_k summed over the row's "
                         "other clients, under the key of the receiver's row "
                         "group", max_size=f"receiver_rows * {_TASKS}"),),
             note="to one client per row group, which decrypts and adds "
                  "its own part (it never encrypts it)"),
        Rule("inner products/shared", "client", "client",
             (Inherent("x_i^T w of the row group's rows, decrypted by one "
                       "of its clients for its partners, who learn them "
                       "in the paper too (each decrypts them there)",
                       dtype="f", exempt=("columns",),
                       max_size=f"receiver_rows * {_TASKS}"),),
             note="between clients of one row group only; a sum of the "
                  "sender's and the receiver's parts, so it may correlate "
                  "with the sender's columns exactly as the decrypted sum "
                  "did"),
        Rule("primal weights", "server", "client",
             (OwnShare("the weights of the client's own columns",
                       max_size=_WEIGHTS),
              Public("binary exponent bounding this round's inner-product "
                     "parts", dtype="i", max_size=1)),
             note="a client never receives weights of other columns"),
        Rule("step", "server", "client",
             (Public("step length per task", dtype="f", max_size=_TASKS),
              Public("whether the step is taken, per task", dtype="b",
                     max_size=_TASKS)),),
    ]
    if curvature == "mean":
        rules += [
            Rule("curvature/request", "server", "client",
                 (Public("the number of rows of the table", dtype="i",
                         max_size=1),)),
            *secure_sum_rules("curvature", "client", "server", max_size=1),
            Rule("curvature", "server", "client",
                 (Aggregate(n_rows, "the mean squared row norm over all "
                            "rows (public: every row's curvature uses it)",
                            dtype="f", max_size=1),),
                 note="one float, once at setup"),
        ]
    if curvature == "row_norm":
        rules += [
            Rule("squared norms", "client", "server",
                 (Ciphertext("client", "||x_{k,i}||^2 of the client's rows, "
                             "under its row group's key",
                             max_size="sender_rows"),)),
            Rule("squared norms", "server", "client",
                 (Ciphertext("client", "||x_{k,i}||^2 summed over the row's "
                             "other clients, under the key of the receiver's "
                             "row group", max_size="receiver_rows"),),
                 note="to one client per row group, which decrypts and adds "
                      "its own part (it never encrypts it)"),
            Rule("squared norms/shared", "client", "client",
                 (Inherent("||x_i||^2 of the row group's rows, decrypted by one "
                           "of its clients for its partners, who learn them in "
                           "the paper too (each decrypts them there)", dtype="f",
                           exempt=("columns",), max_size="receiver_rows"),),
                 note="between clients of one row group only, once at setup"),
        ]
    # The objective reports: one reporter per row group shares its group's
    # changes of the loss and conjugate sums; the server decodes only their
    # total over the row groups taking part (a plaintext per-group report,
    # as before issue 25, is an undeclared phase).
    request = (Public("the line search's step lengths", dtype="f",
                      max_size="len(est._grid())"),
               Public("the public bound of a report entry (from w, the "
                      "agreed scale and N)", dtype="f", max_size=1),
               Public("fractional bits of the ring encoding", dtype="i",
                      max_size=1))
    rules.append(Rule("objective report/request", "server", "client",
                      request))
    rules += secure_sum_rules("objective report", "client", "server",
                              max_size=_REPORT_SHARE)
    rules.append(Rule("objective report/alone/request", "server", "client",
                      request))
    rules.append(Rule(
        "objective report/alone/upload", "client", "server",
        (Aggregate(min_rows, "per task: one row group's changes of its loss "
                   "and conjugate sums, alone: a single row group takes part "
                   "this round (every row, on a vertical split)", dtype="u",
                   max_size=_REPORT_SHARE),),
        note="partial participation leaving one row group, whose weight "
             "change the server sees alone too; the whole data set when "
             "there is one row group"))
    for phase in WEIGHT_SUM_PHASES:
        what = ("momentum (the point's shift)" if phase == "point"
                else "the curvature scale per task")
        rules.append(Rule(f"{phase}/request", "server", "client",
                          (Public(what, dtype="f", max_size=_WEIGHTS),)))
        rules += secure_sum_rules(phase, "client", "server", _WEIGHTS)
        rules.append(Rule(f"{_alone(phase)}/request", "server", "client",
                          (Public(what, dtype="f", max_size=_WEIGHTS),)))
        rules.append(Rule(
            f"{_alone(phase)}/upload", "client", "server",
            (Inherent("the client's part X_k^T (y * v) / (lambda N) of a "
                      "change of w, alone: its column group has one client "
                      "this round (the paper's plaintext w_hat_k)",
                      dtype="u", max_size=_WEIGHTS),),
            note="no one to sum with: a vertical split, or one row group "
                 "taking part"))
    if solver == "paper":
        rules += paper_rules()
    return Contract("hyfdca", rules)
