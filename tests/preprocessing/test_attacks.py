"""The shipped attacks: what the server and the holders learn of a holder.

The numbers quoted in the docs (doc/user_guide/security.rst, the
transformers' Notes) are the ones asserted here, at these sizes.
"""

import numpy as np
import pytest

import skfed.preprocessing as fp
from skfed.partition import HorizontalPartition
from skfed.privacy import audit

pytest.importorskip("pandas")

RNG = np.random.RandomState(3)
N = 60
X = RNG.randn(N, 3) * [1.0, 10.0, 100.0] + [0.0, 5.0, 1e4]
X_CODES = RNG.randint(0, 4, (N, 2)).astype(float)


def _by_attacker(report):
    table = report.attacks
    return table.groupby("attacker")[["value", "chance"]].median()


def test_secure_sum_hides_a_holder_from_the_server_not_from_one_other():
    """Three holders: neither the server (one masked upload) nor a holder
    (the fitted totals minus its own) recovers another's column means. Two
    holders: the other's means are the totals minus one's own, exactly; the
    inherent leak min_row_holders=3 refuses."""
    three = audit(fp.StandardScaler(partition=HorizontalPartition(3)), X)
    assert three.violations == []
    table = _by_attacker(three)
    assert table.loc["server", "value"] > 100  # relative error of the means
    for holder in ("user0", "user1", "user2"):
        assert table.loc[holder, "value"] > 0.1
    two = audit(fp.StandardScaler(partition=HorizontalPartition(2)), X)
    table = _by_attacker(two)
    assert table.loc["server", "value"] > 100
    for holder in ("user0", "user1"):
        assert table.loc[holder, "value"] < 1e-10
    with pytest.raises(ValueError, match="min_row_holders"):
        audit(fp.StandardScaler(partition=HorizontalPartition(2),
                                min_row_holders=3), X)


@pytest.mark.parametrize("est", [fp.MinMaxScaler(), fp.MaxAbsScaler()],
                         ids=["minmax", "maxabs"])
def test_extremes_reveal_only_the_global_extremes(est):
    report = audit(est.set_params(partition=HorizontalPartition(3)), X)
    assert report.violations == []
    table = report.attacks
    server = table[table.attacker == "server"]
    # replaying the secure ORs of one holder decodes garbage
    assert (server.value > 1e3 * server.chance).all()
    holders = table[table.attacker != "server"]
    # a holder can do no better than name the fitted extremes
    np.testing.assert_allclose(holders.value, holders.chance, rtol=1e-12)


@pytest.mark.parametrize("est, data", [
    (fp.OneHotEncoder(), X_CODES),
    (fp.SimpleImputer(strategy="most_frequent"), X_CODES),
    (fp.KBinsDiscretizer(n_bins=4), X),
], ids=["onehot", "impute-mode", "kbins-quantile"])
def test_histograms_hide_each_holders_counts(est, data):
    """The server's single masked upload of a holder's histogram is no
    better a guess of it than the pooled (fitted) one (total variation)."""
    report = audit(est.set_params(partition=HorizontalPartition(3)), data)
    assert report.violations == []
    table = report.attacks
    hist = table[table.attack == "local_histogram_recovery"]
    assert len(hist)
    assert (hist.value > hist.chance).all()
    assert hist.value.median() > 0.8
