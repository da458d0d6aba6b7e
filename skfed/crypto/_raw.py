"""Raw ciphertext arithmetic on numpy object arrays of mpz.

Elementwise modular operations with numpy broadcasting, written as list
comprehensions over flattened arrays: numpy's object ufuncs would convert a
scalar mpz modulus to a Python int and back on every call.
"""

import numbers

import gmpy2
import numpy as np

__all__ = [
    "add_plain",
    "as_object",
    "elementwise",
    "max_abs",
    "mulmod",
    "object_array",
    "plain_operand",
    "powmod",
]


def max_abs(mantissas):
    """Largest ``|m|`` of an array of Python ints (0 if empty)."""
    return max((abs(int(m)) for m in np.asarray(mantissas).ravel().tolist()), default=0)


def object_array(items, shape):
    """Object ndarray of ``shape`` holding ``items`` as they are.

    (``np.array`` would turn mpz into int64 or Python ints.) Built with
    ``np.fromiter``: assigning a list of mpz to an object array's slice
    costs about 1 us per item (numpy asks each item whether it is a
    sequence), ``np.fromiter`` 0.01 us (1,000 2048-bit mpz: 1,065 against
    9 us).
    """
    return np.fromiter(items, dtype=object, count=len(items)).reshape(shape)


def as_object(result, shape):
    """``result`` as an object ndarray (a bare mpz becomes a 0-d array)."""
    if isinstance(result, np.ndarray):
        return result
    return object_array([result], shape)


def elementwise(func, *arrays):
    """``func`` applied elementwise to broadcast object arrays (numpy rules).

    A plain list comprehension: the moduli stay bound in ``func`` as mpz
    (numpy would turn a scalar mpz operand into a Python int, converted back
    on every call).
    """
    arrays = np.broadcast_arrays(*[
        a if isinstance(a, np.ndarray) else np.asarray(a, dtype=object)
        for a in arrays
    ])
    lists = [a.ravel().tolist() for a in arrays]
    return object_array([func(*xs) for xs in zip(*lists)], arrays[0].shape)


def mulmod(a, b, m):
    """``a * b mod m`` elementwise: homomorphic addition."""
    return elementwise(lambda x, y: x * y % m, a, b)


def powmod(a, k, m):
    """``a**k mod m`` elementwise: multiplication by plaintext integers.

    gmpy2.powmod inverts modulo ``m`` for negative ``k`` (negation).
    """
    return elementwise(lambda x, e: gmpy2.powmod(x, e, m), a, k)


def add_plain(c, mantissas, n, nsquare):
    """``E(a) * g**m mod n**2`` elementwise: addition of plaintext mantissas.

    With ``g**m = 1 + m n``: ``(1 + m n) c = c + n (m c mod n) mod n**2``, one
    product modulo ``n`` instead of an exponentiation.
    """
    return elementwise(lambda x, m: (x + n * (m * x % n)) % nsquare, c, mantissas)


def plain_operand(other, allow_big_ints=False):
    """A plaintext operand as a numeric ndarray (TypeError otherwise)."""
    other = np.asarray(other)
    if allow_big_ints and other.dtype == object and all(
        isinstance(v, numbers.Integral) for v in other.ravel().tolist()
    ):
        return other  # Python ints beyond int64, kept exact
    if other.dtype.kind == "b":
        other = other.astype(np.int64)
    if other.dtype.kind not in "iuf":
        raise TypeError(
            "EncryptedArray operands must be EncryptedArrays or numeric arrays, "
            f"got dtype {other.dtype}."
        )
    return other
