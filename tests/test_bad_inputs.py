"""Bad inputs that used to give a wrong model or a confusing error (issue 29)."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.utils._param_validation import InvalidParameterError

from skfed.ensemble import SecureBoostClassifier
from skfed.kernel_methods import FDSKLClassifier


@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=60, n_features=4, random_state=0)


def _secureboost():
    return SecureBoostClassifier(n_estimators=2, encryption=None,
                                 partition=2, random_state=0)


def _fdskl():
    return FDSKLClassifier(partition=2, max_iter=2, random_state=0)


@pytest.mark.parametrize("make", [_secureboost, _fdskl])
@pytest.mark.parametrize("weight", [-1.0, np.nan, np.inf, "heavy"])
def test_bad_class_weight_is_refused(data, make, weight):
    # A negative weight used to train a model against its labels (training
    # accuracy 0.425); NaN failed with a message about sample_weight or
    # "cannot convert float NaN to integer".
    X, y = data
    with pytest.raises(ValueError, match=r"class_weight\[1\] is .*finite "
                                         r"number >= 0"):
        make().set_params(class_weight={0: 1.0, 1: weight}).fit(X, y)


@pytest.mark.parametrize("make", [_secureboost, _fdskl])
def test_zero_class_weight_is_allowed(data, make):
    X, y = data
    make().set_params(class_weight={0: 1.0, 1: 0.0}).fit(X, y)


def test_unknown_multi_mode_fails_in_fit(data):
    X, y = data
    with pytest.raises(InvalidParameterError, match="multi_mode"):
        _secureboost().set_params(multi_mode="no-such-mode").fit(X, y)


def _avfkam():
    from skfed.kernel_methods import AVFKAMRanker
    return AVFKAMRanker(partition=2, n_random_features=20, max_iter=3,
                        random_state=0)


@pytest.mark.parametrize("make", [_fdskl, _avfkam])
@pytest.mark.parametrize("scale", [1e160, 1e300])
def test_huge_features_stop_with_the_fix_named(data, make, scale):
    # gamma='scale' used to fall back to 1.0 on an overflowing variance (a
    # silent model of noise); a given gamma failed deep inside a party with
    # "Cannot encode non-finite angles in the ring".
    X, y = data
    with pytest.raises(Exception, match=r"(?i)rescale X .* or pass gamma"):
        make().fit(X * scale, y)
    with pytest.raises(Exception, match=r"angles .* overflow.*non-finite.*"
                                        r"Rescale X .* or lower gamma"):
        make().set_params(gamma=1.0).fit(X * 1e300, y)
