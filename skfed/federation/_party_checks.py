"""What a fit on a PartyData cannot do, refused before any party starts.

:func:`refuse_party_data` (called by every federated ``fit``) names the
estimators that take a :class:`~skfed.federation.PartyData`;
:func:`check_supported` refuses, with what to do instead, the parameters
whose work would need the labels or the blocks in the driver.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._party_data import PartyData

__all__ = ["refuse_party_data", "check_supported"]


def _party_data_estimators():
    from ..ensemble._base import _BaseSecureBoost
    from ..kernel_methods import AVFKAMRanker
    from ..kernel_methods._fdskl_base import _BaseFDSKL

    return _BaseSecureBoost, _BaseFDSKL, AVFKAMRanker


def refuse_party_data(estimator, X):
    """A clear error when an estimator that does not take a PartyData is
    given one (called by every federated ``fit`` before it starts)."""
    if not isinstance(X, PartyData):
        return
    accepting = _party_data_estimators()
    if not isinstance(estimator, accepting):
        raise TypeError(
            f"{type(estimator).__name__} does not take a PartyData; "
            "SecureBoostClassifier, SecureBoostRegressor, FDSKLClassifier, "
            "FDSKLRegressor and AVFKAMRanker do. Align "
            "the tables in memory (X, y, partition = skfed.alignment.align("
            "tables, label=...)) and fit on X.")


def _split_in_driver(estimator):
    """Whether the estimator draws its early-stopping rows in the driver
    from the labels or the blocks (SecureBoost, AVFKAM), not from the
    number of rows alone (FDSKL)."""
    from ..ensemble._base import _BaseSecureBoost
    from ..kernel_methods import AVFKAMRanker

    if isinstance(estimator, _BaseSecureBoost):
        return estimator.validation_fraction is not None
    return isinstance(estimator, AVFKAMRanker)


def check_supported(estimator, n_rows):
    """Refuse, before any federation starts, what a fit on PartyData cannot
    do (``n_rows``: None before the load, the number of common rows after).
    """
    name = type(estimator).__name__
    if n_rows is None and getattr(estimator, "class_weight", None) is not None:
        raise ValueError(
            f"{name}(class_weight=...) is not supported with PartyData: the "
            "class weights would be computed from the labels, which stay "
            "with the label holder. Set class_weight=None and pass "
            "sample_weight (one weight per common row, in the order of the "
            "sorted ids), or fit on the aligned table in memory "
            "(skfed.alignment.align).")
    early = getattr(estimator, "early_stopping", False)
    if early is False or not _split_in_driver(estimator):
        return
    from ..kernel_methods._convergence import resolve_early_stopping

    if (n_rows is None and early is True) or (
            n_rows is not None and resolve_early_stopping(early, n_rows)):
        raise ValueError(
            f"{name} with early stopping is not supported with PartyData: its "
            "held-out rows are drawn in the driver, stratified by label or "
            "cut from the table, and the driver holds neither. Set "
            "early_stopping=False (with early_stopping='auto' it is on above "
            "10,000 rows), or fit on the aligned table in memory "
            "(skfed.alignment.align).")
