"""HyFDCAClassifier: the estimator, its Notes and its privacy hooks.

``fit`` checks its input, then hands the data to the solver that
``solver`` names: :class:`._protocol.AcceleratedSolver` (skfed's round,
the class Notes) or :class:`._paper.PaperSolver` (Algorithm 1 of Overman,
Blum and Klabjan as published). Both make the parties with one setup
(:meth:`._protocol.Solver.set_up_parties`: each client's block, one key
pair per row group, every party's state), play their Algorithm 1 on the
federation of those parties and return the model; the estimator sets its
fitted attributes from what the solver returns. The privacy hooks hand
:mod:`skfed.privacy` the contract of :mod:`._contract` and the attacks of
:mod:`._attacks`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import math
import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .._docstrings import fill_doc
from .._privacy_core import Secret
from ..base import (FederatedMixin, check_labels_not_single_class,
                    check_row_weights)
from ..partition import (HorizontalPartition, HybridPartition,
                         VerticalPartition)
from ._attacks import (model_differences, partner_block, report_inversion,
                       row_reconstruction)
from ._contract import hyfdca_contract
from ._dual import line_search_grid
from ._paper import PaperSolver, cyclic_sets
from ._protocol import (DUAL_CURVATURES, AcceleratedSolver, client_blocks,
                        curvature_exchange, row_sqnorms)

__all__ = ["HyFDCAClassifier"]


# -- the checks of fit's arguments that need the data or the partition --------

def _largest_abs(X):
    if sp.issparse(X):
        return float(abs(X).max()) if X.nnz else 0.0
    return float(np.max(np.abs(X), initial=0.0))


def check_encodable(X, *, alpha, fit_intercept, intercept_scaling, encryption):
    """Refuse, before any party starts, data no fixed-point scale fits."""
    with np.errstate(over="ignore"):
        sq = row_sqnorms(X) + (intercept_scaling ** 2 if fit_intercept else 0.0)
    bound = float(np.sqrt(np.max(sq, initial=0.0))) / alpha
    if np.all(np.isfinite(sq)) and math.isfinite(bound) and bound < 2.0 ** 500:
        return
    largest = _largest_abs(X)
    if encryption is None:  # no encoding to speak of here
        raise ValueError(
            "HyFDCA cannot fit this X: its values are too large "
            f"(largest |x| = {largest:.3g}); the squared row norms divided by "
            "alpha overflow the protocol's arithmetic (they must stay below "
            "2**500). Rescale the features (for example with StandardScaler) "
            "or raise alpha.")
    raise ValueError(
        f"HyFDCA cannot encode this X: its row norms (largest |x| = "
        f"{largest:.3g}) divided by alpha overflow the fixed-point range, so "
        "rescale the features (for example with StandardScaler) or raise "
        "alpha.")


def check_sample_party(partition_spec, sample_party):
    """Row owners make sense only when the partition splits rows."""
    if sample_party is not None and isinstance(
            partition_spec, (VerticalPartition, list, tuple)):
        raise ValueError(
            "sample_party was given, but the partition is vertical (one "
            "row group: every client holds every row). Pass a "
            "HybridPartition or HorizontalPartition to split rows.")


def check_participation(participation, partition, solver="accelerated",
                        schedule="random"):
    """Partial participation needs a row group that can sit a round out, or
    (``solver="paper"``, a vertical split) section 4.3's cyclic sets, of
    equal size (Assumption 4.10)."""
    if participation >= 1 or partition.n_row_groups > 1:
        return
    if solver != "paper":
        raise ValueError(
            f"participation={participation} on a split with one row group (a "
            "vertical split: every client holds part of every row) needs "
            "solver='paper', which runs section 4.3's cyclic participation "
            "(clients in turn, with stale weights of the absent ones and "
            "gamma_t = 1/t); the accelerated solver moves a row group's duals "
            "only when all its clients take part. Use solver='paper' with "
            "schedule='cyclic', participation=1.0, or split the rows too with "
            "a HybridPartition.")
    if schedule != "cyclic":
        raise ValueError(
            f"participation={participation} on a vertical split needs "
            "schedule='cyclic' (section 4.3, Assumption 4.10: the clients take "
            "part in fixed sets, in turn); random subsets are not covered on "
            "a vertical split.")
    K = partition.n_clients
    if K < 2:
        raise ValueError(
            f"participation={participation} needs at least two clients to "
            "take turns; this split has one.")
    n_sets = cyclic_sets(K, participation)
    if K % n_sets:
        sizes = [len(s) for s in np.array_split(np.arange(K), n_sets)]
        fits = [f"1/{d}" for d in range(2, K + 1) if K % d == 0]
        raise ValueError(
            f"participation={participation} on {K} clients gives {n_sets} "
            f"cyclic sets of {', '.join(map(str, sizes))} clients; Theorem "
            "4.11 (Assumption 4.10) needs C >= 2 sets of Q/C clients each "
            f"(Q mod C = 0). Use a participation whose ceil(1/participation) "
            f"divides {K} ({' or '.join(fits)}), or a number of clients "
            f"divisible by {n_sets}.")


def check_solver_options(solver, step_size, dual_curvature):
    """The values only ``solver="paper"`` reads: ``step_size`` above 1 or
    ``"algorithm_5"`` (the paper's ``gamma_t`` and its Algorithm 5), and
    ``dual_curvature="paper"`` (the printed term of its boxes)."""
    if solver == "paper":
        return
    if step_size == "algorithm_5" or (
            not isinstance(step_size, str) and step_size > 1):
        raise ValueError(
            f"step_size={step_size!r} needs solver='paper' (Algorithm 1 as "
            "published: gamma_t may exceed 1 there, and 'algorithm_5' runs "
            "its Algorithm 5). The accelerated solver's fixed step is a "
            "fraction of the line search's direction, in (0, 1].")
    if dual_curvature == "paper":
        raise ValueError(
            f"dual_curvature={dual_curvature!r} needs solver='paper' (it "
            "selects the paper's printed curvature term of Algorithms 3 and "
            "5); the accelerated solver rescales its curvature by line "
            "search: use 'auto', 'mean' or 'row_norm'.")


def check_local_iterations(local_iterations, partition, solver):
    """``solver="paper"``: Algorithm 3 draws ``H`` of a client's own rows
    without replacement, so ``H <= N_k`` for every client (which gives the
    theorems' ``H <= N`` and Theorem 4.8's ``P H <= N``)."""
    if solver != "paper" or local_iterations == "auto":
        return
    sizes = [len(partition.client_rows(k)) for k in range(partition.n_clients)]
    k = int(np.argmin(sizes))
    if local_iterations > sizes[k]:
        raise ValueError(
            f"local_iterations={local_iterations} is more than client {k}'s "
            f"{sizes[k]} rows. Algorithm 3 draws H of a client's own rows "
            "without replacement, so H <= N_k; this also keeps the theorems' "
            "condition H/N <= 1 (Theorems 4.5 and 4.11) and P H/N <= 1 "
            f"(Theorem 4.8). Use local_iterations <= {sizes[k]} or 'auto'.")


def warn_paper_curvature(X, *, fit_intercept, intercept_scaling):
    """``dual_curvature="paper"``: the printed terms are the exact curvature
    (Algorithm 5) or an upper bound of it (Algorithm 3) only for rows of
    norm at most 1, which the theorems' bound ``G <= 2 L^2 / lambda``
    assumes; warn when a row is longer."""
    largest = float(np.max(row_sqnorms(X), initial=0.0)) + (
        intercept_scaling ** 2 if fit_intercept else 0.0)
    if largest > 1.0 + 1e-9:
        warnings.warn(
            "dual_curvature='paper' takes the curvature of the paper's "
            "printed terms, which assume rows of norm at most 1 (Algorithm "
            "5's closed form; the theorems' G <= 2 L^2 / lambda); here the "
            f"largest squared row norm is {largest:.3g}, so the fit may "
            "oscillate (Algorithm 5) or crawl (Algorithm 3). Normalise the "
            "rows (sklearn.preprocessing.Normalizer) or use "
            "dual_curvature='auto'.", UserWarning, stacklevel=3)


@fill_doc
class HyFDCAClassifier(FederatedMixin, LinearClassifierMixin, ClassifierMixin,
                       BaseEstimator):
    """Linear classifier trained by HyFDCA on a hybrid federated split.

    Hybrid Federated Dual Coordinate Ascent [1]_ minimises

    ``P(w) = lambda/2 ||w||^2 + 1/N sum_i l(y_i x_i^T w)``

    over data split in a grid: client ``k`` holds the rows of one row group
    restricted to the columns of one column group, and the labels of its
    rows. A server without any data coordinates: it sums the clients'
    encrypted partial inner products and their securely aggregated weight
    contributions, and steers the step. The dual variables never leave the
    clients (``solver="paper"``: the server holds them encrypted). Horizontal and vertical splits are the special cases of one
    column group and one row group.

    Parameters
    ----------
    %(partition_hybrid)s

    loss : {"hinge", "squared_hinge", "logistic"}, default="hinge"
        The loss ``l``. Hinge (the paper's) and squared hinge have closed-form
        dual coordinate steps; logistic takes a 1-D Newton solve.

    alpha : float, default=1e-2
        The regularisation strength ``lambda`` (> 0). The objective matches
        :class:`~sklearn.svm.LinearSVC` with ``C = 1 / (alpha * n_samples)``
        and ``loss="hinge"``. Smaller values need more rounds.

    max_iter : int, default=1000
        Maximum number of outer rounds ``T``.

    local_iterations : int or "auto", default="auto"
        ``H``, dual coordinates a participating client updates per round.
        ``"auto"``: one pass over its rows. Clients that hold parts of rows
        update their row group's coordinates all at once against the round's
        ``w`` (every client of the row group computes the same step from what
        the row group shares); clients that hold whole rows (one column
        group) update them one after the other, each step seeing the
        previous ones, and may make several passes (``H`` above their number
        of rows). ``solver="paper"``: each client draws its own ``H`` rows
        without replacement (Algorithm 3), so an int ``H`` above a client's
        number of rows ``N_k`` is refused (the theorems' ``H <= N`` and
        ``P H <= N`` follow from ``H <= N_k``); the paper tunes ``H`` per data
        set and one pass diverges with its constant step, so ``"auto"`` is
        ``ceil(sqrt(n_k))`` for a client with ``n_k`` rows there (one pass
        under ``gamma_t = 1/t``).

    participation : float, default=1.0
        Fraction of the clients that take part in each round, in (0, 1].
        ``solver="accelerated"``: whole row groups take part (a row group's
        duals move only in rounds where all its clients take part, otherwise
        the server's ``w`` would stop matching the duals). ``solver="paper"``:
        individual clients, as Algorithm 1's ``K^t`` (an absent client sends
        nothing; its duals, weights and inner-product parts stay stale); no
        theorem covers this on a hybrid grid. On a split with one row group
        (vertical) ``participation < 1`` needs ``solver="paper"`` and
        ``schedule="cyclic"``: section 4.3's cyclic sets of clients,
        ``ceil(1 / participation)`` of them, of equal size (Assumption 4.10;
        a number of clients they do not divide is refused).

    schedule : {"random", "cyclic"}, default="random"
        How participants are chosen when ``participation < 1``: a fresh
        random subset each round (section 4.2 on a horizontal split), or
        fixed sets that take turns. The subsets are of row groups for
        ``solver="accelerated"`` (its cycle is a round-robin of row groups,
        not section 4.3) and of clients for ``solver="paper"``. On a
        vertical split (``solver="paper"``) only ``"cyclic"``: the clients'
        sets of section 4.3 (Assumption 4.10, Theorem 4.11).

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
        usually is; the paper tunes ``H`` per data set): the fit then stops
        with :class:`DivergenceError`. Its ``local_iterations="auto"`` is
        ``ceil(sqrt(n_k))`` per client (our default, not the paper's: it
        converged on the five tables of ``benchmarks/bench_hyfdca_paper_h.py``,
        where one pass diverged on all five). ``"paper"`` also runs section
        4.3's cyclic participation on a vertical split (``participation < 1``,
        ``schedule="cyclic"``), which ``"accelerated"`` refuses. Parameters
        by solver: ``tol`` and ``packing`` only for ``"accelerated"``;
        ``step_size``, ``local_iterations``, ``participation`` and
        ``schedule`` mean the same for both except as stated under each.

    step_size : float, "auto" or "algorithm_5", default="auto"
        ``gamma_t``. ``solver="accelerated"``: the length of the step along
        the clients' dual direction, in (0, 1]. ``"auto"``: the server
        chooses it by an exact line search on the dual objective (from the
        clients' reported sums and the direction's securely summed
        weights), never accepts a step that lowers the dual, adds momentum
        (monotone FISTA) and rescales the clients' step curvature from the
        line search. This holds with any participation. A float keeps
        ``gamma_t`` constant with no safeguard; a divergence then stops the
        fit with :class:`DivergenceError`.

        ``solver="paper"`` (Algorithm 1's ``gamma_t`` and Algorithm 3's
        ``c_k``; the theorem that covers each setting):

        - ``"auto"``: the steps of the covering theorem, Algorithm 3.
          All clients: ``gamma_t = 1``, ``c_k = N_k / N`` (Theorems
          4.4/4.5; on a horizontal split ``c_k = 1``, Theorem 4.8). Random
          subsets of a horizontal split's clients: ``gamma_t = 1``, ``c_k =
          1`` (Theorem 4.8, which also assumes ``N/K`` rows per client).
          Cyclic sets of a vertical split's clients: ``gamma_t = 1/t``,
          ``c_k = 1`` (Theorem 4.11). A hybrid grid with clients missing:
          Theorem 4.4's steps, which no theorem covers there.
        - a float > 0: a constant ``gamma_t`` with the theorem's ``c_k``
          (Algorithm 3); it may exceed 1 where ``c_k < 1``: ``c_k gamma_t =
          1`` is the whole step (``2.0`` on two equal row groups). Covered
          only at the theorem's own ``gamma_t``.
        - ``"algorithm_5"``: Algorithm 5, the practical variant the paper's
          experiments run: each coordinate takes the whole one-dimensional
          step (``c_k gamma_t = 1`` for every client whatever its rows,
          ``gamma_t = 1``). Covered by Theorem 4.8 on a horizontal split and
          Theorem 4.4 on a vertical split with all clients (``c_k = 1``
          there); no theorem covers it on a hybrid grid (Theorem 4.4 wants
          ``c_k gamma_t = N_k/N``) or with cyclic vertical participation
          (Theorem 4.11 wants ``gamma_t = 1/t``).

    dual_curvature : {"auto", "mean", "row_norm", "paper"}, default="auto"
        The curvature ``q_i / (lambda N)`` of the quadratic term in each
        coordinate's step (the paper's boxes assume unit rows; a declared
        deviation, see Notes).

        - ``"mean"``: one public scalar for every row, ``kappa`` times the
          mean squared row norm over all rows, summed securely once at
          setup (phase ``"curvature"``: one float per client, no per-row
          norm). ``kappa`` is 1 for ``solver="accelerated"`` (its line
          search sets the level) and 2 for ``solver="paper"`` (a margin for
          its constant step; ours, not the paper's).
        - ``"auto"``: ``"mean"`` where clients hold parts of rows (vertical
          and hybrid splits); each row's exact ``||x_i||^2`` where clients
          hold whole rows (one column group: computed locally, nothing
          sent).
        - ``"row_norm"``: each row's exact ``||x_i||^2``, summed once at
          setup like the inner products, so the clients of a row group learn
          their partners' ``||x_{k',i}||^2``: with the margins this rebuilds
          a partner's block up to a rotation (``partner_block`` in the
          audit: r2 1.000). Kept for comparison; declared in the contract.
        - ``"paper"`` (``solver="paper"`` only): the printed term of the box
          that runs, which needs no norm and sends none: Algorithm 3's
          ``gamma_t^2 / (2 lambda)`` (curvature ``1 / lambda``: safe for
          rows of norm at most 1 but slow) or Algorithm 5's ``(delta /
          (lambda N))^2`` (exact for unit-norm rows; it oscillates on longer
          rows). A warning says so when a row is longer than 1.

    fit_intercept : bool, default=True
        Add a constant column of value ``intercept_scaling``, held by the
        clients of column group 0, whose weight (regularised like the others,
        as in liblinear) gives ``intercept_``.

    intercept_scaling : float, default=1.0
        Value of the constant column.

    tol : float or None, default=1e-3
        Not used by ``solver="paper"``. Stop when the duality gap ``P - D`` is at most ``tol * D``: then
        ``(P(w) - P*) / P* <= tol`` for the published ``w``. With partial
        participation the server's gap estimate uses the absent row groups'
        last reports; when it falls below ``tol`` the server holds still
        until every row group has reported on the same ``w`` and stops only
        if the exact gap confirms it. ``None`` runs ``max_iter`` rounds.

    %(encryption_schemes)s

    %(key_size)s

    packing : bool, default=True
        With encryption, pack several values into each plaintext (42 bits
        per value with two column groups: 48 values per 2048-bit Paillier
        plaintext, 16 per 2048-bit OU plaintext).
        ``False`` encrypts every value alone. Either way the fixed-point
        scale comes from the data (see Notes).

    %(n_jobs)s

    %(random_state)s

    %(verbose)s

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        The published primal weights ``w`` (one row per class for
        one-vs-rest): per class the ``w`` of smallest primal value among
        those the server evaluated exactly (every row group reporting on
        it).

    intercept_ : ndarray of shape (1,) or (n_classes,)
        ``intercept_scaling`` times the weight of the constant column; zeros
        when ``fit_intercept=False``.

    classes_ : ndarray of shape (n_classes,)
        The class labels.

    n_iter_ : int
        Outer rounds run.

    objective_curve_ : ndarray of shape (n_iter_, 2)
        Per round, the primal objective of the round's ``w`` and the dual
        objective of the duals after the round, summed over one-vs-rest
        tasks, as the server computes them from ``w`` and the row groups'
        reported sums (with partial participation, absent row groups count
        by their last report).

    duality_gap_ : float
        The last relative duality gap ``(P - D) / D`` the server computed.

    communication_ : CommunicationSummary
        Messages of ``fit`` by phase and link.

    crypto_time_ : float
        Seconds the parties spent encrypting, decrypting and adding
        ciphertexts, summed over parties.

    fit_time_ : float
        Wall-clock seconds of the protocol.

    partition_ : HybridPartition
        The resolved partition.

    n_features_in_ : int
        Number of features seen during ``fit``.

    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features, when ``X`` is a DataFrame with string columns.

    See Also
    --------
    sklearn.svm.LinearSVC : The centralised solver of the hinge objective.
    sklearn.linear_model.LogisticRegression : Centralised logistic loss.

    Notes
    -----
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
    - **Declared deviation: the curvature.** The paper's closed form has no
      ``||x_i||^2`` (it assumes unit-norm rows). Where clients hold parts
      of rows, the default (``dual_curvature="auto"``) steps every row with
      one public scalar, the mean squared row norm over all rows, from one
      secure sum at setup; whole rows keep their exact norms, computed
      locally. Each row's exact norm (``"row_norm"``) would have to be
      summed over its row group's clients, giving a client its partners'
      squared norms, which fix the metric of the partners' column space
      that the margins span: the partner's block up to a rotation
      (``partner_block``: r2 1.000 with ``"row_norm"``, see the user
      guide). Cost, 2 x 2 grid, standardised data: 111 -> 152 rounds on 300
      rows of breast cancer and 54 -> 56 on a synthetic table (relative gap
      to the optimum 9.8e-4 and 8.0e-4, below ``tol``); 116 -> 135 rounds
      on all 569 rows of breast cancer.
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
    - The clients of each row group share one Paillier (or, with
      ``encryption="ou"``, Okamoto-Uchiyama) key pair, one per row group,
      generated from the operating system's randomness (never
      ``random_state``); the server never holds a key. The paper has one
      key pair for all clients; every homomorphic sum is over one row
      group's rows, so nothing else changes, and a client cannot decrypt
      another row group's ciphertexts (``check_messages`` binds each key to
      its row group's rows). One
      client per row group decrypts the sums of its partners' encrypted parts
      and adds its own, never encrypted (the paper has every client encrypt
      and decrypt; the values and what each party learns are the same).
      Horizontal splits need no encryption at all (every exchange is a
      secure sum).

    What each party learns (see the user guide for the measured audit): the
    server sees ciphertexts of the inner products, the mean squared row
    norm (one float), one sum per column group of the clients' weight
    changes, the loss and conjugate sums totalled over the row groups (a
    secure sum; one row group's only in a round where it takes part alone),
    and the model ``w``; client ``k`` sees the margins and duals of its own
    rows, the mean squared row norm and the weights of its own columns
    (with ``dual_curvature="row_norm"`` its rows' squared norms too). A
    client also learns its row-group partners' parts of the
    margins, ``X_p w_p`` per round: their span is the column space of the
    partners' block, exact up to a linear map (``partner_block``); on a
    vertical split, with its own duals, the partners' Gram matrix.

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

    ``solver="paper"``: one round of Algorithm 1 as published. ``K^t`` are the
    round's clients (individual clients: all, a random subset, or cyclic
    sets), ``K-bar^t`` those of them absent the round before.

    1. The server sends the clients of ``K-bar^t`` ``enc(alpha_0)`` of their
       rows; they decrypt and run PrimalAggregation (Algorithm 4).
    2. SecureInnerProduct (Algorithm 2) for ``K^t``: the server sends each
       client the weights of its columns; each encrypts ``x_{k,i}^T w_k``;
       the server adds, per row, the latest parts of **every** client holding
       it (an absent client's last part: section 4.3's stale ``w``), and each
       client decrypts the sums of its rows.
    3. LocalDualMethod: each client draws ``H`` of its rows without
       replacement and takes each coordinate's one-dimensional maximiser,
       restricted by Algorithm 3 to the segment towards ``u_i in -dl(x_i^T
       w)`` of length ``c_k gamma_t |u_i - alpha_i|``, or whole
       (``step_size="algorithm_5"``: Algorithm 5); it sends ``enc(gamma_t /
       |B_n| delta alpha)`` for **all** its rows (zeros for the others),
       ``|B_n|`` the clients holding row ``n``.
    4. The server adds them to ``enc(alpha_0)`` homomorphically and sends each
       client of ``K^t`` the ciphertexts of its rows, which it decrypts; then
       PrimalAggregation for ``K^t``. With cyclic vertical participation the
       round ends with Algorithm 2 again (its parts are used while the client
       is away); otherwise that second call is the next round's first.

    Steps (``step_size="auto"``), from the theorem that covers the setting:
    cyclic vertical participation, ``gamma_t = 1/t`` and ``c_k = 1`` (Theorem
    4.11); a horizontal split (all clients or random subsets), ``gamma_t = 1``
    and ``c_k = 1`` (Theorem 4.8); any other split, ``gamma_t = 1`` and ``c_k =
    N_k / N`` (Theorem 4.4; no theorem covers a hybrid split with clients
    missing, the same steps are used). A float ``step_size`` is a constant
    ``gamma_t``; ``"algorithm_5"`` is the paper's Algorithm 5 (``c_k gamma_t
    = 1`` for every client), which its experiments run and which no theorem
    covers on a hybrid grid. The table of ``step_size`` says which theorem
    covers which setting.

    Conditions of the theorems that are checked (``ValueError``): ``H <=
    N_k`` for every client (Algorithm 3 draws ``H`` of the client's rows
    without replacement; it implies the theorems' ``H <= N`` and ``P H <=
    N``); equal cyclic sets on a vertical split (Assumption 4.10: ``C >= 2``
    sets of ``Q / C`` clients); a Lipschitz loss (Assumption 4.1, so not the
    squared hinge). Not checked: Theorem 4.8's ``N / K`` rows per client
    (Assumption 4.6; an odd ``N`` cannot split evenly), and the rows of norm
    at most 1 that the bound ``G <= 2 L^2 / lambda`` relies on in SDCA-type
    proofs (our inference: the proofs are in the extended paper's
    supplement), warned of with ``dual_curvature="paper"`` only.

    Readings where the paper is loose, chosen to keep its guarantees:

    - PrimalAggregation's ``w_hat_k`` would reach the server in plaintext per
      client; a client holding part of a row group's rows would give the
      server ``sum_{i in I_k} alpha_i x_{k,i}`` alone. Each client instead
      sends the change of its ``w_hat_k / (lambda N)`` since its last upload,
      summed over its column group by secure aggregation (a column group
      with one client this round, e.g. a vertical split, is a one-term sum:
      that part is the weights of its own columns, which the server publishes
      anyway). The server's ``w`` is the same.
    - **Declared deviation (the default, ``dual_curvature="auto"``).**
      The boxes' quadratic terms are not the dual's curvature
      ``||x_i||^2 / (lambda N)``: Algorithm 3 prints ``gamma_t^2 / (2
      lambda) (s c_k (u - alpha))^2``, curvature ``1 / lambda`` in the move
      (``N / ||x_i||^2`` times too large: safe but slow), Algorithm 5
      ``(delta / (lambda N))^2`` (unit-norm rows; section 5's closed form
      has no ``||x_i||^2``). Where clients hold parts of rows skfed uses
      ``kappa = 2`` times the public mean squared row norm over all rows
      (one secure sum at setup; the factor 2 is ours, a margin for the
      constant step: the plain mean overshoots on rows of large norm), and
      each row's exact norm where clients hold whole rows (computed
      locally). ``dual_curvature="row_norm"`` uses each row's exact norm
      everywhere, summed once like Algorithm 2, so the clients of a row
      group learn their partners' ``||x_{k',i}||^2`` (which fix the metric
      of the partners' block: ``partner_block``); ``"paper"`` takes the
      printed term and sends no norm. Cost of the mean against the exact
      norms on standardised breast cancer (2 x 2, ``H = 13``, ``lambda =
      1e-2``, no intercept): relative primal gap 6.9e-2 against 3.0e-2
      after 200 rounds, 1.4e-2 against 1.1e-2 after 400; after 1,000 rounds
      on the tables of ``benchmarks/bench_hyfdca_paper_h.py`` see the user
      guide. The printed terms cost more (200 rounds, median of 10 seeds
      of an independent reimplementation: 0.78 with Algorithm 5's, 0.80
      with Algorithm 3's, against 2.8e-2 exact); on unit-norm rows
      Algorithm 5's printed term is the exact one.
    - ``alpha`` is kept in label direction and per unit weight (``y_i
      alpha_i / s_i``), encrypted with absolute precision ``2**-44``:
      encrypted and plaintext fits agree to about ``1e-9``.
    - Slips of the boxes, read as follows. Algorithm 1 defines ``K-bar^t =
      {k in K^t, k not in K-bar^{t-1}}``; read as ``k not in K^{t-1}`` (the
      clients returning with stale duals: read literally, full
      participation would re-send ``enc(alpha_0)`` and re-run
      PrimalAggregation every other round for clients that are up to date;
      the iterates are the same either way, only the messages differ).
      Algorithms 3 and 5 list ``x_i^T w_0^t`` as input where their body and
      Algorithm 1's call use ``w_0^{t-1}``: the inner products of the start
      of the round. Algorithm 3's ``u_i in dl_i`` is read as ``-u_i in dl_i``
      (SDCA's direction for the paper's ``l*(-alpha)``: read literally it
      moves away from the optimum). Algorithm 4 sends ``w_0`` to
      ``K-bar``; here to the clients of the call. Section 5's hinge closed
      form lacks ``y_i`` in the margin and ``||x_i||^2``: ``clip(a + lambda N
      (1 - y_i x_i^T w) / ||x_i||^2, 0, 1)`` in label direction here.
    - The server never holds a key: it initialises ``enc(alpha_0)`` with the
      first round's sum (``alpha^0 = 0``). Each client draws its own
      coordinates (from ``random_state``), as Algorithm 3 says.
    - Partial participation is per client, as Algorithm 1's ``K^t``:
      ``round(participation * K)`` clients drawn uniformly each round
      (Assumption 4.7's equal chances), or ``ceil(1 / participation)`` fixed
      sets of clients in turn (section 4.3; equal sets required on a
      vertical split). An absent client sends nothing; the server divides
      by ``|B_n|`` all the same, keeps its last inner-product parts and
      its last ``w_hat_k`` (sections 4.2-4.3). On a hybrid grid no theorem
      covers this (section 4.2). A column group with one client present
      sends that client's change of ``w_hat_k`` alone (declared in the
      contract: the paper's plaintext ``w_hat_k``), which partial
      participation makes more frequent; its duals stay encrypted.
    - No objective is computed; the server checks what it holds, ``w``: non-
      finite weights, or a ``lambda/2 ||w||^2`` above the zero model's
      objective (so ``P(w) > P(0)``) in the last half of the rounds, raise
      :class:`DivergenceError` with a constant ``gamma_t``; with ``gamma_t =
      1/t`` (which overshoots only in its first rounds) the latter warns
      (ConvergenceWarning: raise ``max_iter``).

    References
    ----------
    .. [1] T. Overman, G. Blum, D. Klabjan, "A Primal-Dual Algorithm for
       Hybrid Federated Learning", AAAI 2024 (arXiv:2210.08106).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skfed.linear_model import HyFDCAClassifier
    >>> from skfed.partition import HybridPartition
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = HyFDCAClassifier(partition=HybridPartition(2, 2),
    ...                        encryption=None, random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.95
    True
    """

    _partition_kind = "hybrid"

    _parameter_constraints = {
        "partition": [None, list, tuple, HybridPartition, VerticalPartition,
                      HorizontalPartition],
        "loss": [StrOptions({"hinge", "squared_hinge", "logistic"})],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "local_iterations": [Interval(numbers.Integral, 1, None, closed="left"),
                             StrOptions({"auto"})],
        "participation": [Interval(numbers.Real, 0, 1, closed="right")],
        "schedule": [StrOptions({"random", "cyclic"})],
        "solver": [StrOptions({"accelerated", "paper"})],
        # (0, 1] and no "algorithm_5" for the accelerated solver: fit checks
        "step_size": [Interval(numbers.Real, 0, None, closed="neither"),
                      StrOptions({"auto", "algorithm_5"})],
        "dual_curvature": [StrOptions(set(DUAL_CURVATURES))],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(numbers.Real, 0, None, closed="neither")],
        "tol": [None, Interval(numbers.Real, 0, None, closed="left")],
        "encryption": [None, StrOptions({"paillier", "ou"})],
        "key_size": [Interval(numbers.Integral, 128, None, closed="left")],
        "packing": ["boolean"],
        "n_jobs": [None, numbers.Integral],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, partition=None, *, loss="hinge", alpha=1e-2,
                 max_iter=1000, local_iterations="auto", participation=1.0,
                 schedule="random", solver="accelerated", step_size="auto",
                 dual_curvature="auto", fit_intercept=True,
                 intercept_scaling=1.0, tol=1e-3, encryption="paillier",
                 key_size=2048, packing=True, n_jobs=None, random_state=None,
                 verbose=0):
        self.partition = partition
        self.loss = loss
        self.alpha = alpha
        self.max_iter = max_iter
        self.local_iterations = local_iterations
        self.participation = participation
        self.schedule = schedule
        self.solver = solver
        self.step_size = step_size
        self.dual_curvature = dual_curvature
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.encryption = encryption
        self.key_size = key_size
        self.packing = packing
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ fit

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, sample_party=None):
        """Run HyFDCA on the clients' blocks.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            The whole table; each client only ever holds its own block
            (CSR when ``X`` is sparse: CSR, CSC or COO).

        y : array-like of shape (n_samples,)
            Class labels; each client holds the labels of its rows.

        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights ``s_i``, held with the labels by the
            clients of each row's row group (they never leave them): row
            ``i``'s loss counts ``s_i`` times in an average over the total
            weight (see Notes), so integer weights equal repeated rows and
            zero weights equal removed rows. ``None``: all ones.

        sample_party : array-like of shape (n_samples,), default=None
            Row group of every row, instead of the partition's rule: ids
            ``0..n_row_groups-1``, or any labels (strings, ...), numbered in
            sorted order as scikit-learn's ``groups``. Routed by metadata
            routing in cross-validation.

        Returns
        -------
        self : HyFDCAClassifier
        """
        check_solver_options(self.solver, self.step_size,
                             self.dual_curvature)
        X, y = validate_data(self, X, y, dtype=np.float64,
                             accept_sparse=["csr", "csc", "coo"])
        weights = check_row_weights(sample_weight, X)
        check_classification_targets(y)
        self.classes_, y_index = np.unique(y, return_inverse=True)
        check_labels_not_single_class(self.classes_)
        check_sample_party(self.partition, sample_party)
        partition = self._resolve_partition(X, sample_party)
        check_encodable(X, alpha=self.alpha, fit_intercept=self.fit_intercept,
                        intercept_scaling=self.intercept_scaling,
                        encryption=self.encryption)
        check_participation(self.participation, partition, self.solver,
                            self.schedule)
        check_local_iterations(self.local_iterations, partition, self.solver)
        if self.solver == "paper" and self.dual_curvature == "paper":
            warn_paper_curvature(X, fit_intercept=self.fit_intercept,
                                 intercept_scaling=self.intercept_scaling)
        if len(self.classes_) == 2:
            Y = np.where(y_index == 1, 1.0, -1.0)[:, None]
        else:  # one-vs-rest: one +-1 column per class
            Y = np.where(y_index[:, None] == np.arange(len(self.classes_)),
                         1.0, -1.0)
        # One party setup for both solvers; the solver returns the model.
        solver = self._solver()
        setup = solver.set_up(X, Y, weights, partition)
        start = time.perf_counter()
        with self._federation(setup.states) as fed:
            result = solver.run(fed, setup, keep=self._kept)
        self.fit_time_ = time.perf_counter() - start
        self.crypto_time_ = result.crypto_time
        self.n_iter_ = result.n_iter
        self.duality_gap_ = result.duality_gap
        self.objective_curve_ = result.objective_curve
        self.coef_ = result.coef
        self.intercept_ = result.intercept
        # What the attackers among the clients hold beyond their messages
        # (keys, own duals): kept only while messages are recorded.
        if result.audit_log is not None:
            self._audit_log = result.audit_log
        elif hasattr(self, "_audit_log"):
            del self._audit_log
        return self

    def _solver(self):
        """The solver of ``solver``, made from the parameters it reads."""
        params = dict(
            loss=self.loss, alpha=self.alpha, max_iter=self.max_iter,
            local_iterations=self.local_iterations,
            participation=self.participation, schedule=self.schedule,
            step_size=self.step_size, fit_intercept=self.fit_intercept,
            intercept_scaling=self.intercept_scaling,
            encryption=self.encryption, key_size=self.key_size,
            n_jobs=self.n_jobs, random_state=self.random_state,
            verbose=self.verbose, dual_curvature=self.dual_curvature)
        if self.solver == "paper":
            return PaperSolver(**params)
        return AcceleratedSolver(tol=self.tol, packing=self.packing,
                                 grid=self._grid(), **params)

    def _grid(self):
        """The line search's step lengths (the objective reports' size;
        the paper solver sends no report, its steps need no grid)."""
        if self.step_size == "algorithm_5":
            return line_search_grid(self.loss, "auto")
        return line_search_grid(self.loss, self.step_size)

    def _kept(self, coef, intercept):
        """A fitted copy holding ``coef`` and ``intercept``: the last good
        model a :class:`DivergenceError` carries (this estimator is left
        unfitted, as after any failed fit)."""
        kept = copy.copy(self)
        kept.coef_, kept.intercept_ = coef, intercept
        return kept

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        tags.input_tags.sparse = True
        return tags

    # -- the privacy hooks (read by skfed.privacy) ---------------------------

    def _privacy_secrets(self, X, y=None, sample_weight=None, **fit_params):
        """The base secrets, plus each client's row weights (kind
        ``"weights"``) when the fit was weighted."""
        secrets = super()._privacy_secrets(X, y, **fit_params)
        if sample_weight is not None:
            weight = np.asarray(sample_weight, dtype=float)
            partition = self.partition_
            for k in range(partition.n_clients):
                secrets.append(Secret(f"client{k}", "weights",
                                      f"row weights of client{k}",
                                      weight[partition.client_rows(k)]))
        return secrets

    def _privacy_contract(self):
        partition = self.partition_
        sizes = [len(partition.client_rows(k))
                 for k in range(partition.n_clients)]
        solver = getattr(self, "solver", "accelerated")
        # Only the curvature exchange of this fit's setting is declared (the
        # mean, the rows' norms, or nothing): any other would be flagged.
        exchange = curvature_exchange(
            getattr(self, "dual_curvature", "auto"),
            partition.n_column_groups == 1)
        return hyfdca_contract(min(sizes) if sizes else 1, solver,
                               curvature=exchange,
                               n_rows=len(partition.owners))

    def _privacy_attacks(self):
        return [row_reconstruction, report_inversion, partner_block,
                model_differences]

    def _privacy_own_block(self, party, X):
        """``party``'s block as the protocol computes with it: its cell,
        plus the constant intercept column for column group 0 (read by the
        ``accumulation`` attack of :mod:`skfed.privacy`)."""
        k = self._privacy_party_names().index(party)
        blocks, _, _ = client_blocks(X, self.partition_, self.fit_intercept,
                                     self.intercept_scaling)
        return blocks[k]
