"""HyFDCA's objective reports (:mod:`skfed.linear_model._reports`): the
shares of a report keep twice the ring's precision."""

from types import SimpleNamespace

import numpy as np

from skfed.federation.secure_sum import RingEncoder
from skfed.linear_model._reports import client_report, split_total


def test_report_shares_keep_double_the_ring_precision():
    # Each report entry travels rounded to the ring plus its scaled rounding
    # error: the decoded total of three shares keeps ~2x the fractional
    # bits, and a non-finite value is sent as 0 and counted.
    rng = np.random.RandomState(0)
    grid = np.array([0.0, 1.0])
    encoder = RingEncoder.for_bound(1e15, n_terms=3)
    shares, exact = [], 0.0
    for i in range(3):
        margins = rng.normal(size=(50, 1)) * 30
        client = SimpleNamespace(
            s=np.ones((50, 1)), loss="hinge", margins=margins,
            point=rng.uniform(size=(50, 1)), direction=np.zeros((50, 1)),
            loss_sum=np.zeros(1), conj_sum=np.zeros(1), report=None)
        if i == 2:
            client.margins[0] = np.nan
        share = client_report(client, grid, 1e15, encoder.frac_bits)
        shares.append(encoder.encode(share))
        if i < 2:
            exact += np.maximum(0, 1 - margins).sum()
    total = split_total(encoder.decode(sum(shares)), encoder.frac_bits)
    assert encoder.frac_bits <= 12  # alone: ~2e-4 absolute at best
    assert total[-1, 0] == 1.0  # one value flagged (task 0's loss)
    f = encoder.frac_bits
    # rounded alone: errors up to 3 * 2**-(f + 1); with the shares' rounding
    # errors: 3 * 2**-(2 f + 2)
    assert abs(total[0, 0] - exact) <= 3 * 2.0 ** -(2 * f + 2)
