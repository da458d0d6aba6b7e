"""HyFDCA: primal-dual federated learning on hybrid (row x column) splits.

The driver :meth:`HyFDCAClassifier._run_protocol` reads as Algorithm 1 of
Overman, Blum and Klabjan; the party functions live in
:mod:`._hyfdca_protocol`.
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
from ..base import FederatedMixin, check_labels_not_single_class, party_seeds
from ..crypto import generate_keypair
from ..partition import (HorizontalPartition, HybridPartition,
                         VerticalPartition)
from . import _hyfdca_protocol as P
from ._hyfdca_exchange import SERVER, Participation, Protocol, client_name

__all__ = ["HyFDCAClassifier"]

@fill_doc
class HyFDCAClassifier(FederatedMixin, LinearClassifierMixin, ClassifierMixin,
                       BaseEstimator):
    """Linear classifier trained by HyFDCA on a hybrid federated split.

    Hybrid Federated Dual Coordinate Ascent [1]_ minimises

    ``P(w) = lambda/2 ||w||^2 + 1/N sum_i l(y_i x_i^T w)``

    over data split in a grid: client ``k`` holds the rows of one row group
    restricted to the columns of one column group, and the labels of its
    rows. A server without any data (and without the private key) keeps the
    dual variables encrypted, averages the clients' dual updates and builds
    the primal weights. Horizontal and vertical splits are the special cases
    of one column group and one row group.

    Parameters
    ----------
    %(partition_hybrid)s

    loss : {"hinge", "squared_hinge", "logistic"}, default="hinge"
        The loss ``l``. Hinge (the paper's) and squared hinge have closed-form
        dual coordinate steps; logistic takes a 1-D Newton solve.

    alpha : float, default=1e-2
        The regularisation strength ``lambda`` (> 0). The objective matches
        :class:`~sklearn.svm.LinearSVC` with ``C = 1 / (alpha * n_samples)``
        and ``loss="hinge"``.

    max_iter : int, default=300
        Maximum number of outer rounds ``T``.

    local_iterations : int, default=10
        ``H``: dual coordinates each participating client updates per round
        (at most its number of rows). The paper's only tuned hyperparameter.

    participation : float, default=1.0
        Fraction of the clients that take part in each round, in (0, 1].

    schedule : {"random", "cyclic"}, default="random"
        How participants are chosen when ``participation < 1``: a fresh
        random subset each round (section 4.2), or fixed sets of clients that
        take turns (section 4.3, made for vertical splits).

    step_size : float or "auto", default="auto"
        The aggregation weight ``gamma_t`` in (0, 1]: the server adds
        ``gamma_t / |B_n|`` times each update of sample ``n``. A float keeps
        it constant (the paper uses 1). ``"auto"`` starts at 1 and lets the
        server halve it whenever the reported dual objective decreased (the
        clients' parallel steps overshot, which happens on correlated
        features with a large ``local_iterations``), and grow it back by 5 percent
        per successful round up to 1. With ``participation < 1`` the dual
        value the server sees is partly stale, so ``"auto"`` means 1 then.

    fit_intercept : bool, default=True
        Add a constant column of value ``intercept_scaling``, held by the
        clients of column group 0, whose weight (regularised like the others,
        as in liblinear) gives ``intercept_``.

    intercept_scaling : float, default=1.0
        Value of the constant column.

    tol : float or None, default=1e-4
        Stop when the relative duality gap ``(P - D) / P`` reported at the
        start of a round is below ``tol``. ``None`` runs ``max_iter`` rounds.
        With partial participation the gap is the server's estimate from
        partly stale reports.

    %(encryption)s

    %(key_size)s

    packing : bool, default=True
        With encryption, pack several values into each Paillier plaintext
        (as many as the key holds: 28 for 2048 bits), each with magnitude at
        most 2^20 and absolute precision 2^-40. Cuts encryption work and
        message sizes by that factor. ``False`` encrypts every value alone
        (precision 2^-48, no magnitude limit).

    %(n_jobs)s

    %(random_state)s

    %(verbose)s

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        The published primal weights ``w`` (one row per class for
        one-vs-rest): with every client taking part, per class the round's
        ``w`` with the smallest primal objective the server computed (see
        Notes); with partial participation the last ``w``.

    intercept_ : ndarray of shape (1,) or (n_classes,)
        ``intercept_scaling`` times the weight of the constant column; zeros
        when ``fit_intercept=False``.

    classes_ : ndarray of shape (n_classes,)
        The class labels.

    n_iter_ : int
        Outer rounds run.

    objective_curve_ : ndarray of shape (n_iter_ + 1, 2)
        Primal and dual objective after each round (row 0: the start),
        summed over one-vs-rest tasks, as the server computes them from
        ``||w||^2`` and the row groups' reported sums. ``P - D`` is the
        duality gap. With partial participation the reports of absent row
        groups are the latest ones (stale).

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
    One round (Algorithm 1, with the practical Algorithm 5 as local method
    and, as in the paper's experiments, without the second
    SecureInnerProduct):

    1. The server picks the participants ``K_t``; those absent last round
       get ``enc(alpha_0)`` of their rows and run PrimalAggregation
       (Algorithm 4) so nobody starts from stale duals or weights.
    2. SecureInnerProduct (Algorithm 2): each participant encrypts
       ``x_{k,i}^T w_k`` for its rows; the server adds the parts of each row
       group (keeping absent clients' last parts) and returns
       ``enc(x_i^T w)``, which the clients decrypt. Skipped when clients hold
       whole rows (one column group): they compute it themselves.
    3. Each participant updates ``H`` random dual coordinates by exact 1-D
       maximisation and sends ``enc(gamma_t / |B_n| delta_alpha)`` for all
       its rows; the server adds them into ``enc(alpha_0)``.
    4. The server sends ``enc(alpha_0)`` back; the participants decrypt and
       send ``w_hat_k = X_k^T alpha_k`` (plaintext: the paper encrypts
       ``alpha``, not ``w``); the server forms ``w_0 = sum w_hat / (lambda
       N)`` and sends each client the weights of its own columns.

    Choices where the paper is silent or loose:

    - The coordinate step uses ``||x_i||^2`` (the paper's closed form omits
      it, i.e. assumes unit-norm rows). A client only holds part of
      ``x_i``, so the squared norms are summed once at setup like the inner
      products (encrypted parts added by the server): the clients of a row
      group learn ``||x_i||^2`` of their rows.
    - The clients' random coordinate sets are drawn independently (seeds from
      ``random_state``); updates of a row are averaged over all ``|B_n|``
      clients holding it, participating or not (the paper's Algorithm 1).
    - ``gamma_t``: the paper uses 1 (and ``1/t`` in its theory for the
      cyclic schedule). The parallel exact steps of many clients against the
      same ``w`` can overshoot on correlated data, so by default the server
      adapts ``gamma_t`` from the dual objective it already computes (see
      ``step_size``) and sends it to the participants (one scalar).
    - For ``objective_curve_`` and ``tol``, one client per row group sends
      the server two plaintext sums per task each round (loss and conjugate
      sums over its rows), which the paper does not do.
    - The published model is, per class, the iterate ``w_t`` with the
      smallest reported primal value, not necessarily the last: with the
      hinge loss ``P(w(alpha_t))`` is not monotone even while the dual
      objective rises. ``objective_curve_`` shows every iterate. With
      partial participation the reports are partly stale, and the last
      ``w_t`` is published.
    - Multiclass problems are solved one-vs-rest, all classes in the same
      messages.
    - The two sides share one Paillier key pair generated from the operating
      system's randomness (never ``random_state``); the server only has the
      public key. Values are packed ``n_slots`` per ciphertext in the rows'
      order (``packing=True``; every client of a row group uses the same
      layout, so the server adds packed ciphertexts slot by slot), or
      encrypted one by one with a shared fixed-point precision of 2^-48;
      either way the server's sums need no exponent alignment.

    What each party learns: the server sees ciphertexts of the duals and
    inner products, the plaintext local sums ``w_hat_k`` and the model
    ``w``; client ``k`` sees the duals, inner products and squared norms of
    its own rows and the weights of its own columns.

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
    >>> clf = HyFDCAClassifier(partition=HybridPartition(2, 2), alpha=0.1,
    ...                        max_iter=200, tol=1e-2, encryption=None,
    ...                        random_state=0)
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
        "local_iterations": [Interval(numbers.Integral, 1, None, closed="left")],
        "participation": [Interval(numbers.Real, 0, 1, closed="right")],
        "schedule": [StrOptions({"random", "cyclic"})],
        "step_size": [Interval(numbers.Real, 0, 1, closed="right"),
                      StrOptions({"auto"})],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(numbers.Real, 0, None, closed="neither")],
        "tol": [None, Interval(numbers.Real, 0, None, closed="left")],
        "encryption": [None, StrOptions({"paillier"})],
        "key_size": [Interval(numbers.Integral, 128, None, closed="left")],
        "packing": ["boolean"],
        "n_jobs": [None, numbers.Integral],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, partition=None, *, loss="hinge", alpha=1e-2,
                 max_iter=300, local_iterations=10, participation=1.0,
                 schedule="random", step_size="auto", fit_intercept=True,
                 intercept_scaling=1.0, tol=1e-4, encryption="paillier",
                 key_size=2048, packing=True, n_jobs=None, random_state=None, verbose=0):
        self.partition = partition
        self.loss = loss
        self.alpha = alpha
        self.max_iter = max_iter
        self.local_iterations = local_iterations
        self.participation = participation
        self.schedule = schedule
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
    def fit(self, X, y, sample_party=None):
        """Run HyFDCA on the clients' blocks.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The whole table; each client only ever holds its own block.

        y : array-like of shape (n_samples,)
            Class labels; each client holds the labels of its rows.

        sample_party : array-like of int of shape (n_samples,), default=None
            Row group of every row (ids ``0..n_row_groups-1``), instead of
            the partition's rule. Routed by metadata routing in
            cross-validation.

        Returns
        -------
        self : HyFDCAClassifier
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, y_index = np.unique(y, return_inverse=True)
        check_labels_not_single_class(self.classes_)
        if sample_party is not None and isinstance(
                self.partition, (VerticalPartition, list, tuple)):
            raise ValueError(
                "sample_party was given, but the partition is vertical (one "
                "row group: every client holds every row). Pass a "
                "HybridPartition or HorizontalPartition to split rows.")
        partition = self._resolve_partition(X, sample_party)
        if len(self.classes_) == 2:
            Y = np.where(y_index == 1, 1.0, -1.0)[:, None]
        else:  # one-vs-rest: one +-1 column per class
            Y = np.where(y_index[:, None] == np.arange(len(self.classes_)),
                         1.0, -1.0)
        w = self._run_protocol(X, Y, partition)
        n_features = X.shape[1]
        self.coef_ = np.ascontiguousarray(w[:n_features].T)
        if self.fit_intercept:
            self.intercept_ = self.intercept_scaling * w[n_features]
        else:
            self.intercept_ = np.zeros(w.shape[1])
        return self

    def _client_blocks(self, X, partition):
        """Each client's block, and the global weight ids of its columns."""
        n_features = X.shape[1]
        blocks, rows, columns = {}, {}, {}
        for k in range(partition.n_clients):
            r_idx = partition.client_rows(k)
            c_idx = partition.client_columns(k)
            block = X[np.ix_(r_idx, c_idx)]
            ids = c_idx
            if self.fit_intercept and partition.client_cell(k)[1] == 0:
                # The constant column travels with column group 0.
                block = np.hstack([block, np.full((len(r_idx), 1),
                                                  float(self.intercept_scaling))])
                ids = np.append(c_idx, n_features)
            blocks[k], rows[k], columns[k] = block, r_idx, ids
        return blocks, rows, columns

    def _run_protocol(self, X, Y, partition):
        n_samples, n_features = X.shape
        K = partition.n_clients
        n_col_groups = partition.n_column_groups
        lam = float(self.alpha)
        blocks, rows, columns = self._client_blocks(X, partition)
        row_group_of = {k: partition.client_cell(k)[0] for k in range(K)}
        # Keys: one pair shared by the clients, the public half to the server.
        public_key, private_key = generate_keypair(
            self.key_size, plaintext=self.encryption is None)
        encoder = None
        if self.encryption is not None and self.packing:
            # enc(alpha) gains |B_n| summands per round: the layout must
            # leave room for all of them (and for the newcomers' resends).
            encoder = P.packing_encoder(
                self.key_size, 2 + 2 * (self.max_iter + 1) * n_col_groups)
        seeds = party_seeds(self.random_state, K + 1)
        states = {SERVER: P.server_state(
            public_key, rows, columns, row_group_of, partition.n_row_groups,
            n_features + int(self.fit_intercept), Y.shape[1], lam=lam,
            n_samples=n_samples, n_jobs=self.n_jobs, encoder=encoder)}
        for k in range(K):
            states[client_name(k)] = P.client_state(
                blocks[k], Y[rows[k]], public_key, private_key, loss=self.loss,
                lam=lam, n_samples=n_samples, n_holders=n_col_groups,
                local_iterations=self.local_iterations, seed=seeds[k + 1],
                n_jobs=self.n_jobs, encoder=encoder)
        participants = Participation(K, float(self.participation),
                                      self.schedule, seeds[0])
        start = time.perf_counter()
        with self._federation(states) as fed:
            protocol = Protocol(fed, n_col_groups == 1, row_group_of)
            w, curve, n_iter = self._algorithm_1(fed, protocol, K,
                                                 participants)
            seconds = fed.gather(fed[name].call(P.crypto_seconds)
                                 for name in fed.party_names)
        self.fit_time_ = time.perf_counter() - start
        self.crypto_time_ = float(sum(seconds))
        self.n_iter_ = n_iter
        self.objective_curve_ = np.asarray(curve, dtype=np.float64)
        return w

    def _algorithm_1(self, fed, protocol, K, participants):
        """Algorithm 1 (HyFDCA), practical variant; returns w, curve, n_iter."""
        fed[SERVER].call(P.server_init_duals).result()
        protocol.squared_norms(list(range(K)))
        # With partial participation the server's dual value mixes stale
        # reports and stale weights, too noisy to steer gamma: keep 1 then.
        adaptive = self.step_size == "auto" and participants.all
        gamma = 1.0 if self.step_size == "auto" else float(self.step_size)
        curve, previous, converged = [], set(), False
        clients = []
        t = 0
        for t in range(1, self.max_iter + 1):
            # Server: who takes part; newcomers catch up on duals and weights.
            clients = participants(t)
            newcomers = [k for k in clients if k not in previous]
            if newcomers:
                protocol.send_duals(newcomers)
                protocol.primal_aggregation(newcomers, clients)
            # SecureInnerProduct: x_i^T w_0^{t-1} for the participants' rows.
            protocol.secure_inner_product(clients)
            primal, dual = protocol.objective(clients)
            curve.append((primal, dual))
            if self.verbose:
                print(f"[HyFDCA] round {t}: clients {clients} primal "
                      f"{primal:.6g} dual {dual:.6g} gap {primal - dual:.3g}")
            if self.tol is not None and primal - dual <= self.tol * abs(primal):
                converged = True
                t -= 1
                break
            if adaptive and len(curve) > 1:
                # Server: a dual decrease means the parallel steps overshot.
                gamma = (gamma / 2 if dual < curve[-2][1]
                         else min(1.0, gamma * 1.05))
            # Clients: LocalDualMethod, then encrypted scaled updates.
            protocol.local_dual_method(clients, gamma)
            # Server: enc(alpha_0) += sum_b enc(gamma/|B_n| delta_alpha_b).
            fed[SERVER].call(P.server_run, P.server_average_duals,
                             "dual updates").result()
            # Server -> participants: enc(alpha_0); then PrimalAggregation.
            protocol.send_duals(clients)
            protocol.primal_aggregation(clients, clients)
            previous = set(clients)
        if not converged:
            # The second SecureInnerProduct, once: the last iterate's values.
            protocol.secure_inner_product(clients)
            primal, dual = protocol.objective(clients)
            curve.append((primal, dual))
            if self.tol is not None and primal - dual > self.tol * abs(primal):
                warnings.warn(
                    f"HyFDCA did not reach a relative duality gap of "
                    f"{self.tol} in {self.max_iter} rounds (gap "
                    f"{(curve[-1][0] - curve[-1][1]) / abs(curve[-1][0]):.3g})."
                    " Raise max_iter or local_iterations, or loosen tol.",
                    ConvergenceWarning)
        # The reported primal values are exact only when every client took
        # part; otherwise they mix stale reports and the last w is published.
        w = fed[SERVER].call(P.server_model, participants.all).result()
        return w, curve, t

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags
