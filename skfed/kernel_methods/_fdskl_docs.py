"""The docstrings FDSKLClassifier and FDSKLRegressor share.

The parameters common to both (``__SHARED__`` in their docstrings) and the
classifier's Notes (``__NOTES__``: the protocol, its choices, privacy and
cost), filled in once the classes are defined.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

__all__ = ["expand_shared_doc"]

import textwrap

from .._docstrings import SHARED_NOTES

_SHARED_DOC = """
    loss : {loss_options}, default={loss_default!r}
        The loss ``L(f(x), y)`` of the paper's Table 1.{loss_note}

    kernel : {{"rbf", "laplacian"}}, default="rbf"
        The shift-invariant kernel whose random Fourier features are used.

    gamma : "scale" or float, default="scale"
        Kernel coefficient, as in :class:`~sklearn.svm.SVC`:
        ``exp(-gamma ||x - x'||^2)`` for ``"rbf"``, ``exp(-gamma ||x - x'||_1)``
        for ``"laplacian"``. ``"scale"`` is ``1 / (n_features * X.var())``;
        the variance comes from per-party sums aggregated over a tree.

    alpha : float, default=1e-4
        The regularization ``lambda`` of the paper: every step multiplies the
        earlier coefficients by ``1 - learning_rate * alpha``.

    learning_rate : "auto" or float, default="{lr}"
        The constant step size ``gamma`` of Algorithm 1 (the paper analyses a
        constant rate, and so it stays constant). ``"auto"`` derives it from
        the loss's smoothness ``S`` (1 for the squared and smooth hinge
        losses, 1/4 for the logistic), the bound of the random features
        (``phi^2 <= 2``, mean 1), the batch size ``B``, the features per step
        ``m`` and the training rows ``n``::

            min(1 / (S (1 + 1 / (B m)) + alpha),
                max(B m / (S n), sqrt(B m / max_iter) / (8 S)))

        (see Notes). ``learning_rate * alpha`` must be below 1; ``"auto"``
        always is. The resolved value is ``learning_rate_``.{lr_note}

    max_iter : int or "auto", default="auto"
        Maximum number of steps of Algorithm 1 (all of them without early
        stopping, as the paper's loop). ``"auto"``: 5 passes over the
        training rows (epochs, as :class:`~sklearn.linear_model.SGDClassifier`
        counts them), ``ceil(5 n_train / batch_size)`` steps, at least
        {min_steps}. With the other defaults that is {min_steps} steps up to
        10,000 rows (the former fixed default) and ``ceil(5 n_train / 32)``
        above, on the pool (see ``n_components``). With fresh features
        (``n_components=None``) a step's traffic grows with the steps
        before it, so ``"auto"`` on a large table is meant with a pool (see
        Notes, "Large tables"). The resolved value is ``max_iter_``.

    batch_size : int or "auto", default="auto"
        Rows per step (capped at the number of training rows). ``"auto"``:
        256 with fresh features, 32 with a pool (a pool's step costs
        ``batch_size * n_components`` pairs and its epoch ``n_train *
        n_components`` for any batch, so smaller batches are more steps for
        the same traffic). The paper's loop is ``batch_size=1``. The
        resolved value is ``batch_size_``.

    n_components_per_iter : int or "auto", default="auto"
        Fresh random features per step; the model ends with
        ``n_iter_ * n_components_per_iter`` of them. The paper's loop is 1.
        With a pool, the pool's features a step updates (capped at
        ``n_components``: all of them cost no more traffic). ``"auto"``: 32
        with fresh features, the whole pool with a pool. The resolved value
        is ``n_components_per_iter_``.

    n_components : int, None or "auto", default="auto"
        ``None``: every step draws fresh features (the paper's seeds ``i =
        1, 2, ...``): the model grows by ``n_components_per_iter`` features
        a step, and scoring a row costs every feature created since the
        row's last visit. An int ``D``: the feature seeds cycle over a pool
        of ``D`` (step ``t`` uses seeds ``t m, ..., t m + m - 1`` modulo
        ``D``), a coefficient whose seed comes back grows in place, and a
        step costs at most ``batch_size * D`` pairs whatever the number of
        rows or steps before it (the saved partial sums of ``cache_size``
        are then not used: every pool coefficient changes between two
        visits of a row). ``n_components_per_iter`` is capped at it.
        ``"auto"`` chooses by the number of rows given to ``fit``: fresh
        features up to 10,000 rows (the paper's loop: with the other
        ``"auto"`` values, 32 features a step, batches of 256, {min_steps}
        steps), a pool of 2,000 above (all 2,000 updated at every step,
        batches of 32, 5 epochs), where fresh features would cost a step
        traffic in proportion to the rows (see Notes, "Large tables").
        ``n_components=None, n_components_per_iter=32, batch_size=256,
        max_iter={min_steps}`` is the former default fit (the paper's fresh
        features) at any size. The resolved value is ``pool_size_``.

    early_stopping : "auto" or bool, default="auto"
        Hold out ``validation_fraction`` of the rows (at most 1,000: every
        check scores them through the protocol) and stop when their
        loss, computed by the label holder from the federated scores of
        those rows, has not improved by ``tol`` for ``n_iter_no_change``
        checks. ``"auto"``: on when there are more than 10,000 rows (as
        :class:`~sklearn.ensemble.HistGradientBoostingClassifier`). The
        held-out rows are a seeded random choice independent of the labels
        (their ids are public: every party sees which rows a step uses).

    validation_fraction : float, default=0.1
        Share of the rows held out for early stopping.

    n_iter_no_change : int, default=10
        Checks without improvement before stopping. A check happens every
        ``max(1, max_iter // 100)`` steps, from step 0; with early stopping,
        at least every ``ceil(n_train / (batch_size * n_iter_no_change))``
        steps (``n_train`` the rows not held out), so that the patience
        window spans at least one pass over the training rows (as
        :class:`~sklearn.linear_model.SGDClassifier` counts it in epochs).

    tol : float, default=1e-3
        Least decrease of the held-out loss that counts as an improvement
        (as :class:`~sklearn.linear_model.SGDClassifier`'s).

    cache_size : float, default=200
        Byte budget, in megabytes per party, of the locally saved values of
        Algorithm 2: for each saved training row, its coefficient holder
        keeps the partial sum ``sum_j alpha_j phi_j(x_i)`` over the features
        the row already received (``n_outputs`` floats) and every party one
        counter per holder (which features the row has): 16 bytes per row
        with one output and one holder, so the default covers 13 million
        rows. A saved row receives each feature once; rows past the budget
        are recomputed by the masked sums every time they are drawn (the
        paper's plain loop, ``cache_size=0``). The model is the same either
        way.
"""


_NOTES = """    Protocol of one step (Algorithm 1), with ``B = batch_size`` rows and
    ``m = n_components_per_iter`` features: the active party draws the rows
    and the feature ids and sends them down a reverse-order tree; every
    party draws its rows of ``omega_j`` from the public seed; the
    coefficient holders obtain ``omega_j^T x_i + b_j`` by the masked two-tree
    sum (Algorithm 3); each party computes its ``f^l(x_i)`` (Algorithm 2)
    and the ``f^l`` are tree-summed to the active party, which computes
    ``alpha_j = -gamma / (B m) sum_i L'(f(x_i), y_i) phi_j(x_i)``; every
    holder multiplies its older coefficients by ``1 - gamma lambda``.

    Choices where the paper is silent: the minibatch average above (so
    ``B = m = 1`` is the paper's update); rows drawn without replacement
    within an epoch; several active parties take turns in a fixed
    round-robin order (deterministic, each creating and keeping the
    coefficients of its own steps); multiclass targets are one-vs-rest on
    ``{-1, +1}`` codes sharing the random features, with one coefficient per
    class per feature; ``predict_proba`` (logistic loss) is the sigmoid of
    the score, normalized over classes for more than two.

    Step size and convergence: the default ``learning_rate="auto"`` is
    ``min(1 / (S c + lambda), max(B m / (S n), sqrt(B m / T) / (8 S)))``
    with ``c = 1 + 1 / (B m)`` and ``T = max_iter``.
    The first term is ``1 / L`` for the curvature of a step: it moves the
    batch's scores by ``gamma A L'`` with ``A = Phi Phi^T / (B m)``, whose
    largest eigenvalue is at most ``max phi^2 = 2`` and ``k(x, x) = 1`` on
    average (reached by a wide kernel, where all rows look alike), ``c``
    interpolating between the two by the number of samples of a step as in
    the expected smoothness of minibatch SGD. The second bounds the
    random-feature noise: a step moves ``f`` at every row by a fluctuation
    of variance about ``gamma^2 S^2 e^2 / (B m)`` while a row's residual
    ``e`` shrinks by ``gamma S / n`` per step, and the loop diverges past
    ``~2 B m / (S n)`` (measured: the paper's loop ``B = m = 1`` on 442
    standardised rows with the squared loss diverges at ``gamma = 0.05``).
    That is the worst case of a run long enough for the noise of every row
    to settle; in ``T`` steps the noise builds up along at most ``gamma S
    T`` of the kernel's eigendirections, hence the second bound
    ``sqrt(B m / T) / (8 S)`` (a noise of at most an eighth of the
    residual). With the defaults it is 2.0 for the logistic loss at any
    ``n`` (before, ``B m / (S n)`` alone gave 0.73 at 50,000 rows and the
    fit stayed far from its optimum: 0.85 accuracy against ``SVC``'s
    0.95). The step
    stays constant, as in the paper (its Theorem 4 takes a small constant
    ``gamma``; the decaying ``theta / t`` of the original doubly stochastic
    method is what the paper replaces).

    Divergence guard: the label holder (the first active party) watches the
    mean loss of each minibatch, which it computes anyway. A non-finite
    value, a running loss above ten times the zero model's (every fit starts
    at ``f = 0``) or a score beyond ``1e6`` stops the loop; every coefficient
    holder goes back to the coefficients it kept at the check with the
    lowest running loss, and ``fit`` raises a ``FloatingPointError`` naming
    ``learning_rate`` whose ``estimator`` attribute is a fitted copy with
    that iterate (the estimator itself stays unfitted). A fit that ends
    with its running loss above twice its best warns
    (:class:`~sklearn.exceptions.ConvergenceWarning`), as does early
    stopping that runs out of ``max_iter``.

    Early stopping: the held-out rows keep their public row ids and are
    never drawn; at each check step every party adds them to the step's
    rows, so their features and ``f`` travel in the step's own messages (the
    locally saved features of Algorithm 2, each (row, feature) pair sent
    once), and the label holder computes their loss. Nothing else is sent,
    except with several active parties: the others report each step's
    losses to the first (a few numbers) and it tells them which iterate to
    keep. The checks are spaced so that ``n_iter_no_change`` of them span
    at least one pass over the training rows (a window of a few minibatches
    of a large table judges noise: with ``max_iter=100`` on 100,000 rows, a
    check every step stopped a fit near step 10). A short ``max_iter`` may
    thus end before patience runs out, with a ConvergenceWarning, as
    sklearn's SGD does when it runs out of epochs.

    Private directions: each party draws its block of ``omega_j`` and its
    phases from a key of its own (``party_keys``), not from a seed every
    party knows as in the paper, so the receiver of ``omega_j^T x + b_j``
    cannot solve for another party's columns. The phase ``b_j`` is the
    phase of the party ``l'_j`` whose value is not masked (Lemma 1). The
    model therefore depends on the split (another grouping of the columns
    gives another, identically distributed, model) and, with OS keys
    (``party_keys="os"``, or ``"auto"`` without a ``random_state``), on the
    keys drawn. With a seeded ``random_state`` and ``"auto"`` the keys
    derive from the seed: reproducible, but whoever knows the seed rebuilds
    the columns (the audit reports both settings).

    Masks of Algorithm 3: angles are added in the ring ``Z_{2^32}`` (a full
    turn is ``2^32``), and every party but ``l'_j`` masks each entry with a
    uniform ring element drawn fresh from its own CSPRNG (a one-time pad;
    the paper's offsets were one per feature for every row). The trees of
    :func:`~skfed.federation.totally_different_trees` make the receiver's
    only ``T1`` child the subtree of all other parties, led by ``l'_j``,
    and are checked node by node: no party can cancel its ``T1`` inputs
    with its ``T2`` inputs. The masks cancel exactly: they do not change
    the model.

    What each party learns: the passive parties receive the minibatch row
    indices, the feature ids, and uniformly masked partial sums, never
    labels, raw columns or coefficients. The coefficient holder learns
    ``omega_j^T x_i + b_j`` of the rows it uses, from which it can still
    estimate the kernel, hence the pairwise distances, of the other
    parties' columns, and recover them from a few known rows: inherent to
    learning a kernel on shared rows. See the user guide for what
    :func:`skfed.privacy.audit` measures.

    Cost: with the locally saved partial sums, each (row, feature) pair of
    the rows that fit in ``cache_size`` goes through Algorithm 3 once; the
    plain loop (and rows past the budget) recomputes every earlier feature
    of each drawn row, ``O(t^2)`` work and traffic after ``t`` steps (the
    user guide tabulates the bytes per step against the paper's). Either
    way a step after ``t`` others costs up to ``B m t`` pairs (the paper's
    ``O(q t)`` per iteration, appendix C): with a fixed ``max_iter`` that
    does not grow with the table, but a table of ``n`` rows needs steps in
    proportion to ``n`` to be seen, and a row comes back after about ``n /
    B`` steps, so a step costs about ``n m`` pairs.

    Large tables: the defaults (``"auto"``) choose by the rows given to
    ``fit``. Up to 10,000 rows they are the paper's fresh features (32 a
    step, batches of 256, 500 steps for the classifier and 800 for the
    regressor): the former defaults, the reading the paper's guarantees are
    about. Above, a step of fresh features costs about ``n m`` pairs, and
    the same protocol runs on a pool of ``D = 2,000`` seeds
    (``n_components_per_iter=D``, ``batch_size=32``, ``max_iter`` 5
    epochs): ``B D`` pairs a step at any ``n``, training length in epochs,
    and checks on at most 1,000 held-out rows (spaced so that they add at
    most ``10,000 / n_train`` to the traffic). On 64,000 rows of
    ``make_classification`` (three parties) the former defaults sent 18.4
    MB a step, 6.2 times their step at 8,000 rows, and scored 0.917; the
    pool sends 0.9 MB a step and scores 0.951, beside 0.952 for random
    features + SGD with 2,000 features (the user guide's "Large tables").
    ``n_components=None`` keeps the paper's fresh features at any size;
    with ``n_components_per_iter=32, batch_size=256, max_iter=500`` it is
    the former default fit exactly.

""" + textwrap.indent(SHARED_NOTES["whole_simulation"].strip("\n"), "    ")


def expand_shared_doc(cls, loss_options, loss_default, loss_note="", lr_note=""):
    defaults = cls().get_params()
    text = _SHARED_DOC.format(
        loss_options=loss_options, loss_default=loss_default, loss_note=loss_note,
        lr=defaults["learning_rate"], lr_note=lr_note,
        min_steps=cls._auto_min_steps).strip("\n")
    cls.__doc__ = cls.__doc__.replace("__SHARED__", text).replace(
        "__NOTES__", _NOTES)
