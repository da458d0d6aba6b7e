"""Setup of federated kernel k-means: row counts, the users' key, the kernel width.

Before DSPGD starts, the server learns how many rows each user holds and the
kernel width ``gamma``, and the users share a key the server does not know.

- **Row counts** travel in plaintext (the server splits the coreset budget
  by them). A user holding fewer than :data:`MIN_USER_ROWS` rows is refused
  before any party starts.
- **The users' key** seeds every random Fourier feature (``omega_t, b_t`` of
  each iteration and the features of the out-of-sample map). It shapes the
  model, so with ``party_keys="random_state"`` it derives from
  ``random_state`` (reproducible fits; the simulation stands in for a key the
  users agreed on beforehand); with ``party_keys="os"`` the first user draws
  it from its CSPRNG and sends it to the other users, as a deployment would,
  and the server never sees it.
- **The default gamma** is the paper's ``N^2 / (2 sum_ij ||x_i - x_j||^2)``.
  Since ``sum_ij ||x_i - x_j||^2 = 2 N sum_i ||x_i||^2 - 2 ||sum_i x_i||^2``,
  the totals over all users of ``sum x`` and ``sum ||x||^2`` suffice, and
  of ``sum x`` only its norm. Each user rotates its ``sum x`` by an
  orthogonal map ``Q`` drawn from the users' key (a randomised Hadamard
  transform, the same for every user), and the vectors ``(Q sum x,
  sum ||x||^2)`` are summed with pairwise ring masks
  (:func:`~skfed.federation.secure_sum.secure_sum`): the server decodes the
  totals only, and of the mean row only its norm, which is what ``gamma``
  needs. A ring holds fixed-point numbers of one scale, and the data's
  magnitude is not public: the users first secure-sum a one-hot vote for the
  power-of-two bucket of their largest moment (``sqrt(sum ||x||^2)`` in
  place of ``sum ||x||^2``, so that every entry scales like X), and the
  server announces the top bucket ``2**s`` as the common scale (it learns
  how many users fall in each bucket, not which); ``sum ||x||^2`` travels
  divided by ``2**s``, which keeps the estimate of ``gamma`` exact to ring
  precision whatever the units of X.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import hashlib
import secrets

import numpy as np
import scipy.sparse as sp

from ..federation.secure_sum import RingEncoder, secure_sum

__all__ = [
    "MIN_USER_ROWS",
    "auto_random_features",
    "SERVER",
    "ScaledRingEncoder",
    "check_user_rows",
    "derive_seed",
    "moment_encoder",
    "n_distinct_rows",
    "setup",
    "shared_rotation",
    "users_key_from_seed",
]

#: name of the coordinating party
SERVER = "server"

#: a user must hold at least this many rows: every value it sends in
#: plaintext (its row count, the cost of its local k-means, group means) then
#: summarises several rows, and so does its masked share of every sum
MIN_USER_ROWS = 5

# The scale vote: buckets of _BUCKET powers of two covering float64's range.
_LOWEST_EXPONENT, _BUCKET, _N_BUCKETS = -1080, 8, 270


class ScaledRingEncoder(RingEncoder):
    """A :class:`~skfed.federation.secure_sum.RingEncoder` of ``x / 2**shift``.

    Values below ``2**shift`` in magnitude encode with ``frac_bits``
    fractional bits relative to that scale, whatever their absolute size.
    """

    def __init__(self, frac_bits=32, shift=0):
        super().__init__(frac_bits)
        self.shift = int(shift)

    def encode(self, values):
        return super().encode(np.ldexp(np.asarray(values, dtype=float),
                                       -self.shift))

    def decode(self, ring_values):
        return np.ldexp(super().decode(ring_values), self.shift)

    def __repr__(self):
        return f"ScaledRingEncoder(frac_bits={self.frac_bits}, shift={self.shift})"


def moment_encoder(n_users, shift):
    """The ring encoding of the moments, at the scale ``2**shift`` announced."""
    # Every |moment| of a user is below 2**shift; the total of n_users is
    # below n_users * 2**shift, which the ring must hold.
    bits = int(np.ceil(np.log2(max(n_users, 1)))) + 2
    return ScaledRingEncoder(frac_bits=63 - bits, shift=shift)


def auto_random_features(n_clusters, n_lambda, n_samples):
    """``n_random_features="auto"``: ``max(100, 10 n_lambda)``, at most N / 2.

    ``n_lambda = max(n_clusters + 2, n_components + 1)``. More clusters mean
    more eigenvectors with smaller gaps between them, hence more features per
    iteration; the cap keeps the ``(D + r_t)``-square Lanczos matrix smaller
    than the kernel matrix, and it never goes below ``n_lambda``. (Until
    issue 30 the base was ``max(200, 40 n_lambda)``: the same NMI on
    digits, blobs and the moons, with about twice the uploads.)
    """
    return int(max(n_lambda, min(max(100, 10 * n_lambda), n_samples // 2)))


def check_user_rows(n_rows, users):
    """Refuse a user holding fewer than :data:`MIN_USER_ROWS` rows."""
    for user, n in zip(users, n_rows):
        if n < MIN_USER_ROWS:
            raise ValueError(
                f"User '{user}' holds {n} row(s); federated kernel k-means "
                f"requires at least MIN_USER_ROWS={MIN_USER_ROWS} rows per "
                "user, so that everything a user sends sums several rows. "
                "Give its rows to another user (sample_party) or use fewer "
                "users.")


def n_distinct_rows(X):
    """How many distinct rows ``X`` has (dense or sparse)."""
    if not sp.issparse(X):
        return len(np.unique(X, axis=0))
    X = X.tocsr(copy=True)
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    return len({(X.indices[a:b].tobytes(), X.data[a:b].tobytes())
                 for a, b in zip(X.indptr[:-1], X.indptr[1:])})


def derive_seed(key, label, index=0):
    """A 64-bit seed: a PRF (BLAKE2b) of the users' key, a label and an index."""
    digest = hashlib.blake2b(f"{label}:{int(index)}".encode(), key=bytes(key),
                             digest_size=8).digest()
    return int.from_bytes(digest, "big")


# -- party functions ------------------------------------------------------------

def user_row_count(state):
    return np.array([state.X.shape[0]], dtype=np.int64)


def server_take_count(state, count):
    state.n_rows.append(int(np.asarray(count).ravel()[0]))


def user_take_scale(state, shift):
    state.moment_scale = int(shift)


def user_draw_key(state):
    # The users' secret: the first user's CSPRNG, never random_state.
    state.users_key = secrets.token_bytes(16)
    return np.frombuffer(state.users_key, dtype=np.uint8).copy()


def user_store_key(state, key):
    state.users_key = np.asarray(key, dtype=np.uint8).tobytes()


def user_key(state):
    # A local read, not a message: the estimator keeps the key for predict,
    # acting for the users (who hold it), never for the server.
    return state.users_key


def _fwht(x):
    """Orthonormal fast Walsh-Hadamard transform (length a power of two)."""
    x = np.array(x, dtype=float)
    h = 1
    while h < len(x):
        x = x.reshape(-1, 2, h)
        x = np.stack([x[:, 0] + x[:, 1], x[:, 0] - x[:, 1]], axis=1).ravel()
        h *= 2
    return x / np.sqrt(len(x))


def shared_rotation(users_key, v):
    """``Q v``: an orthogonal map drawn from the users' key, unknown to the server.

    Three rounds of random signs, a Walsh-Hadamard transform and a random
    permutation, on ``v`` padded with zeros to a power of two: norms are
    kept exactly, directions are scrambled.
    """
    v = np.asarray(v, dtype=float)
    size = 1 << max(len(v) - 1, 0).bit_length()
    rng = np.random.default_rng(derive_seed(users_key, "moment rotation"))
    x = np.concatenate([v, np.zeros(size - len(v))])
    for _ in range(3):
        x = _fwht(x * rng.choice([-1.0, 1.0], size))[rng.permutation(size)]
    return x


def _moments(state):
    X = state.X
    with np.errstate(over="ignore"):
        if sp.issparse(X):
            column_sums = np.asarray(X.sum(axis=0)).ravel()
            squares = float(X.multiply(X).sum())
        else:
            column_sums, squares = X.sum(axis=0), np.einsum("ij,ij->", X, X)
        out = np.concatenate([shared_rotation(state.users_key, column_sums),
                              [squares]])
    if not np.all(np.isfinite(out)):
        raise ValueError(
            "the sums of X overflow float64, so the default gamma cannot be "
            "computed: rescale X (StandardScaler) or pass gamma explicitly.")
    return out


def _degree_one(moments):
    """``(Q sum x, sqrt(sum ||x||^2))``: every entry scales like X itself."""
    return np.concatenate([moments[:-1], [np.sqrt(moments[-1])]])


def user_scale_vote(state):
    """One-hot vote for the power-of-two bucket of the user's largest moment.

    The vote reads ``sqrt(sum ||x||^2)`` beside ``Q sum x`` so that both
    scale like X: the uploaded ``sum ||x||^2`` is divided by the announced
    scale once (:func:`user_moments`), and every entry then sits near the
    top of one fixed-point range, whatever the units of X (data scaled by
    ``1e-20`` used to lose ``sum ||x||^2`` below the ring's resolution).
    """
    largest = float(np.max(np.abs(_degree_one(_moments(state))), initial=0.0))
    exponent = np.frexp(largest)[1] if largest > 0 else _LOWEST_EXPONENT
    bucket = int(np.clip((exponent - _LOWEST_EXPONENT) // _BUCKET, 0,
                         _N_BUCKETS - 1))
    vote = np.zeros(_N_BUCKETS)
    vote[bucket] = 1.0
    return vote


def user_moments(state):
    """``(Q sum_i x_i, 2**-s sum_i ||x_i||^2)`` over the user's rows.

    ``s`` is the announced scale: both parts are then below ``2**s`` and of
    degree one in X (masked later).
    """
    out = _moments(state)
    out[-1] = np.ldexp(out[-1], -state.moment_scale)
    return out


def server_scale(state, votes):
    """The common scale: the top bucket any user voted for (an exponent)."""
    top = int(np.max(np.flatnonzero(np.round(votes) > 0), initial=0))
    state.moment_scale = _LOWEST_EXPONENT + _BUCKET * (top + 1)
    return state.moment_scale


def server_gamma(state, total):
    """Section 6.1: ``gamma = N^2 / (2 sum_ij ||x_i - x_j||^2)`` from totals.

    ``total = (Q sum_i x_i, 2**-s sum_i ||x_i||^2)`` at the announced scale
    ``s``; ``Q`` keeps the norm.
    """
    n = float(sum(state.n_rows))
    s1, s2 = total[:-1], float(np.ldexp(total[-1], state.moment_scale))
    pair_sum = 2.0 * n * s2 - 2.0 * float(s1 @ s1)
    if s2 == 0.0:
        return 1.0  # every row is zero: any width gives the same clustering
    if pair_sum <= 1e-9 * n * s2:
        # The spread is lost to rounding beside the rows' common offset (or
        # is zero): a width from it would be arbitrary, so stop.
        raise ValueError(
            "the rows of X are identical, or differ by less than 1e-9 of "
            "their magnitude, so the default gamma (the paper's mean-distance "
            "rule) cannot be computed: center X (StandardScaler) or pass "
            "gamma explicitly.")
    return n * n / (2.0 * pair_sum)


def user_set_gamma(state, gamma):
    state.gamma = float(gamma)


# -- driver -----------------------------------------------------------------------

def _exchange_key(fed, users):
    """``party_keys="os"``: the first user sends its fresh key to the others."""
    key = fed[users[0]].call(user_draw_key).result()
    fed.gather(fed[u].call(user_store_key, key, sender=users[0],
                           phase="setup: users' key") for u in users[1:])


def setup(fed, users, gamma, *, draw_key):
    """Row counts, the users' key and the kernel width; returns ``gamma``.

    Phases: ``"setup: row counts"``, ``"setup: users' key"`` (with
    ``draw_key``), ``"setup: scale/*"`` and ``"setup: moments/*"`` (secure
    sums, default gamma only) and ``"setup: gamma"`` (the broadcast).
    """
    counts = fed.gather(fed[u].call(user_row_count) for u in users)
    fed.gather(fed[SERVER].call(server_take_count, c, sender=u,
                                phase="setup: row counts")
               for u, c in zip(users, counts))
    if draw_key:
        _exchange_key(fed, users)
    if gamma is None:
        votes = secure_sum(fed, users, SERVER, user_scale_vote,
                           phase="setup: scale",
                           encoder=RingEncoder(frac_bits=8)).result()
        shift = fed[SERVER].call(server_scale, votes).result()
        encoder = moment_encoder(len(users), shift)
        fed.gather(fed[u].call(user_take_scale, shift, sender=SERVER,
                               phase="setup: scale") for u in users)
        total = secure_sum(fed, users, SERVER, user_moments,
                           phase="setup: moments", encoder=encoder).result()
        gamma = fed[SERVER].call(server_gamma, total).result()
    fed.gather(fed[u].call(user_set_gamma, gamma, sender=SERVER,
                           phase="setup: gamma") for u in users)
    return float(gamma)


def users_key_from_seed(seed):
    """``party_keys="random_state"``: the users' key from a model seed.

    A simulation stand-in for a key agreed beforehand: reproducible, and
    known to whoever knows ``random_state`` (use ``party_keys="os"`` when
    that matters).
    """
    return hashlib.blake2b(f"users key:{int(seed)}".encode(),
                           digest_size=16).digest()
