"""Fixed-base exponentiation of a whole batch: ``b**e mod m`` for many ``e``.

With a table of ``b**(d * 2**(w i)) mod m`` for every ``w``-bit digit ``d``
and digit position ``i``, ``b**e`` is the product of one table entry per
digit of ``e``: ``ceil(bits(e) / w)`` modular products and no squarings.
The batch goes through the table row by row (one digit position at a time
for every exponent), so a row's entries stay in cache while the batch uses
them. Digits are cut from the exponents' little-endian bytes with numpy.

Used by Okamoto-Uchiyama (:mod:`skfed.crypto._ou`) for ``G**m`` and
``H**r``; the key owner's Paillier obfuscators
(:class:`~skfed.crypto._obfuscation.CRTDJNObfuscator`) cut their digits with
:func:`window_digits` too.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import secrets
import threading

import gmpy2
import numpy as np

from ._parallel import releasing_gil

__all__ = ["FixedBase", "window_digits"]


def window_digits(raw, count, n_bytes, window_bits, n_rows):
    """``window_bits``-bit digits of ``count`` little-endian exponents, by position.

    Parameters
    ----------
    raw : bytes
        ``count * n_bytes`` bytes; exponent ``k`` is
        ``int.from_bytes(raw[k n_bytes:(k + 1) n_bytes], "little")``.
    count, n_bytes, window_bits, n_rows : int
        ``n_rows * window_bits >= 8 * n_bytes`` (missing top bits are 0).

    Returns
    -------
    columns : list of lists of int
        ``columns[i][k]``: digit ``i`` (weight ``2**(w i)``) of exponent ``k``.
    """
    w = window_bits
    bits = np.unpackbits(
        np.frombuffer(raw, dtype=np.uint8).reshape(count, n_bytes),
        axis=1, bitorder="little")
    pad = n_rows * w - 8 * n_bytes
    if pad > 0:
        bits = np.concatenate([bits, np.zeros((count, pad), np.uint8)], axis=1)
    elif pad < 0:
        bits = bits[:, :n_rows * w]
    weights = 1 << np.arange(w, dtype=np.int64)
    return (bits.reshape(count, n_rows, w) @ weights).T.tolist()


class FixedBase:
    """``base**e mod modulus`` for batches of exponents below ``2**exponent_bits``.

    Parameters
    ----------
    base, modulus : int
    exponent_bits : int
        Largest exponent length the table serves.
    window_bits : int, default=8
        Digit width; memory is ``ceil(exponent_bits / w) * 2**w`` numbers of
        ``bits(modulus)`` bits (built on first use, in the calling thread).
    """

    def __init__(self, base, modulus, exponent_bits, window_bits=8):
        self.modulus = gmpy2.mpz(modulus)
        self.base = gmpy2.mpz(base) % self.modulus
        self.exponent_bits = int(exponent_bits)
        self.window_bits = int(window_bits)
        self.n_rows = -(-self.exponent_bits // self.window_bits)
        self._table = None
        self._lock = threading.Lock()

    def __getstate__(self):
        # Tables are rebuilt where needed, never pickled.
        return {"base": self.base, "modulus": self.modulus,
                "exponent_bits": self.exponent_bits, "window_bits": self.window_bits}

    def __setstate__(self, state):
        self.__init__(state["base"], state["modulus"], state["exponent_bits"],
                      state["window_bits"])

    def _build(self):
        w, modulus = self.window_bits, self.modulus
        rows, base = [], self.base
        for _ in range(self.n_rows):
            row = [gmpy2.mpz(1), base]
            for _ in range((1 << w) - 2):
                row.append(row[-1] * base % modulus)
            rows.append(row)
            base = row[-1] * base % modulus  # base**(2**(w (i + 1)))
        return rows

    @property
    def table(self):
        if self._table is None:
            with self._lock:
                if self._table is None:
                    with releasing_gil():
                        self._table = self._build()
        return self._table

    def powers_from_bytes(self, raw, n_bytes):
        """``base**e`` for the exponents packed in ``raw`` (``n_bytes`` each)."""
        count = len(raw) // n_bytes
        if count == 0:
            return []
        return self.powers_from_columns(self.columns(raw, n_bytes))

    def columns(self, raw, n_bytes):
        """The digit columns of the exponents in ``raw`` (:func:`window_digits`)."""
        n_rows = min(self.n_rows, -(-8 * n_bytes // self.window_bits))
        return window_digits(raw, len(raw) // n_bytes, n_bytes, self.window_bits,
                             n_rows)

    def powers_from_columns(self, columns):
        """``base**e`` from the digit columns of the exponents (see :meth:`columns`).

        Tables with the same ``window_bits`` and length share columns: the key
        owner cuts each exponent into digits once for both CRT halves.
        """
        table, modulus = self.table, self.modulus
        acc = [table[0][d] for d in columns[0]]
        for row, column in zip(table[1:len(columns)], columns[1:]):
            acc = [a * row[d] % modulus if d else a for a, d in zip(acc, column)]
        return acc

    def powers(self, exponents):
        """``base**e mod modulus`` for non-negative ints ``e < 2**exponent_bits``."""
        exponents = [int(e) for e in exponents]
        if not exponents:
            return []
        longest = max(e.bit_length() for e in exponents)
        if longest > self.exponent_bits:
            raise ValueError(f"an exponent of {longest} bits exceeds the table's "
                             f"{self.exponent_bits} bits.")
        return self.powers_from_columns(self.exponent_columns(exponents))

    def exponent_columns(self, exponents):
        """Digit columns of non-negative ints (all below ``2**exponent_bits``)."""
        longest = max(e.bit_length() for e in exponents)
        n_bytes = max(1, -(-longest // 8))
        raw = b"".join(e.to_bytes(n_bytes, "little") for e in exponents)
        return self.columns(raw, n_bytes)

    def random_powers(self, count, exponent_bytes):
        """``count`` fresh ``base**a``, ``a`` of ``8 exponent_bytes`` bits from :mod:`secrets`."""
        return self.powers_from_bytes(secrets.token_bytes(count * exponent_bytes),
                                      exponent_bytes)
