"""FDSKL's class weights on an imbalanced table, beside a balanced SVC.

``make_classification(3000, 10, n_informative=5, weights=[0.95])``,
standardised, stratified 75/25 split; FDSKL defaults with three parties,
without and with ``class_weight="balanced"``. Prints fit time, test AUC
and balanced accuracy.

Usage::

    python benchmarks/bench_fdskl_weights.py
"""

import time
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score, balanced_accuracy_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from skfed.kernel_methods import FDSKLClassifier

X, y = make_classification(3000, 10, n_informative=5, weights=[0.95], random_state=0)
X = StandardScaler().fit_transform(X)
Xtr, Xte, ytr, yte = train_test_split(X, y, stratify=y, random_state=0)
for name, est in [
    ("FDSKL, 3 parties, class_weight=None", FDSKLClassifier(partition=3, random_state=0)),
    ("FDSKL, 3 parties, class_weight='balanced'", FDSKLClassifier(partition=3, class_weight="balanced", random_state=0)),
    ("SVC(class_weight='balanced')", SVC(class_weight="balanced")),
]:
    t = time.perf_counter(); est.fit(Xtr, ytr); t = time.perf_counter() - t
    s = est.decision_function(Xte)
    print(f"{name:45s} fit {t:6.2f} s  AUC {roc_auc_score(yte, s):.3f}  "
          f"balanced acc {balanced_accuracy_score(yte, est.predict(Xte)):.3f}")
