"""The OU key owner's encryption of long plaintexts, modulo ``p**2`` and ``q``.

A ciphertext is ``c = G**m H**r mod n`` (:mod:`skfed.crypto._ou`). The key
owner computes the same number from its residues modulo ``p**2`` and ``q``
(CRT), using the structure of the key (``p - 1 = t u``, ``G = g**u``,
``H = g'**(n u)``):

- modulo ``p**2``, ``G = omega (1 + p)**a`` with ``omega**t = 1`` and
  ``(1 + p)**a`` of order ``p``, so ``G**m = omega**(m mod t) (1 + (a m mod
  p) p)``; ``H`` has order dividing ``t``, so ``H**r = H**(r mod t)``. Both
  exponents have ``2 kappa`` bits (224 at 2048 bits) whatever the length of
  ``m``, and ``(1 + p)**k = 1 + k p`` costs one product;
- modulo ``q`` (a third of ``n``), ``G**(m mod (q - 1))`` and ``H**r`` with
  products three times shorter than modulo ``n``.

The result is the public path's ciphertext exactly (same ``m``, same ``r``:
tested), so the distribution and the security are unchanged; only the
arithmetic is cheaper. It pays for long (packed) plaintexts: at 2048 bits
a 672-bit plaintext (HyFDCA's 16 slots) took 101-124 us against 185-252 us
on the public tables (one core, load 15-18, 2,000 values, identical
ciphertexts), a 110-bit one 86-112 against 95-108 us (no gain: short
plaintexts keep the public tables, see :data:`CRT_MIN_BITS`). Tables: about
16 MB at 2048 bits, built in 0.1 s on first use.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import secrets

import gmpy2

from ._fixed_base import FixedBase

__all__ = ["CRT_MIN_BITS", "OUCRTEncryptor"]

#: Plaintexts of at least this many bits (the longest of a batch) go through
#: the CRT path; shorter ones through the public tables (as fast there).
CRT_MIN_BITS = 256
#: Digit width of the CRT tables.
WINDOW_BITS = 10


class OUCRTEncryptor:
    """``G**m H**r mod n`` from residues modulo ``p**2`` and ``q``.

    Parameters
    ----------
    public_key : OUPublicKey
    p, q, t : mpz
        The private key's primes and the prime ``t`` dividing ``p - 1``.
    random_bytes : int
        Bytes of the random exponent ``r`` (the public path's length).
    """

    def __init__(self, public_key, p, q, t, random_bytes):
        G, H, n = public_key.G, public_key.H, public_key.n
        psquare = p * p
        # G mod p**2 = omega (1 + p)**a: G**t = (1 + p)**(a t) = 1 + a t p.
        a = (gmpy2.powmod(G, t, psquare) - 1) // p * gmpy2.invert(t, p) % p
        omega = G * (1 - a * p) % psquare  # (1 + p)**-a = 1 - a p mod p**2
        if (gmpy2.powmod(omega, t, psquare) != 1
                or gmpy2.powmod(H, t, psquare) != 1 or psquare * q != n):
            raise ValueError("This key does not have the OU structure "
                             "(p - 1 = t u, G = g**u, H = g'**(n u)).")
        self.p, self.q, self.t, self.a = p, q, t, a
        self.psquare, self.n = psquare, n
        self.random_bytes = int(random_bytes)
        self.q_minus_1 = q - 1
        self.q_inverse = gmpy2.invert(q, psquare)  # CRT recombination
        t_bits = int(t.bit_length())
        self._omega = FixedBase(omega, psquare, t_bits, WINDOW_BITS)
        self._h_p = FixedBase(H % psquare, psquare, t_bits, WINDOW_BITS)
        self._g_q = FixedBase(G % q, q, int(q.bit_length()), WINDOW_BITS)
        self._h_q = FixedBase(H % q, q, 8 * self.random_bytes, WINDOW_BITS)

    def build(self):
        """Build the four tables now (before forking workers, say)."""
        for table in (self._omega, self._h_p, self._g_q, self._h_q):
            table.table
        return self

    def encrypt_from_bytes(self, plaintexts, raw):
        """Ciphertexts of the signed ints ``plaintexts`` with the random
        exponents in ``raw`` (``random_bytes`` little-endian bytes each, as
        the public path reads them): deterministic, for tests."""
        if not plaintexts:
            return []
        k = self.random_bytes
        r = [int.from_bytes(raw[i * k:(i + 1) * k], "little")
             for i in range(len(plaintexts))]
        p, q, t, a, psquare = self.p, self.q, self.t, self.a, self.psquare
        # modulo p**2: omega**(m mod t) H**(r mod t) (1 + (a m mod p) p)
        left = self._omega.powers([m % t for m in plaintexts])
        right = self._h_p.powers([e % t for e in r])
        c_p = [x * y % psquare * (1 + a * m % p * p) % psquare
               for x, y, m in zip(left, right, plaintexts)]
        # modulo q: G**(m mod (q - 1)) H**r
        q_minus_1 = self.q_minus_1
        gq = self._g_q.powers([m % q_minus_1 for m in plaintexts])
        hq = self._h_q.powers_from_bytes(raw, k)
        c_q = [x * y % q for x, y in zip(gq, hq)]
        q_inverse = self.q_inverse
        return [b + q * ((c - b) * q_inverse % psquare) for c, b in zip(c_p, c_q)]

    def encrypt(self, plaintexts):
        """Ciphertexts of ``plaintexts`` with fresh ``r`` from :mod:`secrets`."""
        raw = secrets.token_bytes(len(plaintexts) * self.random_bytes)
        return self.encrypt_from_bytes(plaintexts, raw)
