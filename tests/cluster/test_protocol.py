"""The protocol of federated kernel k-means: the setup (gamma, the users'
key, row counts), the messages of an iteration with and without CEM, and
what the server receives."""

import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.metrics import normalized_mutual_info_score as nmi

from skfed.cluster import FederatedKernelKMeans, dspgd_uploads
from skfed.cluster._coreset import MIN_GROUP
from skfed.cluster._dspgd import feature_seed
from skfed.cluster import _dspgd, _protocol
from skfed.cluster._protocol import MIN_USER_ROWS
from skfed.federation import record_messages
from skfed.kernel_approximation import RandomFourierBasis

from .conftest import _contains_row, users_key


# -- setup: the paper's gamma, the users' key, row counts -----------------------

def test_gamma_is_the_papers_mean_distance_rule(blobs, fitted):
    # From masked sums of rotated moments: the same value to ring precision.
    X, _ = blobs
    sq = ((X[:, None, :] - X[None]) ** 2).sum(-1)
    assert fitted.gamma_ == pytest.approx(len(X) ** 2 / (2 * sq.sum()), rel=1e-12)


@pytest.mark.parametrize("scale", [1e-6, 1e6])
def test_gamma_of_unscaled_data(scale):
    X = make_blobs(60, n_features=3, random_state=0)[0] * scale
    sq = ((X[:, None, :] - X[None]) ** 2).sum(-1)
    km = FederatedKernelKMeans(2, max_iter=2, tol=None, partition=3).fit(X)
    assert km.gamma_ == pytest.approx(len(X) ** 2 / (2 * sq.sum()), rel=1e-9)


@pytest.mark.parametrize("scale", [1e-20, 1e-100, 1e20, 1e100])
def test_default_gamma_is_scale_invariant(blobs, fitted, scale):
    # The moments of X scaled by 1e-20 used to fall below the ring's
    # resolution: gamma fell back to 1.0 and the fit put rows in one cluster.
    X, _ = blobs
    km = FederatedKernelKMeans(4, partition=3, random_state=0).fit(X * scale)
    assert km.gamma_ * scale ** 2 == pytest.approx(fitted.gamma_, rel=1e-9)
    assert nmi(fitted.labels_, km.labels_) > 0.95


def test_rows_equal_up_to_rounding_stop_the_default_gamma():
    X = 1e12 + make_blobs(60, n_features=3, random_state=0)[0] * 1e-3
    with pytest.raises(Exception, match="center X .* or pass gamma"):
        FederatedKernelKMeans(2, max_iter=2, partition=3).fit(X)


def test_party_keys_os_draws_the_users_key_out_of_the_servers_sight(blobs, fitted):
    X, _ = blobs
    with record_messages() as rec:
        km = FederatedKernelKMeans(4, party_keys="os", partition=3,
                                   random_state=0).fit(X)
    sent = [m for m in rec.messages if m.phase == "setup: users' key"]
    assert [(m.sender, m.receiver) for m in sent] == [("user0", "user1"),
                                                      ("user0", "user2")]
    key = sent[0].payload[0].tobytes()
    assert key != users_key(0, 3) and key == km._users_key
    # Other features than the random_state fit's, the same clustering.
    assert nmi(km.labels_, fitted.labels_) > 0.8


def test_user_holding_too_few_rows_is_refused(blobs):
    X, _ = blobs
    owners = np.arange(len(X)) % 3
    owners[owners == 2] = 0
    owners[: MIN_USER_ROWS - 1] = 2  # user 2 holds MIN_USER_ROWS - 1 rows
    with pytest.raises(ValueError, match=f"User 'user2' holds {MIN_USER_ROWS - 1} "
                       f"row.*MIN_USER_ROWS={MIN_USER_ROWS}"):
        FederatedKernelKMeans(3).fit(X, sample_party=owners)


# -- communication --------------------------------------------------------------

def test_cem_uploads_are_q_times_d_plus_r(fitted):
    uploads = dspgd_uploads(fitted)
    assert sorted(uploads) == list(range(1, fitted.n_iter_ + 1))
    D, rank = fitted.n_random_features_, 0
    for t, q in zip(uploads, fitted.n_lanczos_iter_):
        assert set(uploads[t].values()) == {q * (D + rank)}
        rank = fitted.ranks_[t - 1]


def test_communication_groups_by_protocol_phase(fitted):
    # One row per protocol phase, as for the other estimators, however many
    # iterations ran (issue 29 item 6: it used to be one row per iteration).
    summary = fitted.communication_
    assert fitted.n_iter_ >= 5
    assert not any(char.isdigit() for phase in summary.by_phase
                   for char in phase)
    dspgd_phases = {p for p in summary.by_phase if p.startswith("dspgd:")}
    assert dspgd_phases == {
        "dspgd: iteration", "dspgd: lanczos/request", "dspgd: lanczos/upload",
        "dspgd: eigenpairs", "dspgd: convergence/upload", "dspgd: build H"}
    assert len(summary.table().splitlines()) <= 25
    # The per-iteration detail: one summary per iteration, adding up to the
    # fit's DSPGD iterations exactly.
    per_iteration = fitted.communication_by_iteration_
    assert len(per_iteration) == fitted.n_iter_
    total = per_iteration[0]
    for s in per_iteration[1:]:
        total = total + s
    for phase, counts in total.by_phase.items():
        assert counts == summary.by_phase[phase], phase
    assert set(total.by_phase) == dspgd_phases - {"dspgd: build H"}
    with pytest.raises(TypeError, match="communication_by_iteration_"):
        dspgd_uploads(summary)


def test_recorded_messages_carry_their_iteration(blobs):
    X, _ = blobs
    with record_messages() as rec:
        km = FederatedKernelKMeans(4, max_iter=3, tol=None, partition=3,
                                   random_state=0).fit(X)
    rounds = {m.round for m in rec.messages if m.phase.startswith("dspgd: l")}
    assert rounds == {1, 2, 3}
    for t, summary in enumerate(km.communication_by_iteration_, start=1):
        sent = sum(1 for m in rec.messages
                   if m.round == t and m.phase.startswith("dspgd: lanczos"))
        assert sent == sum(v["messages"] for p, v in summary.by_phase.items()
                           if p.startswith("dspgd: lanczos"))


def test_plain_variant_same_result_more_uploads(blobs):
    X, _ = blobs
    common = dict(n_random_features=40, max_iter=8, tol=None, partition=3,
                  random_state=0)
    cem = FederatedKernelKMeans(4, **common).fit(X)
    plain = FederatedKernelKMeans(4, communication_efficient=False,
                                  **common).fit(X)
    # Same random features, same R_t: same eigenvalues and clusters.
    np.testing.assert_allclose(plain.eigenvalues_, cem.eigenvalues_, rtol=1e-5)
    assert nmi(plain.labels_, cem.labels_) > 0.99
    n_m = len(X) // 3
    up = dspgd_uploads(plain)
    for t, q in zip(up, plain.n_lanczos_iter_):  # Theorem 2: Q (D + n_m)
        assert set(up[t].values()) == {q * (40 + n_m)}


@pytest.mark.slow
def test_cem_uploads_do_not_grow_with_rows_and_save_90_percent():
    per_user = {}
    for n in (400, 1600):
        X, _ = make_blobs(n, centers=3, random_state=1)
        for cem in (True, False):
            km = FederatedKernelKMeans(3, max_iter=4, tol=None,
                                       n_random_features=20, partition=2,
                                       random_state=0,
                                       communication_efficient=cem).fit(X)
            up = dspgd_uploads(km)
            per_user[n, cem] = np.mean([v for t in up.values() for v in t.values()])
    assert per_user[1600, True] <= 1.3 * per_user[400, True]
    assert per_user[1600, False] >= 3 * per_user[400, False]
    assert per_user[1600, True] <= 0.1 * per_user[1600, False]


# -- what the server receives ---------------------------------------------------

def _arrays(payload):
    for item in payload:
        if isinstance(item, (list, tuple)):
            yield from _arrays(item)
        elif isinstance(item, np.ndarray) and item.dtype != object:
            yield item


def test_server_receives_no_raw_rows_and_no_rows_of_a(blobs):
    X, _ = blobs
    T, D = 4, 12
    km = FederatedKernelKMeans(4, max_iter=T, tol=None, n_random_features=D,
                               partition=3, random_state=0)
    with record_messages() as rec:
        km.fit(X)
    key = users_key(0, 3)
    A = [RandomFourierBasis(feature_seed(key, t), gamma=km.gamma_)
         .transform(X, range(D)) for t in range(1, T + 1)]
    to_server = rec.received_by("server")
    assert to_server and {m.sender for m in to_server} == {"user0", "user1", "user2"}
    n_rows = [len(km.partition_.rows(m)) for m in range(3)]
    for message in to_server:
        for array in _arrays(message.payload):
            assert not _contains_row(array, X)
            assert not any(_contains_row(array, A_t) for A_t in A)
            # Nothing per row crosses with CEM: no array is indexed by rows.
            assert not (message.phase.startswith("dspgd") and array.shape[0] in n_rows)
    # Every summary point of the distributed k-means averages several rows.
    coreset = [m for m in to_server if m.phase == "kmeans: coreset"]
    assert len(coreset) == 3
    assert all(np.min(m.payload[1]) >= MIN_GROUP for m in coreset)
    # Users hear from each other only to agree on the pair seeds of the
    # secure sums and, in the refinement, for its totals: masked uploads to
    # the first user, who relays the decoded totals.
    between_users = [m for m in rec.messages
                     if m.sender != "server" and m.receiver != "server"]
    refinement = {"refine: totals/upload", "refine: totals/relay"}
    assert between_users and all(m.phase.endswith("/keys")
                                 or m.phase in refinement
                                 for m in between_users)
    assert {m.phase for m in between_users} & refinement == refinement
    assert all(m.receiver == "user0" for m in between_users
               if m.phase == "refine: totals/upload")
    assert all(m.sender == "user0" for m in between_users
               if m.phase == "refine: totals/relay")


def test_server_receives_sums_only_as_masked_ring_values(blobs):
    X, _ = blobs
    km = FederatedKernelKMeans(4, partition=3, random_state=0)
    with record_messages() as rec:
        km.fit(X)
    uploads = [m for m in rec.received_by("server") if m.phase.endswith("/upload")]
    phases = {m.phase.split("/")[0] for m in uploads}
    assert phases == {"setup: scale", "setup: moments", "dspgd: lanczos",
                      "dspgd: convergence", "oos: embedding map",
                      "refine: moves"}
    assert all(m.payload[0].dtype == np.uint64 for m in uploads)
    # Anything else a user sends the server: its row count, one local cost
    # and its group means (plaintext, by the contract).
    others = {m.phase for m in rec.received_by("server")} - {m.phase for m in uploads}
    assert others == {"setup: row counts", "kmeans: local costs", "kmeans: coreset"}


def test_reproducible_with_fresh_masks(blobs):
    X, _ = blobs
    fits, first_uploads = [], []
    for _ in range(2):
        with record_messages() as rec:
            fits.append(FederatedKernelKMeans(4, max_iter=3, tol=None, partition=3,
                                              random_state=0).fit(X))
        first_uploads.append([m.payload[0] for m in rec.messages
                              if m.phase == "dspgd: lanczos/upload" and m.round == 1])
    np.testing.assert_array_equal(fits[0].predict(X), fits[1].predict(X))
    np.testing.assert_array_equal(fits[0].eigenvalues_, fits[1].eigenvalues_)
    # Masks come from each user's CSPRNG, never from random_state.
    assert not any(np.array_equal(a, b) for a, b in zip(*first_uploads))


# -- memory: the out-of-sample moment by blocks ---------------------------------

def test_kernel_kmeans_out_of_sample_moment_by_blocks():
    rng = np.random.RandomState(1)
    n, width = 6000, 1000
    state = SimpleNamespace(X=rng.normal(size=(n, 4)), H=rng.normal(size=(n, 3)),
                            gamma=0.3, users_key=b"u" * 32)
    tracemalloc.start()
    total = _protocol.user_oos_moment(state, width)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # one block of features (2^21 values, and its finite check: a byte per
    # value), never the n x width matrix
    assert peak < 9 * 2**21 + 2**20 < 8 * n * width
    A = _dspgd.RandomFourierBasis(_dspgd.oos_seed(state.users_key),
                                  gamma=0.3).transform(state.X, np.arange(width))
    np.testing.assert_allclose(total, state.H.T @ A, rtol=1e-10, atol=1e-8)
