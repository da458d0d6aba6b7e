"""Which Paillier key sizes skfed accepts.

A Paillier key is as strong as its modulus ``n`` is hard to factor. NIST SP
800-57 Part 1 (Rev. 5, Table 2) rates a 2048-bit modulus at 112-bit security
and a 1024-bit one at 80 bits, no longer acceptable; factoring records
passed 800 bits in 2020 (RSA-250), so keys of a few hundred bits fall to
anyone with a laptop. Hence:

- ``key_size >= 2048``: accepted silently;
- ``1024 <= key_size < 2048``: accepted with an :class:`InsecureKeyWarning`
  (fast, and fine for teaching, but not for private data);
- ``key_size < 1024``: refused with a ``ValueError`` unless the caller opts
  in with ``skfed.set_config(allow_insecure_keys=True)`` (or the environment
  variable ``SKFED_ALLOW_INSECURE_KEYS=1``), which the test suite does to
  stay fast; the warning is still issued.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers
import warnings

from .._config import get_config

__all__ = ["InsecureKeyWarning", "check_key_size", "MIN_KEY_SIZE",
           "RECOMMENDED_KEY_SIZE"]

#: Smallest key accepted without the explicit opt-in.
MIN_KEY_SIZE = 1024
#: Smallest key accepted without a warning (about 112-bit security).
RECOMMENDED_KEY_SIZE = 2048


class InsecureKeyWarning(UserWarning):
    """A Paillier key shorter than 2048 bits was generated.

    The message names the key size. Filter it (for example
    ``warnings.simplefilter("ignore", InsecureKeyWarning)``) in tests and
    teaching code that use small keys on purpose.
    """


def check_key_size(key_size, stacklevel=2, warn=True):
    """Apply skfed's key policy to a Paillier modulus of ``key_size`` bits.

    Parameters
    ----------
    key_size : int
        Bit length of the modulus ``n``.
    stacklevel : int, default=2
        Passed to :func:`warnings.warn` (2: the caller of this function).
    warn : bool, default=True
        ``False`` skips the warning (not the refusal): for keys made inside
        a fit whose estimator has already warned its caller.

    Returns
    -------
    key_size : int

    Raises
    ------
    ValueError
        Below 1024 bits, unless ``skfed.get_config()["allow_insecure_keys"]``.

    Warns
    -----
    InsecureKeyWarning
        Below 2048 bits.

    Examples
    --------
    >>> import warnings
    >>> from skfed.crypto import InsecureKeyWarning, check_key_size
    >>> check_key_size(2048)
    2048
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = check_key_size(1024)
    >>> print(caught[0].message)  # doctest: +ELLIPSIS
    A 1024-bit Paillier key gives about 80-bit security...
    """
    if isinstance(key_size, bool) or not isinstance(key_size, numbers.Integral):
        raise TypeError(f"key_size must be an int, got {key_size!r}.")
    key_size = int(key_size)
    if key_size >= RECOMMENDED_KEY_SIZE:
        return key_size
    if key_size < MIN_KEY_SIZE and not get_config()["allow_insecure_keys"]:
        raise ValueError(
            f"key_size={key_size} is refused: a {key_size}-bit Paillier "
            "modulus can be factored, which reveals every ciphertext. Use "
            f"key_size={RECOMMENDED_KEY_SIZE} or more (at least "
            f"{MIN_KEY_SIZE}, with a warning). Tests and teaching code may "
            "opt in with skfed.set_config(allow_insecure_keys=True) or the "
            "environment variable SKFED_ALLOW_INSECURE_KEYS=1."
        )
    if not warn:
        return key_size
    strength = "about 80-bit" if key_size >= MIN_KEY_SIZE else "less than 80-bit"
    warnings.warn(
        f"A {key_size}-bit Paillier key gives {strength} security (NIST SP "
        f"800-57), below the {RECOMMENDED_KEY_SIZE} bits (112-bit security) "
        "private data needs; use it for tests and teaching only.",
        InsecureKeyWarning, stacklevel=stacklevel,
    )
    return key_size
