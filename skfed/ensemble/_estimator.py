"""SecureBoostClassifier and SecureBoostRegressor (Cheng et al., 2021).

The estimators, their base class :class:`_BaseSecureBoost` and everything
they hold for the caller: the docstring sections the two classes share, the
privacy hooks read by :mod:`skfed.privacy`, the active party's scoring
(:class:`Scorer`) and the warning when ``min_passive_rows`` left a passive
party out (:func:`warn_if_withheld`). The protocol itself is
:func:`~._protocol.run_secureboost` and the stages it calls.

Scores of the boosted model are computed by the active party alone. It
holds the labels, the weights and the raw predictions of its training rows
(it sets every leaf weight) and, with a validation split, the raw
predictions of the held-out rows (from federated inference of each round's
trees). ``scoring="loss"`` scores them with the negative loss; any other
``scoring`` is a scikit-learn scorer, applied to a *view*: a stand-in
estimator whose ``predict``/``predict_proba``/``decision_function`` read
the raw predictions it already holds, so no further message is needed.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import inspect
import warnings
from numbers import Integral, Real

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    RegressorMixin,
    _fit_context,
)
from sklearn.metrics import check_scoring, get_scorer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

from .._docstrings import fill_doc
from .._party_data_fit import (
    is_party_data,
    party_data_fit_input,
    party_data_predict_input,
)
from .._privacy_core import Secret
from .._stacklevel import user_stacklevel
from ..base import (
    FederatedMixin,
    check_class_weight,
    check_labels_not_single_class,
    party_seeds,
)
from ..federation import PartyData
from ..federation import network as _network
from ..federation._fingerprint import new_fingerprint
from ..federation._ray import RemoteValue
from ._attacks import deshuffle, leaf_purity, side_fixing, subset_sum
from ._binning import BinMapper
from ._contract import MIN_PASSIVE_ROWS, MIN_PASSIVE_SIDE, contract_for
from ._loss import LOSSES
from ._packing import GradientLayout, weighted_row_bound
from ._predictor import federated_raw_predict
from ._protocol import run_secureboost
from ._sampling import goss_rows, training_rows, uniform_rows
from ._shares import consolidate_shares, export_shares

__all__ = ["SecureBoostClassifier", "SecureBoostRegressor"]


# -- docstring sections shared by the two estimators --------------------------
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

    min_passive_side : int or None, default=16
        Smallest number of gradient rows on either side of a passive party's
        revealed threshold (not in the paper). Inside a node of any size, a
        candidate with one to three rows on one side is a small subset sum
        the active party solves, which fixes the side of that threshold for
        every row of the node (``side_fixing`` in
        :func:`skfed.privacy.audit`: 89% of a passive party's rows per tree
        on 300 breast-cancer rows with ``min_passive_side=0``). Per revealed
        node, a passive party sends only the sums of candidates whose left
        side, right side and gap to the previous revealed threshold of the
        feature hold 0 or at least ``min_passive_side`` rows in the node and
        in every set the active party can subtract its way to, plus a public
        mask of which candidates follow; the active party scores the others
        ``-inf``. 0, 1 or None: every candidate of a revealed node (the node
        rule alone). ``min_passive_rows=0`` turns it off too (the paper's
        protocol). At most ``min_passive_rows``. The default costs about 2
        points of cross-validated accuracy on a 3-class table and nothing
        measurable on binary ones (``python benchmarks/bench_secureboost.py
        --sides``; the user guide has the table).

    active_only_rounds : int, default=0
        RL-SecureBoost (section 7): the first ``active_only_rounds`` rounds
        use only the active party's columns, so the passive parties first see
        gradients of residuals. The paper uses 1.

    early_stopping : "auto" or bool, default="auto"
        Hold out ``validation_fraction`` of the rows and stop when the
        validation score has not improved by ``tol`` for ``n_iter_no_change``
        rounds. ``"auto"`` enables it above 10,000 rows (as sklearn's
        HistGradientBoosting does) for data in memory, and disables it with
        a :class:`~skfed.federation.PartyData`, whose rows the driver cannot
        hold out (``True`` with ``validation_fraction`` set is refused there
        before any table is loaded).

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
      booster; the node rule moves cross-validated accuracy (R^2) by -0.011
      to +0.011 on the benchmark's data sets of 442 to 3,000 rows (``python
      benchmarks/bench_secureboost.py --accuracy`` and ``--small-nodes``).
    - Threshold sides (``min_passive_side``, not in the paper): in each
      revealed node a passive party sends the sums of only the candidates
      whose sides, and gaps between consecutive revealed thresholds, hold 0
      or at least ``min_passive_side`` gradient rows in every row set the
      active party reaches by subtracting revealed sums (the node, its
      revealed ancestors minus the node, minus any choice of the revealed
      nodes inside them), chosen greedily in threshold order; a public
      per-candidate mask says which follow, and a derived sibling keeps
      the candidates both its parent and the built child sent. When the fit
      was recorded, :func:`~skfed.privacy.check_messages` replays the rule
      with the passive party's bins (declared minimum 16). Not bounded:
      differences between candidates of two different features (measured
      by the benchmark, not guaranteed).

    What each party learns: the active party learns the instance space of
    every node, every candidate's gradient sums (under random ids) and, for a
    passive winner, only the left rows; a passive party learns the instance
    spaces and which of its candidates won, never a gradient, hessian or
    label. The sums are exact, so in a node of a few dozen rows they are a
    subset-sum problem with a unique answer: with ``min_passive_rows=0``
    the active party recovers which rows lie left of passive thresholds
    (``subset_sum``: 4% of the rows per tree at depth 3, 12% at depth 6,
    on 300 breast-cancer rows); the default leaves it no node to search.
    In larger nodes a side of one to three rows is as easy
    (``side_fixing``: with the node rule alone, 89% of the passive party's
    rows per tree have a threshold side fixed on 300 breast-cancer rows,
    67% on a 3-class table); the default side bound leaves 0.0% (worst
    tree 0.0%).
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


# -- the active party's scores ------------------------------------------------
# As sklearn's HistGradientBoosting: a scorer sees at most this many
# training rows (drawn once from the model seed), the loss sees them all.
_TRAIN_SCORE_ROWS = 10_000


class _ClassifierView(ClassifierMixin, BaseEstimator):
    """Predictions read from raw scores; ``X`` holds row positions."""

    def __init__(self, raw=None, classes=None):
        self.raw = raw
        self.classes = classes

    @property
    def classes_(self):
        return self.classes

    def decision_function(self, X):
        raw = self.raw[np.asarray(X)[:, 0].astype(np.intp)]
        return raw[:, 0] if raw.shape[1] == 1 else raw

    def predict_proba(self, X):
        raw = self.raw[np.asarray(X)[:, 0].astype(np.intp)]
        if raw.shape[1] == 1:
            p = expit(raw[:, 0])
            return np.column_stack([1 - p, p])
        return softmax(raw, axis=1)

    def predict(self, X):
        return self.classes[np.argmax(self.predict_proba(X), axis=1)]


class _RegressorView(RegressorMixin, BaseEstimator):
    """Predictions read from raw scores; ``X`` holds row positions."""

    def __init__(self, raw=None):
        self.raw = raw

    def predict(self, X):
        return self.raw[np.asarray(X)[:, 0].astype(np.intp), 0]


class Scorer:
    """The active party's scoring: ``"loss"`` or a scikit-learn scorer.

    Parameters
    ----------
    scorer : callable or None
        A scorer ``(estimator, X, y[, sample_weight])``; None for the
        negative loss.
    loss : object
        The loss of :mod:`._loss`.
    classes : ndarray or None
        Class labels (classifier), to turn class codes back into labels.
    seed : int
        Model seed for the training rows a scorer sees.
    """

    def __init__(self, scorer, loss, classes=None, seed=0):
        self.scorer = scorer
        self.loss = loss
        self.classes = classes
        self.seed = seed
        self._rows = None

    def __call__(self, y, raw, w=None, train=False):
        """Score of raw predictions ``raw`` of rows with labels ``y``."""
        if self.scorer is None:
            return -self.loss.loss(y, raw, w)
        rows = np.arange(y.shape[0])
        if train and y.shape[0] > _TRAIN_SCORE_ROWS:
            if self._rows is None:
                rng = np.random.default_rng(self.seed)
                self._rows = np.sort(rng.choice(y.shape[0], _TRAIN_SCORE_ROWS,
                                                replace=False))
            rows = self._rows
        if self.classes is None:
            view, target = _RegressorView(raw[rows]), y[rows]
        else:
            view = _ClassifierView(raw[rows], self.classes)
            target = self.classes[np.asarray(y[rows]).astype(np.intp)]
        positions = np.arange(rows.size)[:, None]
        if w is None:
            return float(self.scorer(view, positions, target))
        return float(self.scorer(view, positions, target, sample_weight=w[rows]))


# -- parties, recording and the model randomness the privacy hooks replay -----
def party_name(k):
    """Name of party ``k`` in the simulated federation."""
    return f"party{k}"


def is_recording():
    """Whether a :func:`~skfed.federation.record_messages` recorder is active."""
    return bool(_network._active_recorders)


def round_sample(estimator, n_rows, round_index):
    """The rows (positions among the training rows) sampled in a round.

    The same draw as the active party's (``random_state`` shapes the model).
    """
    seed = estimator._model_seeds[estimator.partition_.active_parties[0]]
    return uniform_rows(seed, round_index, n_rows, estimator.subsample)


# -- warning: min_passive_rows left a passive party out -----------------------
def warn_if_withheld(estimator, coverage):
    """Warn if ``min_passive_rows`` left a passive party out of the model.

    A party is left out when it withheld its sums at the root of at least
    one tree (that whole tree is then the label holder's alone) or for most
    of the fit: for nodes that hold more than half of the gradient rows of
    every node searched for a split, over all trees. Rows weigh the nodes
    because a node's split decides for its rows: withheld leaves-to-be of
    a few rows each cost the model little, a withheld first level a lot.
    (Default settings, 10 trees of depth 3: 100 regression rows 66% of the
    rows withheld, warned; 150 rows 48%; breast cancer, 569 rows, 27%.)

    Parameters
    ----------
    estimator : SecureBoost estimator
        Names the class and ``min_passive_rows`` in the message.
    coverage : dict
        ``{party: {"nodes", "withheld", "rows", "rows_withheld", "roots",
        "roots_withheld"}}``, as counted by the active party
        (:func:`~._grower.passive_coverage`).
    """
    left_out = [
        f"{party}: the root of {c['roots_withheld']} of {c['roots']} trees, "
        f"{c['withheld']} of {c['nodes']} nodes searched for a split, holding "
        f"{c['rows_withheld'] / max(c['rows'], 1):.0%} of their rows"
        for party, c in sorted(coverage.items())
        if c["roots_withheld"] > 0 or 2 * c["rows_withheld"] > c["rows"]]
    if not left_out:
        return
    warnings.warn(
        f"{type(estimator).__name__}: with min_passive_rows="
        f"{estimator.min_passive_rows}, passive parties withheld their "
        f"candidate sums from most of the fit ({'; '.join(left_out)}), so "
        "only the label holder's columns could split those nodes: the model "
        "is close to one of the label holder's columns alone. "
        "min_passive_rows protects the passive parties' columns: the label "
        "holder knows each node's rows and its own gradients, and from the "
        "candidate sums of a node with few rows it can work out which rows "
        "lie below a passive party's threshold (a subset-sum attack). Fit on "
        "more rows, or lower min_passive_rows knowing that cost "
        "(min_passive_rows=0 is the paper's protocol); see the SecureBoost "
        "user guide.",
        UserWarning, stacklevel=user_stacklevel(fallback=2))


# -- the estimators -----------------------------------------------------------
class _BaseSecureBoost(FederatedMixin, BaseEstimator):
    """What SecureBoostClassifier and SecureBoostRegressor share.

    ``_fit`` lays out each party's private state (its columns; for the active
    party also the labels, the sample weights and the loss) and hands it to
    the driver :func:`~._protocol.run_secureboost`; predictions come from
    federated inference (:func:`~._predictor.federated_raw_predict`); the
    privacy hooks read by :mod:`skfed.privacy` return the contract
    (:mod:`._contract`), the attacks (:mod:`._attacks`) and the secrets the
    protocol must keep.
    """

    _partition_kind = "vertical"

    _parameter_constraints = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_depth": [Interval(Integral, 1, None, closed="left")],
        "max_bins": [Interval(Integral, 2, 255, closed="both")],
        "subsample": [Interval(Real, 0, 1, closed="right")],
        "goss_top_rate": [Interval(Real, 0, 1, closed="left"), None],
        "goss_other_rate": [Interval(Real, 0, 1, closed="right")],
        "colsample_bytree": [Interval(Real, 0, 1, closed="right")],
        "reg_lambda": [Interval(Real, 0, None, closed="left")],
        "gamma": [Interval(Real, 0, None, closed="left")],
        "min_child_weight": [Interval(Real, 0, None, closed="left")],
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
        "min_passive_rows": [Interval(Integral, 0, None, closed="left"), None],
        "min_passive_side": [Interval(Integral, 0, None, closed="left"), None],
        "active_only_rounds": [Interval(Integral, 0, None, closed="left")],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "scoring": [str, callable, None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "partition": [None, Integral, list, object],
        "encryption": [StrOptions({"paillier", "ou"}), None],
        "key_size": [Interval(Integral, 128, None, closed="left")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, partition=None, *, n_estimators=100, learning_rate=0.3,
                 max_depth=3, max_bins=32, subsample=1.0, goss_top_rate=None,
                 goss_other_rate=0.1,
                 colsample_bytree=1.0, reg_lambda=1.0, gamma=0.0,
                 min_child_weight=1e-3, min_samples_leaf=1,
                 min_passive_rows=MIN_PASSIVE_ROWS,
                 min_passive_side=MIN_PASSIVE_SIDE, active_only_rounds=0,
                 early_stopping="auto", scoring="loss", validation_fraction=0.1,
                 n_iter_no_change=10, tol=1e-7, encryption="paillier", key_size=2048,
                 n_jobs=None, random_state=None, verbose=0):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.max_bins = max_bins
        self.subsample = subsample
        self.goss_top_rate = goss_top_rate
        self.goss_other_rate = goss_other_rate
        self.colsample_bytree = colsample_bytree
        self.reg_lambda = reg_lambda
        self.gamma = gamma
        self.min_child_weight = min_child_weight
        self.min_samples_leaf = min_samples_leaf
        self.min_passive_rows = min_passive_rows
        self.min_passive_side = min_passive_side
        self.active_only_rounds = active_only_rounds
        self.early_stopping = early_stopping
        self.scoring = scoring
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.partition = partition
        self.encryption = encryption
        self.key_size = key_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True  # each party bins its block column by column
        return tags

    _accepts_party_data = True

    def _early_stopping_on(self, n_rows, party_data=False):
        """``early_stopping`` resolved: ``"auto"`` is on above 10,000 rows in
        memory, off with a PartyData (see :meth:`_held_out_in_driver`)."""
        if self.early_stopping == "auto":
            return not party_data and n_rows > 10_000
        return bool(self.early_stopping)

    def _held_out_in_driver(self):
        # the validation rows are cut from the table, stratified by label;
        # asked of PartyData fits only, where "auto" is off: only True holds
        # rows out, whatever the number of rows
        return self.validation_fraction is not None and self.early_stopping is True

    # -- weights (the label holder's) -------------------------------------------

    def _final_sample_weight(self, X, y, sample_weight):
        """Row weights as the active party applies them (None: unweighted).

        ``sample_weight`` times, for a classifier, the ``class_weight`` of
        each row's class (computed from the labels, so by the label holder).
        """
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                 ensure_non_negative=True)
        class_weight = getattr(self, "class_weight", None)
        if class_weight is None:
            return sample_weight
        check_class_weight(class_weight)
        # ``y`` holds class codes here; a dict names the original labels.
        labels = self.classes_[np.asarray(y).astype(np.intp)]
        expanded = compute_sample_weight(class_weight, labels)
        return expanded if sample_weight is None else sample_weight * expanded

    def _min_passive_side(self):
        """``min_passive_side`` checked; 0 when off (or ``min_passive_rows``
        is, the paper's protocol)."""
        rows, side = int(self.min_passive_rows or 0), int(self.min_passive_side or 0)
        if rows > 0 and side > rows:
            raise ValueError(
                f"min_passive_side={side} is larger than min_passive_rows={rows}: "
                "a side of a node cannot need more rows than the node. Lower "
                "min_passive_side (0 turns the side bound off) or raise "
                "min_passive_rows.")
        return side if rows > 0 else 0

    def _goss(self):
        """``(top_rate, other_rate)`` of GOSS, or None for a uniform sample."""
        if self.goss_top_rate is None:
            return None
        if self.subsample < 1.0:
            raise ValueError("GOSS (goss_top_rate) replaces subsample: set "
                             "subsample=1.0 or goss_top_rate=None.")
        if self.goss_top_rate + self.goss_other_rate > 1.0:
            raise ValueError(
                "goss_top_rate + goss_other_rate must be at most 1; got "
                f"{self.goss_top_rate} + {self.goss_other_rate}.")
        return float(self.goss_top_rate), float(self.goss_other_rate)

    # -- scores (the label holder's) ------------------------------------------

    def _uses_scorer(self):
        return self.scoring != "loss"

    def _make_scorer(self, loss_name, seed):
        """The active party's :class:`Scorer` for ``scoring``.

        ``"loss"`` scores with the negative loss; ``None`` uses the
        estimator's default ``score`` (accuracy, R^2), any other value is
        resolved by :func:`sklearn.metrics.check_scoring`.
        """
        if self.scoring == "loss":
            scorer = None
        elif self.scoring is None:
            scorer = get_scorer("accuracy" if hasattr(self, "classes_") else "r2")
        else:
            scorer = check_scoring(self, self.scoring)
        return Scorer(scorer, LOSSES[loss_name](), getattr(self, "classes_", None),
                      seed)

    # -- fit ----------------------------------------------------------------

    def _fit(self, X, y, loss_name, n_outputs, stratify, sample_weight=None):
        min_side = self._min_passive_side()
        partition = self._resolve_partition(X)
        if len(partition.active_parties) != 1:
            raise ValueError(
                "SecureBoost has exactly one active party (the label holder); the "
                f"partition names {len(partition.active_parties)}: "
                f"{list(partition.active_parties)}. Use "
                "VerticalPartition(groups, active_parties=0)."
            )
        weights = self._final_sample_weight(X, y, sample_weight)
        multi_output = (n_outputs > 1
                        and getattr(self, "multi_mode", None) == "multi_output")
        early_stopping = self._early_stopping_on(
            X.shape[0], party_data=is_party_data(X))
        seeds = party_seeds(self.random_state, partition.n_parties + 1)
        # Model randomness only (row sampling, validation split, binning of
        # huge tables), kept so the privacy checks can replay it.
        self._model_seeds = seeds
        X_val = y_val = w_val = None
        if early_stopping and self.validation_fraction is not None:
            arrays = [X, y] + ([] if weights is None else [weights])
            parts = train_test_split(*arrays, test_size=self.validation_fraction,
                                     random_state=seeds[-1],
                                     stratify=y if stratify else None)
            X, X_val, y, y_val = parts[:4]
            if weights is not None:
                weights, w_val = parts[4:]
        if weights is not None and weights.sum() >= 2.0**30:
            raise ValueError(
                f"sample_weight (times class_weight) sums to {weights.sum():.3g}; "
                "exact fixed-point sums need a total below 2**30. Divide "
                "sample_weight by a constant (and reg_lambda and "
                "min_child_weight by the same constant to keep the same model).")
        # Fail before any party starts if the key cannot hold a row's slots.
        GradientLayout(weighted_row_bound(X.shape[0], weights), self.key_size,
                       self.min_samples_leaf > 1, scheme=self.encryption or "paillier")
        names = [party_name(k) for k in range(partition.n_parties)]
        active_index = partition.active_parties[0]
        # While messages are recorded (an audit), passive parties note their
        # secret candidate orders so that attacks can be scored.
        audited = is_recording()
        states = {}
        for k, name in enumerate(names):
            columns = partition.columns(k)
            state = {"name": name, "seed": seeds[k], "X": X[:, columns],
                     "columns": columns, "datasets": {},
                     "colsample": self.colsample_bytree,
                     "audit_log": [] if audited else None,
                     # A public hyper-parameter: the passive parties enforce it.
                     "min_passive_rows": int(self.min_passive_rows or 0),
                     "min_passive_side": min_side}
            if X_val is not None:
                state["datasets"]["val"] = X_val[:, columns]
            if k == active_index:
                # The labels and the weights stay on the active party: they
                # scale g and h there, and nothing else ever reads them.
                state.update(
                    y=y, y_val=y_val, w=weights, w_val=w_val,
                    loss=LOSSES[loss_name](), n_outputs=n_outputs,
                    goss=self._goss(), multi_output=multi_output,
                    scorer=self._make_scorer(loss_name, seeds[-1]),
                    key_size=self.key_size, n_jobs=self.n_jobs,
                    party_index={n: i for i, n in enumerate(names)})
            states[name] = state
        params = {
            "n_estimators": self.n_estimators, "learning_rate": self.learning_rate,
            "max_depth": self.max_depth, "max_bins": self.max_bins,
            "subsample": self.subsample, "reg_lambda": self.reg_lambda,
            "gamma": self.gamma, "min_child_weight": self.min_child_weight,
            "min_samples_leaf": self.min_samples_leaf,
            "active_only_rounds": self.active_only_rounds, "n_jobs": self.n_jobs,
            "key_size": self.key_size, "plaintext": self.encryption is None,
            "scheme": self.encryption or "paillier",
            "n_outputs": n_outputs, "n_iter_no_change": self.n_iter_no_change,
            "tol": self.tol, "validation": X_val is not None,
            "multi_output": multi_output,
            "score_name": ("score" if self._uses_scorer() else "-loss"),
        }
        with self._federation(states) as fed:
            result = run_secureboost(fed, names, names[active_index], params,
                                     early_stopping, self.verbose, type(self).__name__)
        self._trees = result["trees"]
        self._records = result["records"]
        # Names this fit in its exported shares (never shapes the model).
        self._model_fingerprint = new_fingerprint()
        if audited:
            self._audit_log = result["audit_logs"]
        elif hasattr(self, "_audit_log"):
            del self._audit_log
        self._baseline = result["baseline"]
        self.n_trees_per_iteration_ = n_outputs
        self.n_iter_ = len(self._trees) // n_outputs
        self.train_score_ = result["train_score"]
        self.validation_score_ = result["validation_score"]
        self.do_early_stopping_ = early_stopping
        self._set_importances(partition, active_index)
        warn_if_withheld(self, result["passive_coverage"])
        return self

    def _set_importances(self, partition, active_index):
        if any(isinstance(r, RemoteValue) for r in self._records):
            # Fitted on PartyData: the lookup tables stay with their parties.
            self.feature_importances_ = np.full(self.n_features_in_, np.nan)
            self.gain_importances_ = self.feature_importances_.copy()
            return
        counts = np.zeros(self.n_features_in_)
        for k, records in enumerate(self._records):
            columns = partition.columns(k)
            for feature, _, _ in records:
                counts[columns[feature]] += 1
        total = counts.sum()
        self.feature_importances_ = counts / total if total > 0 else counts
        gains = np.full(self.n_features_in_, np.nan)
        gains[partition.columns(active_index)] = 0.0
        for _, tree in self._trees:
            own = tree.feature >= 0
            np.add.at(gains, tree.feature[own], tree.gain[own])
        self.gain_importances_ = gains

    # -- shares ------------------------------------------------------------------

    def export_shares(self):
        """Each party's share of the fitted model, as an object of its own.

        Returns
        -------
        shares : list
            By party index: a :class:`~skfed.ensemble.SecureBoostActiveShare`
            for the label holder (trees, owners, record ids, leaf weights,
            its own lookup table), a
            :class:`~skfed.ensemble.SecureBoostPassiveShare` for every other
            party (its lookup table). Each holds numpy arrays only: pickle or
            joblib-dump it and hand it to its party.
        """
        check_is_fitted(self)
        return export_shares(self)

    def consolidate(self):
        """One plaintext model with every party's thresholds (explicit only).

        Every party gives up its lookup table to whoever holds the result,
        so this is never done implicitly. The result predicts exactly as the
        federated model, without any federation.

        Returns
        -------
        model : SecureBoostConsolidated
        """
        return consolidate_shares(self.export_shares())

    # -- federated inference ---------------------------------------------------

    def _raw_predict(self, X, staged=False):
        check_is_fitted(self)
        if isinstance(X, PartyData):  # each party's table loaded at its home
            X = party_data_predict_input(self, X, allow_nan=True)
        else:
            X = validate_data(self, X, reset=False, ensure_all_finite="allow-nan",
                              accept_sparse=["csr", "csc"], dtype=np.float64)
        partition = self.partition_
        names = [party_name(k) for k in range(partition.n_parties)]
        active_index = partition.active_parties[0]
        states = {}
        for k, name in enumerate(names):
            state = {"name": name, "records": self._records[k],
                     "datasets": {"predict": X[:, partition.columns(k)]}}
            if k == active_index:
                state.update(trees=self._trees,
                             party_index={n: i for i, n in enumerate(names)})
            states[name] = state
        with self._federation(states, record=False) as fed:
            raw = federated_raw_predict(fed, names[active_index], names, "predict",
                                        list(range(len(self._trees))),
                                        self.n_trees_per_iteration_, per_tree=staged)
        if not staged:
            return raw + self._baseline
        return self._stages(raw)

    def _stages(self, leaves):
        """Raw predictions after each round, from the per-tree leaf weights."""
        outputs = np.array([k for k, _ in self._trees])
        raw = np.tile(self._baseline, (leaves.shape[0], 1))
        for it in range(self.n_iter_):
            for k in range(self.n_trees_per_iteration_):
                tree = it * self.n_trees_per_iteration_ + k
                raw[:, outputs[tree]] += leaves[:, tree]
            yield raw.copy()

    # -- privacy hooks (read by skfed.privacy) -------------------------------------

    def _privacy_contract(self):
        # With a recorded fit's log, the replay checks every candidate's sides.
        return contract_for(getattr(self, "_audit_log", None))

    def _privacy_attacks(self):
        return [deshuffle, leaf_purity, subset_sum, side_fixing]

    def _encoded_target(self, y):
        """``y`` as the active party holds it: class codes, or floats."""
        y = np.asarray(y)
        if hasattr(self, "classes_"):
            return np.searchsorted(self.classes_, y.ravel())
        return y.astype(np.float64).ravel()

    def _privacy_secrets(self, X, y=None, **fit_params):
        """The base secrets, plus what the protocol derives from them.

        - ``"gradients"``: the active party's first-round gradients and
          hessians on the sampled rows, as it computes them in plaintext;
        - ``"labels"``: the labels of the rows sampled in each round (a row
          subset: a leak of these would not match the full label vector);
          with early stopping, also the labels and ``"columns"`` of the
          training rows;
        - ``"bins"``: each passive party's bin indices of the training rows;
        - ``"weights"``: the active party's row weights (``sample_weight``
          times ``class_weight``), which scale its gradients and never leave it.
        """
        out = list(super()._privacy_secrets(X, y, **fit_params))
        X = np.asarray(X, dtype=np.float64)
        partition = self.partition_
        names = self._privacy_party_names()
        active = partition.active_parties[0]
        seeds = self._model_seeds
        codes = None if y is None else self._encoded_target(y)
        train = training_rows(self, X.shape[0], codes)
        X_train = X[train]
        if train.size < X.shape[0]:
            for k, name in enumerate(names):
                out.append(Secret(name, "columns", f"training columns of {name}",
                                  X_train[:, partition.columns(k)]))
        for k, name in enumerate(names):
            if k == active:
                continue
            mapper = BinMapper(self.max_bins, seeds[k]).fit(
                X_train[:, partition.columns(k)])
            out.append(Secret(name, "bins", f"bin indices of {name}",
                              mapper.transform(X_train[:, partition.columns(k)])
                              .astype(np.float64)))
        if codes is None:
            return out
        y_train = codes[train]
        labels = self._label_matrix(y_train)
        owner = names[active]
        if train.size < X.shape[0]:
            out.append(Secret(owner, "labels", "labels of the training rows",
                              labels))
        # First-round gradients and hessians, as the active party has them
        # (times the row weights, which only it holds).
        loss = LOSSES[self._loss_name()]()
        n_outputs = self.n_trees_per_iteration_
        weights = self._final_sample_weight(X, codes,
                                            fit_params.get("sample_weight"))
        w_train = None if weights is None else weights[train]
        baseline = loss.baseline(y_train, n_outputs, w_train)
        g, h = loss.gradients(y_train, np.tile(baseline, (y_train.size, 1)))
        scale = np.ones(y_train.size) if w_train is None else w_train
        g, h = g * scale[:, None], h * scale[:, None]
        goss = self._goss()
        if goss is None:
            sample = round_sample(self, y_train.size, 0)
            g, h = g[sample], h[sample]
        else:  # the same GOSS draw as the active party's first round
            sample, factor = goss_rows(seeds[active], 0, g, h, *goss)
            g, h = g[sample] * factor[:, None], h[sample] * factor[:, None]
        if w_train is not None:
            out.append(Secret(owner, "weights", "row weights of the training rows",
                              w_train))
        out.append(Secret(owner, "gradients", "first-round gradients", g))
        out.append(Secret(owner, "gradients", "first-round hessians", h))
        if self.subsample < 1.0:
            for it in range(self.n_iter_):
                rows = round_sample(self, y_train.size, it)
                out.append(Secret(owner, "labels",
                                  f"labels of the rows sampled in round {it + 1}",
                                  labels[rows]))
        return out

    def _label_matrix(self, codes):
        """Labels as the semantic check compares them (one-hot if multiclass)."""
        if not hasattr(self, "classes_") or self.classes_.size <= 2:
            return codes.astype(np.float64)
        return np.eye(self.classes_.size)[codes]


@_document
class SecureBoostClassifier(ClassifierMixin, _BaseSecureBoost):
    """Lossless vertical federated gradient boosting (SecureBoost), classifier.

    Columns are split over parties; party 0 (the active party) holds the
    labels. Trees are grown as in XGBoost, with the passive parties'
    gradient histograms computed on Paillier (or Okamoto-Uchiyama)
    ciphertexts. Binary targets use the log-loss, multiclass targets softmax with one tree per class and
    round. NaN is accepted (own bin, learned default direction).

    Parameters
    ----------
    %(secureboost_parameters)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.

    %(secureboost_attributes)s

    See Also
    --------
    SecureBoostRegressor : The same protocol with the squared error.
    sklearn.ensemble.HistGradientBoostingClassifier : Centralized counterpart.

    Notes
    -----
    %(secureboost_notes)s

    References
    ----------
    %(secureboost_references)s

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from skfed.ensemble import SecureBoostClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = SecureBoostClassifier(n_estimators=5, key_size=512, random_state=0)
    >>> clf.fit(X[:150], y[:150]).score(X[150:300], y[150:300]) > 0.85
    True
    """

    _parameter_constraints = {
        **_BaseSecureBoost._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "multi_mode": [StrOptions({"single_output", "multi_output"})],
    }

    def __init__(self, partition=None, *, n_estimators=100, learning_rate=0.3,
                 max_depth=3, max_bins=32, subsample=1.0, goss_top_rate=None,
                 goss_other_rate=0.1,
                 colsample_bytree=1.0, reg_lambda=1.0, gamma=0.0,
                 min_child_weight=1e-3, min_samples_leaf=1,
                 min_passive_rows=MIN_PASSIVE_ROWS,
                 min_passive_side=MIN_PASSIVE_SIDE, active_only_rounds=0,
                 early_stopping="auto", scoring="loss", validation_fraction=0.1,
                 n_iter_no_change=10, tol=1e-7, class_weight=None,
                 multi_mode="single_output", encryption="paillier",
                 key_size=2048, n_jobs=None, random_state=None, verbose=0):
        super().__init__(
            partition, n_estimators=n_estimators, learning_rate=learning_rate,
            max_depth=max_depth, max_bins=max_bins, subsample=subsample,
            goss_top_rate=goss_top_rate, goss_other_rate=goss_other_rate,
            colsample_bytree=colsample_bytree,
            reg_lambda=reg_lambda, gamma=gamma, min_child_weight=min_child_weight,
            min_samples_leaf=min_samples_leaf, min_passive_rows=min_passive_rows,
            min_passive_side=min_passive_side,
            active_only_rounds=active_only_rounds,
            early_stopping=early_stopping, scoring=scoring,
            validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change, tol=tol,
            encryption=encryption, key_size=key_size, n_jobs=n_jobs,
            random_state=random_state, verbose=verbose)
        self.class_weight = class_weight
        self.multi_mode = multi_mode

    def _loss_name(self):
        return "log_loss_binary" if self.classes_.size == 2 else "log_loss_multinomial"

    def _more_validation(self, y):
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        check_labels_not_single_class(self.classes_)
        return encoder.transform(y)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the boosted trees with the federated protocol.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The whole table; each party only ever holds its own columns.
        y : array-like of shape (n_samples,)
            Labels (held by the active party).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights, held by the active party, which
            multiplies each row's gradient and hessian by its weight (times
            ``class_weight``); they never leave it.

        Returns
        -------
        self : SecureBoostClassifier
        """
        if isinstance(X, PartyData):  # each party's table loaded at its home
            X, y = party_data_fit_input(self, X, y, allow_nan=True,
                                        encode_labels=True)
            check_labels_not_single_class(self.classes_)
        else:
            X, y = validate_data(self, X, y, ensure_all_finite="allow-nan",
                                 accept_sparse=["csr", "csc"],
                                 dtype=np.float64)
            y = self._more_validation(y)
        n_classes = self.classes_.size
        if n_classes == 2:
            return self._fit(X, y.astype(np.float64), self._loss_name(), 1, True,
                             sample_weight)
        return self._fit(X, y, self._loss_name(), n_classes, True, sample_weight)

    def decision_function(self, X):
        """Raw scores: log-odds (binary) or per-class logits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        raw = self._raw_predict(X)
        return raw[:, 0] if raw.shape[1] == 1 else raw

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        raw = self._raw_predict(X)
        if raw.shape[1] == 1:
            p = expit(raw[:, 0])
            return np.column_stack([1 - p, p])
        return softmax(raw, axis=1)

    def predict(self, X):
        """Most probable class of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def staged_decision_function(self, X):
        """Raw scores after each round (one federated inference for all rounds).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Yields
        ------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        for raw in self._raw_predict(X, staged=True):
            yield raw[:, 0] if raw.shape[1] == 1 else raw

    def staged_predict_proba(self, X):
        """Class probabilities after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Yields
        ------
        proba : ndarray of shape (n_samples, n_classes)
        """
        for raw in self._raw_predict(X, staged=True):
            if raw.shape[1] == 1:
                p = expit(raw[:, 0])
                yield np.column_stack([1 - p, p])
            else:
                yield softmax(raw, axis=1)

    def staged_predict(self, X):
        """Predicted classes after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Yields
        ------
        y : ndarray of shape (n_samples,)
        """
        for proba in self.staged_predict_proba(X):
            yield self.classes_[np.argmax(proba, axis=1)]


@_document
class SecureBoostRegressor(RegressorMixin, _BaseSecureBoost):
    """Lossless vertical federated gradient boosting (SecureBoost), regressor.

    Columns are split over parties; party 0 (the active party) holds the
    target. Trees minimise the squared error; the passive parties' gradient
    histograms are computed on Paillier (or Okamoto-Uchiyama) ciphertexts.
    NaN is accepted.

    Parameters
    ----------
    %(secureboost_parameters)s

    Attributes
    ----------
    %(secureboost_attributes)s

    See Also
    --------
    SecureBoostClassifier : The same protocol for classification.
    sklearn.ensemble.HistGradientBoostingRegressor : Centralized counterpart.

    Notes
    -----
    %(secureboost_notes)s

    With the squared error every hessian is 1, so hessian sums are row
    counts: the active party learns how many of a node's rows fall left of
    each (anonymous) candidate, as in the paper.

    References
    ----------
    %(secureboost_references)s

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from skfed.ensemble import SecureBoostRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = SecureBoostRegressor(n_estimators=5, key_size=512, random_state=0)
    >>> reg.fit(X[:150], y[:150]).score(X[300:], y[300:]) > 0.2
    True
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the boosted trees with the federated protocol.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The whole table; each party only ever holds its own columns.
        y : array-like of shape (n_samples,)
            Target (held by the active party).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights, held by the active party, which
            multiplies each row's gradient and hessian by its weight; they
            never leave it.

        Returns
        -------
        self : SecureBoostRegressor
        """
        if isinstance(X, PartyData):  # each party's table loaded at its home
            X, y = party_data_fit_input(self, X, y, allow_nan=True)
        else:
            X, y = validate_data(self, X, y, ensure_all_finite="allow-nan",
                                 accept_sparse=["csr", "csc"],
                                 dtype=np.float64, y_numeric=True)
        return self._fit(X, y.astype(np.float64), self._loss_name(), 1, False,
                         sample_weight)

    def _loss_name(self):
        return "squared_error"

    def predict(self, X):
        """Predicted target of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        return self._raw_predict(X)[:, 0]

    def staged_predict(self, X):
        """Predicted target after each round (one federated inference).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New rows; every party evaluates the nodes it owns on its own
            columns (missing values allowed).

        Yields
        ------
        y : ndarray of shape (n_samples,)
        """
        for raw in self._raw_predict(X, staged=True):
            yield raw[:, 0]
