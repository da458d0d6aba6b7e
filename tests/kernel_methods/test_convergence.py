"""The check schedule of early stopping (FDSKL and AVFKAM)."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from skfed.kernel_methods import AVFKAMRanker, FDSKLClassifier
from skfed.kernel_methods._convergence import check_every


def test_check_every_spans_an_epoch_with_early_stopping():
    # Without early stopping: at most 100 checks per fit.
    assert check_every(100) == 1
    assert check_every(500) == 5
    # With it: n_iter_no_change checks span at least the training rows.
    assert check_every(100, 90_000, 256, 10) == 36
    assert 36 * 10 * 256 >= 90_000 > 35 * 10 * 256
    # Small tables keep the plain schedule.
    assert check_every(500, 3_000, 256, 10) == 5
    assert check_every(5, 90, 32, 10) == 1


def test_fdskl_early_stopping_does_not_stop_within_an_epoch():
    # tol so large that no check after the first improves: the fit stops
    # as soon as patience allows. A check every step (max_iter // 100 = 1)
    # stopped it after 2 steps, 16 of 180 training rows.
    X, y = make_classification(200, 4, n_informative=3, n_redundant=0,
                               random_state=0)
    clf = FDSKLClassifier(partition=2, max_iter=100, batch_size=8,
                          n_components_per_iter=4, early_stopping=True,
                          n_iter_no_change=2, tol=1e6, random_state=0).fit(X, y)
    n_train = 200 - 20
    assert clf.n_iter_ * 8 >= n_train
    assert clf.n_iter_ == 2 * 12  # checks every ceil(180 / (8 * 2)) steps
    assert len(clf.validation_score_) == 3


def test_avfkam_checks_span_an_epoch_with_early_stopping():
    est = AVFKAMRanker(max_iter=100, batch_size=4, n_iter_no_change=5)
    train = np.arange(900)
    assert est._check_every(None) == 1
    # 900 rows, 8 per update (4 pairs), 5 checks: one every 23 updates.
    assert est._check_every((train, np.arange(100))) == 23


def test_fdskl_short_fit_with_early_stopping_warns():
    # Patience that cannot run out within max_iter: the fit uses every step
    # and says so (as sklearn's SGD when it runs out of epochs).
    X, y = make_classification(200, 4, n_informative=3, n_redundant=0,
                               random_state=0)
    with pytest.warns(ConvergenceWarning, match="Increase max_iter"):
        clf = FDSKLClassifier(partition=2, max_iter=10, batch_size=8,
                              n_components_per_iter=4, early_stopping=True,
                              n_iter_no_change=1, tol=1e6,
                              random_state=0).fit(X, y)
    assert clf.n_iter_ == 10
    assert len(clf.validation_score_) == 1  # step 0 only: every 23 steps
