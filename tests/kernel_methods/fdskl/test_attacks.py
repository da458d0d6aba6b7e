"""FDSKL's masked sums as the attacks lay them out: the replay of the public
history labels every sum of a fit."""

from skfed.federation import record_messages
from skfed.kernel_methods import FDSKLClassifier
from skfed.kernel_methods._attacks import masked_sum_instances
from skfed.privacy import check_messages

from .test_estimator import _binary_data


def test_pool_sums_replay_and_the_contract_holds():
    # The privacy replay rebuilds every masked sum of a pool fit from the
    # public history (the seeds come back, one broadcast per step).
    X, y = _binary_data(n=80)
    with record_messages() as rec:
        est = FDSKLClassifier(partition=3, n_components=10,
                              n_components_per_iter=4, max_iter=8,
                              batch_size=8, random_state=0).fit(X, y)
    sums = masked_sum_instances(est, rec.messages, len(X))
    t1 = [m for m in rec.messages if m.phase == "step/features/T1"]
    assert len(sums) * 2 == len(t1) > 0
    assert max(int(s.features.max()) for s in sums if len(s.features)) == 9
    assert list(check_messages(est, rec.messages, X, y)) == []
