"""Docstring sections shared by SecureBoostClassifier and SecureBoostRegressor."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from .._docstrings import fill_doc

_DOC_PARAMETERS = """
    %(partition_vertical)s

    n_estimators : int, default=100
        Number of boosting rounds (sklearn's ``max_iter``); a multiclass model
        grows one tree per class in each round.

    learning_rate : float, default=0.3
        Shrinkage of every leaf weight (the paper's setting).

    max_depth : int, default=3
        Depth of every tree (edges from the root to the deepest leaf; the
        paper's setting). Trees grow level by level.

    max_bins : int, default=32
        Quantile bins per feature for non-missing values (2..255); missing
        values get one more bin. Each party bins its own columns.

    subsample : float, default=1.0
        Fraction of rows (drawn by the active party each round) whose
        gradients build the trees. The paper's experiments use 0.8.

    goss_top_rate : float or None, default=None
        Gradient-based one-side sampling (GOSS, LightGBM's and FATE's
        ``top_rate``): each round the active party keeps this share of rows
        with the largest ``|g h|`` plus ``goss_other_rate`` of the rest, whose
        ``g`` and ``h`` it multiplies by ``(1 - top_rate) / other_rate``; only
        those rows are encrypted and sent. The passive parties learn which
        rows were kept (not which are the top ones). None: no GOSS
        (``subsample`` applies).

    goss_other_rate : float, default=0.1
        Share of the remaining rows GOSS draws at random (LightGBM's and
        FATE's ``other_rate``); used only with ``goss_top_rate``.

    colsample_bytree : float, default=1.0
        Share of its own columns each party offers split candidates of in a
        tree (at least one), drawn by that party from its own seed and the
        tree's key; nobody else learns which.

    reg_lambda : float, default=1.0
        L2 penalty ``lambda`` on leaf weights (eq. 2-4).

    gamma : float, default=0.0
        Minimum gain ``gamma`` of a split (eq. 3).

    min_child_weight : float, default=1e-3
        Minimum hessian sum of each child of a split (sklearn's
        HistGradientBoosting uses 1e-3; XGBoost's 1 stops log-loss trees
        early, once hessians become small).

    min_samples_leaf : int, default=1
        Minimum number of rows in each child. Above 1, every row's ciphertext
        carries a third slot holding 1, so the active party learns the row
        counts of every candidate (for the squared error it learns them
        anyway from the hessians). ``min_samples_leaf=20`` matches sklearn's
        HistGradientBoosting default.

    min_passive_rows : int or None, default=64
        Smallest number of gradient rows a passive party's candidate sums may
        cover. The active party knows every node's rows and its own exact
        fixed-point gradients, so the left sums of a node with few rows pin
        down which of its rows lie left of the passive party's threshold
        (``subset_sum`` in :func:`skfed.privacy.audit`). A passive party
        therefore withholds its sums for a node with fewer gradient rows,
        or one whose sums would let the active party subtract its way to
        fewer (a sibling whose parent it revealed); it decides from row
        counts, which it knows, and the active party then splits that node
        on the other parties' columns. 0 or None: the paper's protocol,
        every node revealed (lossless: the same trees as one party holding
        every column). Rows that carry gradients are counted, not weights:
        with the default, integer ``sample_weight`` is not exactly repeated
        rows, and ``subsample`` or GOSS leave the passive parties out of
        nodes a level earlier on small tables. When a passive party is left
        out at the root of a tree, or for nodes holding more than half of
        the rows searched for a split, ``fit`` warns (a table of under 64
        rows always does); the user guide has the numbers.

    active_only_rounds : int, default=0
        RL-SecureBoost (section 7): the first ``active_only_rounds`` rounds
        use only the active party's columns, so the passive parties first see
        gradients of residuals. The paper uses 1.

    early_stopping : "auto" or bool, default="auto"
        Hold out ``validation_fraction`` of the rows and stop when the
        validation score has not improved by ``tol`` for ``n_iter_no_change``
        rounds. ``"auto"`` enables it above 10,000 rows (as sklearn's
        HistGradientBoosting does).

    scoring : str, callable or None, default="loss"
        What ``train_score_``, ``validation_score_`` and early stopping
        measure: ``"loss"`` (the negative loss), any scikit-learn scorer name
        or callable (e.g. ``"roc_auc"``, ``"balanced_accuracy"``), or None
        for the estimator's ``score`` (accuracy, R^2). The active party
        computes it alone, from the raw predictions, labels and weights it
        holds; a scorer sees at most 10,000 training rows (drawn once).

    validation_fraction : float or None, default=0.1
        Share of rows held out for early stopping (their predictions come
        from federated inference after each round). None: no held-out rows;
        early stopping watches the training score.

    n_iter_no_change : int, default=10
        Patience of early stopping, in rounds.

    tol : float, default=1e-7
        Minimum improvement of the validation score.

    %(secureboost_class_weight)s

    %(encryption_schemes)s

    %(key_size)s

    %(n_jobs)s

    %(random_state)s

    %(verbose)s
"""

_DOC_CLASS_WEIGHT = """
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, as ``{label: weight}``; ``"balanced"`` gives
        each class ``n_samples / (n_classes * count)``. Like ``sample_weight``
        (which it multiplies) it is applied by the active party to every
        row's gradient and hessian before encryption, and never leaves it.

    multi_mode : {"single_output", "multi_output"}, default="single_output"
        Multiclass trees (FATE's ``multi_mode``). ``"single_output"``: one
        tree per class and round, one ciphertext per row and class.
        ``"multi_output"``: one tree per round whose splits maximise the sum
        of the classes' gains (eq. 3) and whose leaves hold one weight per
        class; the K ``(h, g)`` pairs of a row are packed into as few
        ciphertexts as the key holds (all 10 digits classes in one at 2048
        bits), so a round encrypts and sums about K times less (digits,
        2048 bits: a round costs about 0.3x, same test accuracy after 20
        rounds). It decrypts two candidates per ciphertext instead of ~19.

"""

_DOC_ATTRIBUTES = """
    n_features_in_ : int
        Number of columns of ``X`` at fit time.

    feature_names_in_ : ndarray of str
        Column names, when ``X`` was a DataFrame with string column names.

    partition_ : VerticalPartition
        The resolved partition (which party holds which columns).

    communication_ : CommunicationSummary
        Every message of ``fit``: counts, ciphertexts and bytes per phase
        (``"setup"``, ``"gradients"``, ``"histogram"``, ``"split"``,
        ``"predict"`` for early stopping) and per link.

    n_iter_ : int
        Number of boosting rounds run (fewer than ``n_estimators`` when early
        stopping triggered).

    n_trees_per_iteration_ : int
        Trees per round: the number of classes for multiclass, else 1.

    train_score_ : ndarray of shape (n_iter_ + 1,)
        ``scoring`` on the training rows before the first round (the
        baseline) and after each round.

    validation_score_ : ndarray of shape (n_iter_ + 1,)
        ``scoring`` on the held-out rows, likewise (empty without them).

    do_early_stopping_ : bool
        Whether early stopping was used.

    feature_importances_ : ndarray of shape (n_features,)
        Share of all splits made on each column, over every party (each owner
        counts its own splits; the counts reveal no threshold).

    gain_importances_ : ndarray of shape (n_features,)
        Total gain (eq. 3) of the splits on each of the active party's
        columns; NaN for passive parties' columns, whose gains the active party
        sees only under random candidate ids.
"""

_DOC_NOTES = """
    The protocol (sections 4 and 5 of the paper), with the choices the paper
    leaves open:

    - Every party bins its own columns by quantiles; thresholds stay with it.
    - Each round the active party rounds ``g`` and ``h`` to fixed point (an
      exponent it keeps secret), packs ``(h, g)`` into one plaintext as two
      signed slots and encrypts one ciphertext per row; multiclass encrypts
      one pair per class and grows one tree per class, or, with
      ``multi_mode="multi_output"``, packs the K pairs of a row together and
      grows one tree for all classes (class-packing pays only when the
      classes share a tree: K separate trees split rows differently).
    - Passive parties sum ciphertexts per node, feature and bin (Algorithm 1),
      form the cumulative "left" sums of every candidate (with the missing bin
      on either side, XGBoost-style), shuffle them under random ids (one
      permutation per tree), pack ~20 candidates per ciphertext without
      plaintext summand counts and re-randomise them.
    - Histogram subtraction: of two siblings only the one with fewer gradient
      rows is built; the active party derives the other as parent minus
      child on the decrypted candidate sums (exact, linear, and half the
      ciphertexts of an encrypted subtraction).
    - The active party scores all candidates with eq. 3, splits its own
      winners itself and sends the winning random id to a passive winner,
      which records ``(feature, threshold, missing side)`` in its lookup table
      and returns the record id and the left rows ``I_L`` (Algorithm 2).
      Leaf weights (eq. 4) never leave the active party.
    - Fixed-point sums are exact integers in both modes, so with the same
      ``random_state`` the Paillier, Okamoto-Uchiyama and plaintext runs
      build identical trees (OU plaintexts are a third of the key size, so
      a histogram ciphertext packs a third as many candidates; the model
      does not change).
    - Inference: the active party walks all rows and trees through its own
      nodes and asks each passive party, in one batch per level, which way
      rows go at its records; at most ``max_depth`` rounds.
    - Small nodes (``min_passive_rows``, not in the paper): a passive party
      sends no sums for a node of fewer than ``min_passive_rows`` gradient
      rows, nor any from which the active party could subtract its way to a
      sum over fewer rows (every revealed node minus the revealed nodes
      inside it keeps 0 or at least ``min_passive_rows`` rows); when it
      withheld a parent, the active party asks it for both children, since
      nothing can be subtracted. The contract declares the default as a
      minimum, so a fit with ``min_passive_rows`` below 64 shows up in
      :func:`~skfed.privacy.check_messages`. ``min_passive_rows=0`` is the
      paper's protocol and the lossless comparison with a centralized
      booster; the default moves cross-validated accuracy (R^2) by -0.011
      to +0.011 on the benchmark's data sets of 442 to 3,000 rows (``python
      benchmarks/bench_secureboost.py --accuracy`` and ``--small-nodes``).

    What each party learns: the active party learns the instance space of
    every node, every candidate's gradient sums (under random ids) and, for a
    passive winner, only the left rows; a passive party learns the instance
    spaces and which of its candidates won, never a gradient, hessian or
    label. The sums are exact, so in a node of a few dozen rows they are a
    subset-sum problem with a unique answer: with ``min_passive_rows=0``
    the active party recovers which rows lie left of passive thresholds
    (``subset_sum``: 4% of the rows per tree at depth 3, 12% at depth 6,
    on 300 breast-cancer rows); the default leaves it no node to search.
    Leaf purity caveat (section 7): instance spaces of pure leaves in the
    first tree let passive parties guess labels; ``active_only_rounds=1``
    (RL-SecureBoost) builds the first tree from the active party's columns
    only.

    The fitted estimator stands for all parties together: it keeps the active
    party's trees and leaf weights and each party's lookup table, and hands
    each party only its own share when predicting.

    ``verbose=1`` prints a line per round (train and validation scores,
    seconds, bytes sent);
    ``verbose=2`` adds the seconds of each step (encrypt, histograms, decrypt,
    split, validation).
"""

_DOC_REFERENCES = """
    Cheng, K., Fan, T., Jin, Y., Liu, Y., Chen, T., Papadopoulos, D., Yang, Q.
    (2021). SecureBoost: A Lossless Federated Learning Framework. IEEE
    Intelligent Systems 36(6), 87-98.
"""


def _document(cls):
    """Insert the shared sections, then the package-wide shared parameters."""
    doc = cls.__doc__
    import inspect

    class_weight = ("class_weight" in inspect.signature(cls.__init__).parameters)
    doc = doc.replace("    %(secureboost_parameters)s\n", _DOC_PARAMETERS.replace(
        "    %(secureboost_class_weight)s\n",
        _DOC_CLASS_WEIGHT.lstrip("\n") if class_weight else "").lstrip("\n"))
    for marker, text in (("secureboost_parameters", _DOC_PARAMETERS),
                         ("secureboost_attributes", _DOC_ATTRIBUTES),
                         ("secureboost_notes", _DOC_NOTES),
                         ("secureboost_references", _DOC_REFERENCES)):
        doc = doc.replace(f"    %({marker})s\n", text.lstrip("\n"))
    cls.__doc__ = doc
    return fill_doc(cls)
