"""SecureBoost's histogram stage.

Sparse-aware encrypted histograms: same sums as summing every row, fewer
products. The passive party's reveal rule (``min_passive_rows``): every atom
of its revealed nodes keeps at least ``min_rows`` gradient rows.
"""

import numpy as np
import pytest

from skfed.crypto import EncryptedArray, generate_keypair
from skfed.ensemble._histogram import NodeBins, RevealedNodes, candidate_sums
from skfed.ensemble._packing import GradientLayout, pack_candidates, unpack_candidates

MISSING = 6  # missing_bin of these tests: bins 0..5 and the missing bin 6


@pytest.fixture(scope="module")
def keys():
    return generate_keypair(256)


def _table(rng, n_rows):
    """Bins of a sparse column, a dense one with missing values, a constant one."""
    bins = np.zeros((n_rows, 3), dtype=np.uint8)
    bins[rng.random(n_rows) < 0.15, 0] = 1                 # sparse binary, mode 0
    bins[:, 1] = rng.choice([0, 1, 2, 3, 4, 5, MISSING], n_rows,
                            p=[0.1, 0.1, 0.45, 0.1, 0.1, 0.05, 0.1])  # mode 2
    bins[:, 2] = 3                                          # constant in the node
    return bins


def _candidates(bins):
    """Every threshold of each column, the missing-left ones last."""
    features, thresholds, missing_left = [], [], []
    for left in (False, True):
        for f in range(bins.shape[1]):
            for v in range(5):
                features.append(f)
                thresholds.append(v)
                missing_left.append(left)
    return (np.array(features), np.array(thresholds), np.array(missing_left))


def _expected(values, bins, features, thresholds, missing_left):
    return np.array([
        values[(bins[:, f] <= v) | (left & (bins[:, f] == MISSING))].sum()
        for f, v, left in zip(features, thresholds, missing_left)], dtype=np.int64)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_sparse_sums_equal_full_sums(keys, n_jobs):
    public_key, private_key = keys
    rng = np.random.default_rng(0)
    bins = _table(rng, 60)
    values = rng.integers(-1000, 1000, size=60)
    plaintexts = np.empty(60, dtype=object)
    plaintexts[:] = values.tolist()
    ciphertexts = public_key.raw_encrypt(plaintexts)
    plan = NodeBins(bins, MISSING + 1)
    assert plan.mode.tolist() == [0, 2, 3]
    # At most one product per row off each feature's fullest bin, plus the
    # total; the dense histogram costs one per row and feature.
    assert plan.n_products <= int((bins != plan.mode).sum()) + 60 < bins.size
    hist = plan.histogram(np.asarray(ciphertexts, dtype=object),
                          public_key.nsquare, n_jobs)
    decrypted = np.array([[private_key.decrypt(EncryptedArray(
        public_key, np.array([c], dtype=object), 0, is_integer=True))[0]
        for c in row] for row in hist], dtype=np.int64)
    full = np.array([[values[bins[:, f] == b].sum() for b in range(MISSING + 1)]
                     for f in range(3)])
    assert np.array_equal(decrypted, full)  # the derived bins too
    features, thresholds, missing_left = _candidates(bins)
    sums = candidate_sums(hist, features, thresholds, missing_left, MISSING,
                          public_key)
    assert np.array_equal(private_key.decrypt(sums).astype(np.int64),
                          _expected(values, bins, features, thresholds,
                                    missing_left))


def test_empty_node_gives_zero_sums(keys):
    public_key, private_key = keys
    plan = NodeBins(np.zeros((0, 2), dtype=np.uint8), MISSING + 1)
    hist = plan.histogram(np.empty(0, dtype=object), public_key.nsquare)
    sums = candidate_sums(hist, np.array([0, 1]), np.array([0, 4]),
                          np.array([False, True]), MISSING, public_key)
    assert np.array_equal(private_key.decrypt(sums.rerandomize()), [0, 0])


@pytest.mark.parametrize("n_candidates", [1, 7, 9])
def test_packed_sparse_candidates_round_trip(keys, n_candidates):
    # Candidates of (h, g) row pairs, packed with a short last chunk.
    public_key, private_key = keys
    rng = np.random.default_rng(n_candidates)
    layout = GradientLayout(n_rows=80, key_size=256)
    qg = rng.integers(-2**20, 2**20, 80)
    qh = rng.integers(0, 2**20, 80)
    bins = _table(rng, 80)
    features, thresholds, missing_left = (a[:n_candidates] for a in
                                          _candidates(bins))
    encrypted = layout.encrypt_pairs(public_key, qg, qh)
    hist = NodeBins(bins, MISSING + 1).histogram(encrypted.ciphertexts,
                                                 public_key.nsquare, 2)
    sums = candidate_sums(hist, features, thresholds, missing_left, MISSING,
                          public_key)
    message = pack_candidates(sums, layout.public_part(), n_jobs=2)
    assert message.shape == (-(-n_candidates // layout.per_ciphertext),)
    G, H = unpack_candidates(private_key, message, n_candidates, layout)
    args = (bins, features, thresholds, missing_left)
    assert np.array_equal(G, _expected(qg, *args))
    assert np.array_equal(H, _expected(qh, *args))


def test_sparse_table_paillier_equals_plaintext():
    # One-hot blocks (fullest bin 0), a column mostly 1 (fullest bin 1) and
    # missing values on the passive party's side: the derived bins feed the
    # same splits as the plaintext mode's sums over every row.
    from skfed.ensemble import SecureBoostClassifier

    rng = np.random.default_rng(3)
    n = 240
    X = np.zeros((n, 10))
    X[np.arange(n), rng.integers(0, 4, n)] = 1.0
    X[np.arange(n), 4 + rng.integers(0, 4, n)] = 1.0
    X[:, 8] = rng.random(n) < 0.7
    X[:, 9] = rng.random(n) < 0.2
    X[rng.random(n) < 0.1, 9] = np.nan
    y = (X[:, 5] + X[:, 8] + rng.random(n) > 1.5).astype(int)
    params = dict(n_estimators=2, max_depth=4, random_state=0,
                  partition=[[0, 1, 2, 3], [4, 5, 6, 7, 8, 9]])
    paillier = SecureBoostClassifier(key_size=512, n_jobs=2, **params).fit(X, y)
    plain = SecureBoostClassifier(encryption=None, **params).fit(X, y)
    assert paillier._records == plain._records
    assert sum(len(r) for r in paillier._records[1:]) > 0  # passive splits
    np.testing.assert_array_equal(paillier.predict_proba(X), plain.predict_proba(X))


# -- the reveal rule (min_passive_rows), by hand ------------------------------

def test_revealed_nodes_keep_every_atom_at_min_rows():
    ledger = RevealedNodes(3)
    assert ledger.reveal(np.arange(10))
    assert not ledger.reveal(np.arange(2))        # a node of 2 rows
    assert not ledger.reveal(np.arange(8))        # leaves 2 rows of the root
    assert ledger.reveal(np.arange(7))            # leaves 3
    assert ledger.reveal(np.arange(7, 10))        # leaves 0: P = L + R
    assert ledger.reveal(np.arange(4))            # inside [0, 7): leaves 3
    assert not ledger.reveal(np.array([4, 5]))
    assert not ledger.reveal(np.array([4, 5, 6, 7]))  # not nested: 2 of 2 atoms
    assert RevealedNodes(0).reveal(np.arange(1))  # the paper: everything
