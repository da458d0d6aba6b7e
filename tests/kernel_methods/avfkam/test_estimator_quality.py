"""AVFKAMRanker's defaults on a held-out imbalanced table, against a
balanced SVC (issue 19, item 6; the scale run is
``benchmarks/_avfkam_quality.py``)."""

import numpy as np
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from skfed.kernel_methods import AVFKAMRanker

#: the held-out AUC a default fit may trail SVC(class_weight="balanced") by
#: on this small table (the issue asks 0.01 on 5,000-10,000 rows; 100
#: held-out positives leave a split-to-split spread of about 0.01). Measured
#: +0.005; a fit cut to 20 steps trails by 0.03, a pool of 20 seeds by 0.08.
MARGIN = 0.02


def test_default_fit_is_close_to_balanced_svc_on_held_out_rows():
    X, y = make_classification(n_samples=2000, n_features=10, n_informative=5,
                               weights=[0.9], random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, stratify=y,
                                          random_state=0)
    # Scalers fitted on the training rows; one active party, so the
    # asynchronous loop is deterministic.
    svc = make_pipeline(StandardScaler(), SVC(class_weight="balanced"))
    ours = make_pipeline(StandardScaler(), AVFKAMRanker(2, random_state=0))
    base = roc_auc_score(yte, svc.fit(Xtr, ytr).decision_function(Xte))
    scores = ours.fit(Xtr, ytr).decision_function(Xte)
    assert np.all(np.isfinite(scores))
    assert roc_auc_score(yte, scores) > base - MARGIN, (base, ours.score(Xte, yte))
