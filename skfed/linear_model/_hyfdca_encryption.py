"""HyFDCA's encryption helpers: the clients' packed layout and timing.

The clients share one key pair (Paillier or Okamoto-Uchiyama: the layout
reads the key's ``plaintext_bits``); every value they encrypt has a public
bound ``2**exponent`` (agreed at setup and per round, see
:mod:`._protocol`), so the fixed-point encoding keeps
:data:`PRECISION_BITS` significant bits below it, packing several values
per plaintext when asked. The time each party spends on encryption,
decryption and ciphertext additions is summed into the estimator's
``crypto_time_``. The secure sums of weight changes use a ring encoding
whose public bound :func:`weight_change_encoder` derives.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import time
from functools import reduce

import numpy as np

from ..crypto import PackedEncoder
from ..federation.secure_sum import RingEncoder

__all__ = ["PRECISION_BITS", "crypto_seconds", "slots_per_plaintext",
           "weight_change_encoder"]

#: significant bits of every fixed-point encryption below its bound: the
#: bound (a power of two) comes from the data, so the precision is relative.
PRECISION_BITS = 40


def slots_per_plaintext(public_key, summands):
    """Values of :data:`PRECISION_BITS` bits packed per plaintext of
    ``public_key`` (Paillier, OU or the plaintext stand-in) such that a sum
    of ``summands`` packed plaintexts never carries from slot to slot (the
    :class:`~skfed.crypto.PackedEncoder` layout: ``PRECISION_BITS + 1 +
    summands.bit_length()`` bits per slot). A 2048-bit key: Paillier 48
    slots for one summand, 47 for two; OU 16 and 15."""
    slot_bits = PRECISION_BITS + 1 + int(summands).bit_length()
    return int(public_key.plaintext_bits) // slot_bits


def _encoding(state, exponent, summands):
    """The fixed-point layout for values of magnitude at most
    ``2**exponent`` of which the server adds up to ``summands``."""
    if state.packing:
        n_slots = slots_per_plaintext(state.private_key.public_key, summands)
        if n_slots >= 2:
            return PackedEncoder([2.0 ** exponent] * n_slots,
                                 max_summands=summands,
                                 precision_bits=PRECISION_BITS)
    return None


def _encrypt(state, values, exponent, summands):
    """Encrypt ``values`` (bounded by ``2**exponent``; the server adds at
    most ``summands`` such arrays): as many values per ciphertext as fit in
    row-major order when packing, else one by one with the shared absolute
    precision ``2**(exponent - PRECISION_BITS)``."""
    start = time.perf_counter()
    values = np.asarray(values, dtype=np.float64)
    key = state.private_key  # the clients own the key pair (CRT encryption)
    encoder = _encoding(state, exponent, summands)
    if encoder is None:
        out = key.encrypt(values, precision=2.0 ** (exponent - PRECISION_BITS),
                          n_jobs=state.n_jobs)
    else:
        n_slots = encoder.n_slots
        flat = np.concatenate([values.ravel(),
                               np.zeros((-values.size) % n_slots)])
        out = key.encrypt_packed(flat.reshape(-1, n_slots), encoder,
                                 n_jobs=state.n_jobs)
    state.crypto_seconds += time.perf_counter() - start
    return out


def _decrypt(state, encrypted, shape):
    """Decrypt into an array of ``shape`` (undoing the packing layout)."""
    start = time.perf_counter()
    out = np.asarray(state.private_key.decrypt(encrypted, n_jobs=state.n_jobs),
                     dtype=np.float64)
    out = out.ravel()[:int(np.prod(shape))]
    state.crypto_seconds += time.perf_counter() - start
    return out.reshape(shape)


def _encrypted_sum(state, arrays):
    start = time.perf_counter()
    out = reduce(lambda a, b: a + b, arrays)
    state.crypto_seconds += time.perf_counter() - start
    return out


def crypto_seconds(state):
    """Seconds this party spent encrypting, decrypting and adding ciphertexts."""
    return state.crypto_seconds


# -- the ring encoding of the secure sums of weight changes --------------------

def weight_change_encoder(loss, lam, n_samples, largest_rows, scale, n_terms,
                          weighted=False):
    """The ring encoding of a secure sum of clients' weight changes.

    A client's part ``X_k^T (y * v) / (lambda N)`` has entries of magnitude
    at most ``n_k 2**scale A / (lambda N)`` where ``|v_i| <= A``: 1 for the
    hinge and logistic duals (in [0, 1]); for the squared hinge's unbounded
    duals the bound that the monotone dual ascent keeps (``a_i <= 2 sqrt(N)``
    since ``D >= D(0) = 0``, margins at most ``2**scale * 3 / sqrt(lambda)``).
    Every quantity is public, so the server decodes with the same encoder.

    ``weighted``: ``n_samples`` is the total weight ``S`` and the part is
    ``X_k^T (y * s * v) / (lambda S)``, whose entries are at most
    ``2**scale sum_i s_i |v_i| / (lambda S)``. The sum is at most ``S`` for
    the hinge and logistic duals; for the squared hinge ``D >= 0`` gives
    ``sum_i s_i u_i <= 2 S`` at every accepted point (Cauchy-Schwarz on
    ``sum s u^2 <= 2 sum s u``), so a momentum shift or a direction moves
    less than ``S (8 + 3 * 2**scale / sqrt(lambda))``. Both bounds need only
    the public ``S``.
    """
    if weighted:
        coefficient = (8.0 + 3.0 * 2.0 ** scale / math.sqrt(lam)
                       if loss == "squared_hinge" else 1.0)
        return RingEncoder.for_bound(2.0 ** scale * coefficient / lam,
                                     n_terms=n_terms)
    if loss == "squared_hinge":
        coefficient = (4.0 * math.sqrt(n_samples) + 1.0
                       + 3.0 * 2.0 ** scale / math.sqrt(lam))
    else:
        coefficient = 1.0
    bound = largest_rows * 2.0 ** scale * coefficient / (lam * n_samples)
    return RingEncoder.for_bound(bound, n_terms=n_terms)
