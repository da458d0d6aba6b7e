"""HyFDCA: primal-dual federated learning on hybrid (row x column) splits.

The driver :meth:`HyFDCAClassifier._algorithm_1` reads as Algorithm 1 of
Overman, Blum and Klabjan; the party functions live in
:mod:`._protocol` (their one-dimensional maths in :mod:`._dual`,
their encryption in :mod:`._hyfdca_encryption`), the exchanges in
:mod:`._hyfdca_exchange`, the privacy contract in :mod:`._contract`,
the checks and the clients' blocks (dense or CSR) and weights in
:mod:`._hyfdca_data`, and the class Notes in :mod:`._hyfdca_docs`.
``solver="paper"`` (the published Algorithm 1) runs in :mod:`._paper`.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .._docstrings import fill_doc
from ..base import (FederatedMixin, check_labels_not_single_class,
                    check_row_weights, party_seeds)
from ..crypto import generate_keypair
from ..exceptions import DivergenceError
from .._progress import Progress
from ..federation import Local, protocol_rounds
from ..partition import (HorizontalPartition, HybridPartition,
                         VerticalPartition)
from . import _protocol as P
from ._dual import LINE_SEARCH_GRID
from ._hyfdca_encryption import crypto_seconds, weight_change_encoder
from ._hyfdca_docs import with_notes
from ._hyfdca_data import (check_encodable, check_participation,
                           check_sample_party, client_blocks)
from ._hyfdca_exchange import (SERVER, Participation, Protocol, client_name,
                               divergence_error)
from ._paper import run_paper
from ._reports import round_summary
from ._contract import HyFDCAPrivacyMixin

__all__ = ["HyFDCAClassifier", "DivergenceError"]


@fill_doc
@with_notes
class HyFDCAClassifier(HyFDCAPrivacyMixin, FederatedMixin,
                       LinearClassifierMixin, ClassifierMixin, BaseEstimator):
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
        (at most one pass); the paper tunes ``H`` and one pass diverges with
        its constant step, so ``"auto"`` is ``ceil(sqrt(n_k))`` for a
        client with ``n_k`` rows there (one pass under ``gamma_t = 1/t``).

    participation : float, default=1.0
        Fraction of the clients that take part in each round, in (0, 1]. A
        row group's duals move only in rounds where all its clients take
        part (otherwise the server's ``w`` would stop matching the duals).
        On a split with one row group (vertical) ``participation < 1``
        needs ``solver="paper"`` and ``schedule="cyclic"``: section 4.3's
        cyclic sets of clients, ``ceil(1 / participation)`` of them.

    schedule : {"random", "cyclic"}, default="random"
        How participants are chosen when ``participation < 1``: a fresh
        random subset of the row groups each round (section 4.2 on a
        horizontal split), or fixed sets of row groups that take turns (a
        round-robin of row groups, not section 4.3). On a vertical split
        (``solver="paper"``) only ``"cyclic"``: the clients' sets of
        section 4.3 (Assumption 4.10, Theorem 4.11).

    %(hyfdca_solver)s

    step_size : float or "auto", default="auto"
        ``gamma_t``, the length of the step along the clients' dual
        direction, in (0, 1]. ``"auto"``: the server chooses it by an exact
        line search on the dual objective (from the clients' reported sums
        and the direction's securely summed weights), never accepts a step
        that lowers the dual, adds momentum (monotone FISTA) and rescales the
        clients' step curvature from the line search. This holds with any
        participation. A float keeps ``gamma_t`` constant with no safeguard
        (the paper uses 1 with few coordinates per round); a divergence then
        stops the fit with :class:`DivergenceError`.

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
    %(hyfdca_notes)s

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
        "step_size": [Interval(numbers.Real, 0, 1, closed="right"),
                      StrOptions({"auto"})],
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
                 fit_intercept=True,
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
        if len(self.classes_) == 2:
            Y = np.where(y_index == 1, 1.0, -1.0)[:, None]
        else:  # one-vs-rest: one +-1 column per class
            Y = np.where(y_index[:, None] == np.arange(len(self.classes_)),
                         1.0, -1.0)
        if self.solver == "paper":
            w = run_paper(self, X, Y, weights, partition)
        else:
            w = self._run_protocol(X, Y, weights, partition)
        n_features = X.shape[1]
        self.coef_ = np.ascontiguousarray(w[:n_features].T)
        if self.fit_intercept:
            self.intercept_ = self.intercept_scaling * w[n_features]
        else:
            self.intercept_ = np.zeros(w.shape[1])
        return self

    def _grid(self):
        grid = LINE_SEARCH_GRID[self.loss]
        if self.step_size == "auto":
            return grid
        # A fixed step: the reports give the conjugate sums at 0, (s/2,) s.
        return grid[[0, -1]] * float(self.step_size) if self.loss != (
            "squared_hinge") else np.array([0.0, 0.5, 1.0]) * float(self.step_size)

    def _run_protocol(self, X, Y, weights, partition):
        n_samples, n_features = X.shape
        K = partition.n_clients
        C = partition.n_column_groups
        R = partition.n_row_groups
        lam = float(self.alpha)
        whole_rows = C == 1
        blocks, rows, columns = client_blocks(
            X, partition, self.fit_intercept, self.intercept_scaling)
        row_group_of = {k: partition.client_cell(k)[0] for k in range(K)}
        # Keys: one pair shared by the clients; the server never holds one.
        # Whole rows need no encryption at all: no key then.
        private_key = None
        if not whole_rows:
            _, private_key = generate_keypair(  # fit warned of a small key
                self.key_size, plaintext=self.encryption is None,
                scheme=self.encryption or "paillier", warn=False)
        seeds = party_seeds(self.random_state, 1 + R + K)
        group_seeds, client_seeds = seeds[1:1 + R], seeds[1 + R:]
        grid = self._grid()
        states = {SERVER: P.server_state(
            rows, columns, row_group_of, n_features + int(self.fit_intercept),
            Y.shape[1], loss=self.loss, lam=lam, n_samples=n_samples,
            step_size=self.step_size, tol=self.tol, grid=grid)}
        for k in range(K):
            # Parts of rows: the row group's clients share the coordinate
            # choice (they compute the same step). Whole rows: the client's own.
            seed = client_seeds[k] if whole_rows else group_seeds[row_group_of[k]]
            # Row weights go, like the labels, to the clients of the rows.
            states[client_name(k)] = P.client_state(
                blocks[k], Y[rows[k]],
                None if weights is None else weights[rows[k]], private_key,
                loss=self.loss, lam=lam, n_samples=n_samples, whole_rows=whole_rows,
                local_iterations=self.local_iterations, seed=seed,
                n_jobs=self.n_jobs, packing=self.packing, n_holders=C,
                row_group=row_group_of[k])
        participants = Participation(partition, float(self.participation),
                                     self.schedule, seeds[0])
        largest_rows = max(len(r) for r in rows.values())
        # N of the average: the number of rows, or with weights the total
        # weight, which the clients sum securely at setup.
        total = {"N": n_samples}

        def ring_encoder(scale, n_terms):
            return weight_change_encoder(
                self.loss, lam, total["N"], largest_rows, scale, n_terms,
                weighted=weights is not None)

        start = time.perf_counter()
        with self._federation(states) as fed:
            protocol = Protocol(fed, partition, columns, Y.shape[1],
                                ring_encoder)
            if weights is not None:
                total["N"] = protocol.total_weight(range(K))
            w, curve, n_iter, gap = self._algorithm_1(
                fed, protocol, partition, participants, grid)
            seconds = fed.gather(fed[name].call(crypto_seconds)
                                 for name in fed.party_names)
        self.fit_time_ = time.perf_counter() - start
        self.crypto_time_ = float(sum(seconds))
        self.n_iter_ = n_iter
        self.duality_gap_ = gap
        self.objective_curve_ = np.asarray(curve, dtype=np.float64).reshape(-1, 2)
        return w

    def _algorithm_1(self, fed, protocol, partition, participants, grid):
        """Algorithm 1 (HyFDCA), with the round of the class Notes."""
        server = fed[SERVER]
        everyone = list(range(partition.n_clients))
        C = partition.n_column_groups
        partial = not participants.all
        # Setup: the fixed-point scale, then the rows' squared norms.
        scale = protocol.agree_scale(everyone)
        protocol.squared_norms(everyone)
        curve, converged, gap, t = [], False, float("inf"), 0
        # Encrypted rounds are slow: the first line tells the wait (a bound).
        progress = Progress("HyFDCA", self.max_iter, self.verbose, fed=fed,
                            estimate=self.encryption is not None and C > 1
                            and ("at most" if self.tol is not None else True))
        for t in protocol_rounds(range(1, self.max_iter + 1)):
            # Server: who takes part; a row group moves with all its clients.
            clients = participants(t)
            present = set(clients)
            groups = sorted({r for r in range(partition.n_row_groups)
                             if all(r * C + c in present for c in range(C))})
            active = [k for k in clients if protocol.row_group[k] in groups]
            if not active:
                curve.append(curve[-1] if curve else (np.nan, 0.0))
                continue
            mu, beta, verifying = server.call(P.server_next_point).result()
            # The round's point (momentum) and its weights, summed securely.
            protocol.point_weights(active, mu if self.step_size == "auto"
                                   else None, scale)
            protocol.send_weights(active)
            # SecureInnerProduct: x_i^T w at the point, for the active rows.
            protocol.secure_inner_product(active)
            # Clients: LocalDualMethod; the direction's weights, securely.
            if verifying:
                protocol.no_direction(active)
                dw = None
            else:
                dw = protocol.local_dual_method(active, beta, scale)
            reports = protocol.reports(active, grid)
            # Server: P, D and the gap; the step by line search.
            out = server.call(P.server_step, *map(Local, reports), Local(dw),
                              Local(partial)).result()
            curve.append((out["primal"], out["dual"]))
            gap = out["gap"]
            progress.report(t, round_summary(out, len(clients)),
                            last=bool(out["stop"] or out["diverged"]))
            if out["diverged"]:
                raise divergence_error(self, server, t, out)
            if out["stop"]:
                converged = True
                break
            if out["step"] is not None:
                protocol.apply_step(active, *out["step"])
            else:  # no step this round: the duals stay where they are
                protocol.reset_point(active)
        if not converged and participants.all:
            # The second SecureInnerProduct of Algorithm 1, once: the last
            # step's w is evaluated too (it may be the best, or converged).
            protocol.point_weights(everyone, None, scale)
            protocol.send_weights(everyone)
            protocol.secure_inner_product(everyone)
            protocol.no_direction(everyone)
            reports = protocol.reports(everyone, grid)
            out = server.call(P.server_step, *map(Local, reports),
                              Local(None), Local(False)).result()
            gap, converged = out["gap"], out["stop"]
        if not converged and self.tol is not None:
            warnings.warn(
                f"HyFDCA did not reach a relative duality gap of {self.tol} "
                f"in {self.max_iter} rounds (gap {gap:.3g}). Raise max_iter, "
                "or loosen tol; standardised features (StandardScaler) and a "
                "larger alpha converge in fewer rounds.", ConvergenceWarning)
        w = server.call(P.server_model, True).result()
        return w, curve, t, gap

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        tags.input_tags.sparse = True
        return tags
