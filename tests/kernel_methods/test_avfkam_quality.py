"""AVFKAMRanker's defaults on a held-out imbalanced table, against a
balanced SVC (issue 19, item 6; the scale run is
``benchmarks/_avfkam_quality.py``)."""

import numpy as np
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from skfed.kernel_methods import AVFKAMRanker

#: the held-out AUC a default fit may trail SVC(class_weight="balanced") by
#: on one split of this small table, and half of it on average over the two
#: (the issue asks 0.01 on 5,000-10,000 rows; 100 held-out positives leave
#: a split-to-split spread of about 0.01; measured: +0.002 and +0.009)
MARGIN = 0.02


def _split(seed):
    X, y = make_classification(n_samples=2000, n_features=10, n_informative=5,
                               weights=[0.9], random_state=seed)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, stratify=y,
                                          random_state=seed)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def test_default_fit_is_close_to_balanced_svc_on_held_out_rows():
    gaps = []
    for seed in (0, 1):
        Xtr, Xte, ytr, yte = _split(seed)
        svc = SVC(class_weight="balanced").fit(Xtr, ytr)
        base = roc_auc_score(yte, svc.decision_function(Xte))
        est = AVFKAMRanker(2, random_state=seed).fit(Xtr, ytr)
        assert np.all(np.isfinite(est.decision_function(Xte)))
        gaps.append(est.score(Xte, yte) - base)
    assert np.mean(gaps) > -MARGIN / 2, gaps
    assert min(gaps) > -MARGIN, gaps
