"""The refinement (skfed's, issue 35): Lloyd's k-means on the random features
of the out-of-sample map, from the embedding's labels.

Held against a pooled-data numpy Lloyd on the same features and start,
against the paper's clustering (``refine=None``, which must be the model of
before the refinement existed) and on issue 35's moons.
"""

import hashlib
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import normalized_mutual_info_score as nmi

from skfed.cluster import FederatedKernelKMeans
from skfed.cluster._dspgd import oos_seed
from skfed.cluster._refine import MIN_MOVED, REFINE_MAX_ITER
from skfed.kernel_approximation import RandomFourierBasis

from .conftest import users_key


def features(X, km):
    """The map's random features ``z(x) = a'(x) / sqrt(D')``, pooled."""
    D = km.embedding_map_.shape[1]
    basis = RandomFourierBasis(oos_seed(users_key(km.random_state,
                                                  km.partition_.n_parties)),
                               gamma=km.gamma_)
    return basis.transform(X, range(D)) / np.sqrt(D)


def pooled_lloyd(Z, labels, k, max_iter, weights=None):
    """Lloyd on the pooled rows with the protocol's stopping rule: centers
    from the released labels; stop once fewer than MIN_MOVED rows move."""
    w = np.ones(len(Z)) if weights is None else weights / weights.mean()
    released, moves = labels.copy(), []
    for it in range(max_iter):
        centers = np.array([w[released == j] @ Z[released == j]
                            / w[released == j].sum() for j in range(k)])
        d = ((Z[:, None, :] - centers[None]) ** 2).sum(axis=-1)
        labels = np.argmin(d, axis=1)
        moves.append(int(np.sum(labels != released)))
        if moves[-1] < MIN_MOVED or it == max_iter - 1:
            return labels, centers, moves
        released = labels


@pytest.fixture(scope="module")
def moons():
    return make_moons(1000, noise=0.05, random_state=0)


@pytest.fixture(scope="module")
def moons_fits(moons):
    X, _ = moons
    common = dict(gamma=8.0, partition=3, random_state=1)
    return (FederatedKernelKMeans(2, refine=None, **common).fit(X),
            FederatedKernelKMeans(2, refine="auto", **common).fit(X))


@pytest.fixture(scope="module")
def moons_default(moons):
    X, _ = moons
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return FederatedKernelKMeans(2, gamma=8.0, partition=3,
                                     random_state=1).fit(X)


# -- issue 35's acceptance ----------------------------------------------------------

def test_refined_moons_beat_the_embedding(moons, moons_fits):
    # Seed 1 of issue 35's moons: the paper's clustering of the embedding
    # reaches NMI 0.622 (exact kernel k-means 0.776); Lloyd on the features
    # from its labels reaches 0.990 in 10 center updates.
    _, y = moons
    paper, refined = moons_fits
    assert refined.n_iter_ == paper.n_iter_ < refined.max_iter
    assert nmi(y, paper.labels_) < 0.7
    assert nmi(y, refined.labels_) >= 0.98
    assert 1 <= refined.n_refine_iter_ < REFINE_MAX_ITER


def test_the_default_updates_the_centers_once(moons, moons_fits,
                                             moons_default):
    # The default releases the totals once (refinement_differences needs
    # two), by design: no ConvergenceWarning (the fixture turns it into an
    # error). It is one pooled Lloyd step from the paper's labels: centers
    # are the features' means over those labels, labels the nearest center.
    X, y = moons
    paper, _ = moons_fits
    km = moons_default
    assert FederatedKernelKMeans().get_params()["refine"] == "once"
    assert km.n_iter_ == paper.n_iter_ and km.n_refine_iter_ == 1
    Z = features(X, km)
    labels, centers, moves = pooled_lloyd(Z, paper.labels_, 2, 1)
    assert km.refine_moves_.tolist() == moves and moves[0] >= MIN_MOVED
    np.testing.assert_array_equal(km.labels_, labels)
    np.testing.assert_allclose(km.cluster_centers_, centers, rtol=0,
                               atol=1e-10)
    np.testing.assert_array_equal(km.predict(X), km.labels_)
    # Seed 1 is the hardest of the three: 0.622 -> 0.710 (one step; Lloyd
    # to its end reaches 0.990 but releases totals ten times).
    assert nmi(y, km.labels_) > nmi(y, paper.labels_) + 0.05


def test_one_update_never_raises_the_kernel_kmeans_objective(moons,
                                                             moons_fits,
                                                             moons_default):
    # Lloyd's step: on the features the default's labels cost no more than
    # the paper's (both measured with each labelling's own means).
    X, _ = moons
    Z = features(X, moons_default)

    def cost(labels):
        return sum(((Z[labels == j] - Z[labels == j].mean(axis=0)) ** 2).sum()
                   for j in np.unique(labels))
    assert cost(moons_default.labels_) < cost(moons_fits[0].labels_)


# -- against a pooled-data Lloyd ----------------------------------------------------

def check_against_pooled_lloyd(X, paper, km, weights=None):
    assert len(np.unique(paper.labels_)) == 2
    labels, centers, moves = pooled_lloyd(features(X, km), paper.labels_, 2,
                                          REFINE_MAX_ITER, weights)
    assert len(moves) >= 3  # the centers moved at least twice
    assert km.refine_moves_.tolist() == moves
    np.testing.assert_array_equal(km.labels_, labels)
    np.testing.assert_allclose(km.cluster_centers_, centers, rtol=0,
                               atol=1e-10)
    # predict: the nearest center of each row's features, the labels here.
    np.testing.assert_array_equal(km.predict(X), km.labels_)
    d = ((features(X, km)[:, None] - centers[None]) ** 2).sum(axis=-1)
    np.testing.assert_allclose(km.transform(X), np.sqrt(d), atol=1e-7)
    assert km.score(X) == pytest.approx(-d.min(axis=1).sum())


def test_refinement_is_lloyd_on_the_pooled_features(moons, moons_fits):
    check_against_pooled_lloyd(moons[0], *moons_fits)


def test_weighted_refinement_is_weighted_lloyd(moons):
    X, _ = moons
    w = np.linspace(0.5, 3.0, len(X))
    common = dict(gamma=8.0, partition=3, random_state=1, max_iter=20,
                  tol=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        paper = FederatedKernelKMeans(2, refine=None, **common).fit(
            X, sample_weight=w)
        km = FederatedKernelKMeans(2, refine="auto", **common).fit(
            X, sample_weight=w)
    check_against_pooled_lloyd(X, paper, km, w)


def test_released_totals_differ_by_at_least_min_moved_rows(moons_fits):
    # Totals are uploaded again only after MIN_MOVED or more rows moved: the
    # difference of two consecutive totals is never one or two rows.
    refined = moons_fits[1]
    moves = refined.refine_moves_
    assert len(moves) == refined.n_refine_iter_
    assert (moves[:-1] >= MIN_MOVED).all() and moves[-1] < MIN_MOVED
    # Totals are released once for the embedding's labels and once after
    # each center update but the last: two users upload to the first (whose
    # own share is local), which relays the totals to those two.
    by_phase = refined.communication_.by_phase
    assert by_phase["refine: totals/upload"]["messages"] == 2 * len(moves)
    assert by_phase["refine: totals/relay"]["messages"] == 2 * len(moves)


def test_refine_stops_at_its_own_cap_with_a_warning(moons):
    X, _ = moons
    km = FederatedKernelKMeans(2, gamma=8.0, partition=3, random_state=1,
                               refine=2)
    with pytest.warns(ConvergenceWarning, match="refinement stopped at 2"):
        km.fit(X)
    assert km.n_refine_iter_ == 2
    assert km.refine_moves_[-1] >= MIN_MOVED
    # The labels are the nearest of the last released centers.
    np.testing.assert_array_equal(km.predict(X), km.labels_)


# -- refine=None is the paper's Algorithm 1, as before --------------------------------

def _digest(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def test_refine_none_is_the_model_before_the_refinement():
    # Fingerprints of the fit on main before the refinement (ed2f309):
    # labels, centers, map, the eigenvalues and every byte sent.
    X, _ = make_moons(300, noise=0.05, random_state=0)
    km = FederatedKernelKMeans(2, gamma=8.0, partition=3, random_state=0,
                               refine=None).fit(X)
    assert km.n_iter_ == 92
    assert km.eigenvalues_.tolist() == [29.280106091154643, 28.95921184752531]
    assert km.communication_.total_bytes == 10995696
    assert km.communication_.total_messages == 11121
    assert _digest(km.labels_) == "74b01b89dc139144"
    assert _digest(km.cluster_centers_) == "a48ccb4ea33deaa3"
    assert _digest(km.embedding_map_) == "b511acbba57236a5"
    assert km.n_refine_iter_ == 0
    assert not any(p.startswith("refine") for p in km.communication_.by_phase)


def test_refinement_only_appends_to_the_papers_protocol(moons_fits):
    paper, refined = moons_fits
    assert refined.eigenvalues_.tolist() == paper.eigenvalues_.tolist()
    np.testing.assert_array_equal(refined.embedding_map_, paper.embedding_map_)
    added = {p for p in refined.communication_.by_phase
             if p not in paper.communication_.by_phase}
    assert added == {"refine: totals/upload", "refine: totals/relay",
                     "refine: moves/upload"}
    for phase, counts in paper.communication_.by_phase.items():
        assert refined.communication_.by_phase[phase] == counts, phase


def test_refinement_is_deterministic(moons_fits, moons):
    X, _ = moons
    again = FederatedKernelKMeans(2, gamma=8.0, partition=3,
                                  random_state=1, refine="auto").fit(X)
    np.testing.assert_array_equal(again.labels_, moons_fits[1].labels_)
    np.testing.assert_array_equal(again.cluster_centers_,
                                  moons_fits[1].cluster_centers_)
