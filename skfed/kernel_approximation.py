"""Seeded random Fourier features that every party can draw block by block.

A random Fourier feature of a shift-invariant kernel is
``phi_omega(x) = sqrt(2) cos(omega^T x + b)`` with ``omega`` drawn from the
kernel's spectral measure and ``b`` uniform on ``[0, 2 pi]`` (Rahimi and
Recht, 2007). In a vertical split party ``l`` holds the columns ``G_l`` and
needs only ``omega[G_l]``. Here every entry ``omega[j, i]`` (column ``j``,
feature ``i``) is a pure function of ``(seed, j, i)``: a counter-based hash
(splitmix64) gives a uniform number that is mapped to the spectral
distribution by its inverse CDF. So a party draws exactly its own rows of
``omega`` from the seed, nobody sends ``omega``, and the concatenation over
parties equals what a single machine holding all columns would draw.

Private blocks of directions. In FDSKL and AVFKAM a party's rows of ``omega``
must not be computable by the other parties (whoever receives
``omega^T x + b`` could otherwise solve for the party's columns), so they come
from a key private to that party: :func:`keyed_directions` and
:func:`keyed_phases` are a pseudo-random function of ``(key, feature id)``,
SHAKE-256 of a domain tag, the key and the id (:mod:`hashlib`; a
cryptographic extendable-output function, where the splitmix64 hash above is
only a good mixer). Only the key's holder can draw its block; the block is
still distributed as the kernel's spectral measure, so the model is an
ordinary random-feature model.

Spectral measures, with sklearn's kernel conventions:

- RBF ``exp(-gamma ||x - x'||^2)``: ``omega ~ N(0, 2 gamma I)``.
- Laplacian ``exp(-gamma ||x - x'||_1)``: coordinates i.i.d. Cauchy with
  scale ``gamma``.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import hashlib
import numbers

import numpy as np
from scipy.special import ndtri

__all__ = [
    "KERNELS",
    "hashed_uniform",
    "spectral_directions",
    "random_offsets",
    "derive_party_key",
    "keyed_uniform",
    "keyed_directions",
    "keyed_phases",
    "RandomFourierBasis",
    "resolve_gamma",
    "variance_from_moments",
]

KERNELS = ("rbf", "laplacian")

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(z):
    # uint64 arithmetic wraps modulo 2**64, which is what the mixer needs.
    z = z + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def hashed_uniform(seed, rows, cols, stream=0):
    """Uniform numbers in (0, 1), one per ``(row, col)`` pair.

    Entry ``[a, b]`` depends only on ``(seed, stream, rows[a], cols[b])``, so
    any block of the infinite table can be drawn on its own.

    Parameters
    ----------
    seed : int
        Any integer in ``[0, 2**64)``.

    rows, cols : array-like of int
        Row and column labels (for directions: input columns and feature ids).

    stream : int, default=0
        Separates independent tables drawn from the same seed.

    Returns
    -------
    u : ndarray of shape (len(rows), len(cols))
    """
    rows = np.asarray(rows, dtype=np.uint64).reshape(-1, 1)
    cols = np.asarray(cols, dtype=np.uint64).reshape(1, -1)
    with np.errstate(over="ignore"):
        h = _splitmix64(np.uint64(int(seed) % 2**64) ^ _splitmix64(
            np.uint64(int(stream) % 2**64)))
        h = _splitmix64(h ^ _splitmix64(rows + np.uint64(1)))
        h = _splitmix64(h ^ _splitmix64(cols * _MIX1 + np.uint64(2)))
    # 53 random bits, shifted by half a step so 0 and 1 never occur.
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def spectral_directions(seed, columns, feature_ids, kernel="rbf", gamma=1.0):
    """The rows ``columns`` of the direction matrix ``omega``.

    Parameters
    ----------
    seed : int
        The shared seed of the random features.

    columns : array-like of int
        Global indices of the input columns (a party's column group).

    feature_ids : array-like of int
        Which random features (columns of ``omega``).

    kernel : {"rbf", "laplacian"}, default="rbf"

    gamma : float, default=1.0

    Returns
    -------
    omega : ndarray of shape (len(columns), len(feature_ids))

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.kernel_approximation import spectral_directions
    >>> full = spectral_directions(0, range(5), range(3))
    >>> part = spectral_directions(0, [3, 4], range(3))
    >>> bool(np.array_equal(full[3:], part))
    True
    """
    return _spectral(hashed_uniform(seed, columns, feature_ids, stream=1),
                     kernel, gamma)


def _spectral(u, kernel, gamma):
    # Inverse CDF of the kernel's spectral measure at uniform numbers u.
    if kernel == "rbf":
        return np.sqrt(2.0 * gamma) * ndtri(u)
    if kernel == "laplacian":
        return gamma * np.tan(np.pi * (u - 0.5))
    raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}.")


def random_offsets(seed, feature_ids, stream=2):
    """Phases ``b`` uniform on ``[0, 2 pi)``, one per feature id."""
    return 2.0 * np.pi * hashed_uniform(seed, [0], feature_ids, stream=stream)[0]


_KEY_DOMAIN = b"skfed/party-key/v1"
_PRF_DOMAIN = b"skfed/random-features/v1"


def derive_party_key(seed, party_index):
    """A party's 32-byte key derived from an integer seed (simulation only).

    Used when the keys come from ``random_state`` so that fits are
    reproducible; whoever knows the seed knows the key. A deployment draws
    each key from the operating system instead (``secrets.token_bytes``).
    """
    material = (_KEY_DOMAIN + int(seed).to_bytes(16, "little", signed=True)
                + int(party_index).to_bytes(8, "little"))
    return hashlib.shake_256(material).digest(32)


def _keyed_words(key, feature_ids, n_words):
    # The PRF: SHAKE-256(domain || key || id) expanded to n_words uint64s per
    # feature id. A prefix of a longer output equals the shorter output, so
    # word w of feature j does not depend on how many words are drawn.
    key = bytes(key)
    base = hashlib.shake_256(_PRF_DOMAIN + len(key).to_bytes(2, "little") + key)
    ids = np.asarray(feature_ids, dtype=np.int64).ravel()
    out = np.empty((len(ids), n_words), dtype=np.uint64)
    for a, j in enumerate(ids.tolist()):
        h = base.copy()
        h.update(int(j).to_bytes(8, "little", signed=True))
        out[a] = np.frombuffer(h.digest(8 * n_words), dtype="<u8")
    return out


def _to_unit(words):
    # 53 random bits, shifted by half a step so 0 and 1 never occur (in
    # place: a wide party draws tens of millions of these at once).
    u = (words >> np.uint64(11)).astype(np.float64)
    u += 0.5
    u *= 2.0**-53
    return u


def keyed_uniform(key, feature_ids, n_words):
    """Uniform numbers in (0, 1) from a private key: shape (len(ids), n_words).

    Entry ``[a, w]`` is word ``w`` of the pseudo-random function of
    ``(key, feature_ids[a])``; word 0 is a feature's phase, words ``1..d``
    the directions of a party's ``d`` columns.
    """
    return _to_unit(_keyed_words(key, feature_ids, n_words))


def keyed_directions(key, n_columns, feature_ids, kernel="rbf", gamma=1.0):
    """A party's private block of ``omega``: shape (n_columns, len(feature_ids)).

    Row ``c`` holds the party's ``c``-th column (in the party's own column
    order). Only the holder of ``key`` can draw it.

    Examples
    --------
    >>> import numpy as np
    >>> from skfed.kernel_approximation import derive_party_key, keyed_directions
    >>> key = derive_party_key(0, 1)
    >>> block = keyed_directions(key, 3, range(5), gamma=0.5)
    >>> block.shape
    (3, 5)
    >>> bool(np.array_equal(block[:2], keyed_directions(key, 2, range(5),
    ...                                                  gamma=0.5)))
    True
    """
    u = keyed_uniform(key, feature_ids, 1 + int(n_columns))[:, 1:]
    # C order (columns x features): parties slice and multiply it by rows.
    return np.ascontiguousarray(_spectral(u.T, kernel, gamma))


def keyed_phases(key, feature_ids):
    """A party's private phases, uniform on ``[0, 2 pi)``, one per feature id."""
    words = _keyed_words(key, feature_ids, 1)[:, 0]
    return (words >> np.uint64(11)).astype(np.float64) * (2.0 * np.pi * 2.0**-53)


def resolve_gamma(gamma, n_features, variance=None):
    """sklearn's ``gamma``: a positive float, or ``'scale'`` = 1 / (d var(X)).

    ``variance`` is the variance of all entries of ``X``; in a federation it
    comes from per-party sums (see :func:`variance_from_moments`).
    """
    if isinstance(gamma, str):
        if gamma != "scale":
            raise ValueError(f"gamma must be 'scale' or a positive float, got {gamma!r}.")
        if variance is None:
            raise ValueError("gamma='scale' needs the variance of X.")
        return 1.0 / (n_features * variance) if variance > 0 else 1.0
    if not isinstance(gamma, numbers.Real) or not gamma > 0:
        raise ValueError(f"gamma must be 'scale' or a positive float, got {gamma!r}.")
    return float(gamma)


def variance_from_moments(total, total_sq, count):
    """Variance of all entries from their sum, sum of squares and count."""
    mean = total / count
    return max(total_sq / count - mean * mean, 0.0)



#: values per block of :meth:`RandomFourierBasis.transform_chunks`
CHUNK_VALUES = 2**21


class RandomFourierBasis:
    """A seeded, infinite family of random Fourier features.

    Parameters
    ----------
    seed : int
        Shared seed: every party holding it draws the same features.

    kernel : {"rbf", "laplacian"}, default="rbf"

    gamma : float, default=1.0

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.metrics.pairwise import rbf_kernel
    >>> from skfed.kernel_approximation import RandomFourierBasis
    >>> X = np.random.RandomState(0).normal(size=(5, 3))
    >>> basis = RandomFourierBasis(seed=1, gamma=0.5)
    >>> Z = basis.transform(X, range(20000))
    >>> bool(np.abs(Z @ Z.T / 20000 - rbf_kernel(X, gamma=0.5)).max() < 0.05)
    True
    """

    def __init__(self, seed, kernel="rbf", gamma=1.0):
        self.seed = int(seed)
        self.kernel = kernel
        self.gamma = gamma

    def directions(self, columns, feature_ids):
        """``omega[columns][:, feature_ids]``; see :func:`spectral_directions`."""
        return spectral_directions(self.seed, columns, feature_ids, self.kernel,
                                   self.gamma)

    def offsets(self, feature_ids):
        """The phases ``b`` of the given features."""
        return random_offsets(self.seed, feature_ids)

    def projection(self, X_block, columns, feature_ids):
        """A party's share ``X[:, G] @ omega[G]`` of ``omega^T x``."""
        return X_block @ self.directions(columns, feature_ids)

    def transform(self, X, feature_ids, columns=None):
        """``sqrt(2) cos(omega^T x + b)`` for all columns held locally.

        Without ``columns``, ``X`` holds every column (centralized use).
        """
        if columns is None:
            columns = np.arange(X.shape[1])
        return np.sqrt(2.0) * np.cos(
            self.projection(X, columns, feature_ids) + self.offsets(feature_ids))

    def transform_chunks(self, X, feature_ids, chunk_rows=None, out=None,
                         scale=1.0):
        """:meth:`transform` (times ``scale``) by blocks of rows, in place.

        Yields ``(rows, block)`` per block of at most ``chunk_rows`` rows
        (default: about 2 million values), ``block`` a view of ``out`` when
        given (an ``(n_samples, n_features)`` array, filled in place), else
        a buffer reused by the next block: the memory beyond ``out`` is one
        block, whatever the number of rows.
        """
        feature_ids = np.asarray(feature_ids)
        W = self.directions(np.arange(X.shape[1]), feature_ids)
        b = self.offsets(feature_ids)
        n, width = X.shape[0], len(feature_ids)
        if chunk_rows is None:
            chunk_rows = max(1, CHUNK_VALUES // max(1, width))
        buffer = None
        for start in range(0, n, chunk_rows):
            rows = slice(start, min(start + chunk_rows, n))
            if out is not None:
                block = out[rows]
                block[...] = X[rows] @ W
            else:
                size = rows.stop - rows.start
                if buffer is None or len(buffer) < size:
                    buffer = np.empty((min(chunk_rows, n), width))
                block = buffer[:size]
                if hasattr(X, "tocsr"):  # sparse rows: their product is dense
                    block[...] = X[rows] @ W
                else:
                    np.matmul(X[rows], W, out=block)
            block += b
            np.cos(block, out=block)
            block *= np.sqrt(2.0) * scale
            yield rows, block
