"""Which Paillier and Okamoto-Uchiyama key sizes skfed accepts.

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

Okamoto-Uchiyama (``n = p**2 q``, ``p`` and ``q`` of ``k / 3`` bits) has its
own estimate. It falls if ``n`` is factored, by either of two routes:

- the number field sieve on ``n`` itself, which does not care that ``p``
  is repeated: as hard as an RSA modulus of ``k`` bits;
- the elliptic curve method, whose cost grows with the *smallest* factor
  ``p`` (``L_p[1/2, sqrt 2]``), here ``k / 3`` bits: the same situation as
  three-prime RSA. Lenstra (2001, "Unbelievable security", ASIACRYPT,
  LNCS 2248) and Hinek (2008, "On the security of multi-prime RSA",
  J. Mathematical Cryptology 2(2)) find that with up to three primes ECM
  is no faster than NFS for moduli of 1024 bits and more (four primes from
  4096 bits). At 2048 bits ECM must find a 682-bit ``p``, about ``2**110``
  operations, against ``2**112`` for NFS; at 1024 bits a 341-bit ``p``
  (the ECM record is a 274-bit factor), about ``2**73`` to ``2**80``.
- Lattice factoring of ``p**r q`` (Boneh, Durfee and Howgrave-Graham,
  CRYPTO '99, LNCS 1666) runs in polynomial time only when ``r`` is about
  ``log p``; for ``r = 2`` it is slower than ECM (and Coron, Faugere,
  Renault and Zeitoun, PKC 2016, do not change this for ``r = 2``).

Semantic security needs, besides hard factoring, the p-subgroup assumption
(Okamoto and Uchiyama 1998) and, for skfed's 256-bit random exponents, a
short-exponent assumption like DJN's (:mod:`skfed.crypto._ou`). Hence the
same thresholds as Paillier, for OU's own reasons:
``key_size >= 2048`` silent (~110-112-bit), ``[1024, 2048)`` warned
(~80-bit at 1024, decided by ECM on ``p``), below 1024 refused without the
opt-in (``p`` under 341 bits is within a few hundred times the ECM
record's effort). SecretFlow (HEU) uses 2048-bit OU keys by default.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import multiprocessing
import numbers
import sys
import warnings

from .._config import get_config
from .._stacklevel import user_stacklevel

__all__ = ["InsecureKeyWarning", "check_key_size", "warn_insecure",
           "MIN_KEY_SIZE", "RECOMMENDED_KEY_SIZE"]

#: Smallest key accepted without the explicit opt-in.
MIN_KEY_SIZE = 1024
#: Smallest key accepted without a warning (about 112-bit security).
RECOMMENDED_KEY_SIZE = 2048
#: The same two thresholds for Okamoto-Uchiyama ``n = p**2 q`` (see above:
#: ECM on the ``key_size / 3``-bit ``p`` is then no faster than NFS on ``n``).
OU_MIN_KEY_SIZE = 1024
OU_RECOMMENDED_KEY_SIZE = 2048
_POLICY = {"paillier": ("Paillier", MIN_KEY_SIZE, RECOMMENDED_KEY_SIZE,
                        "modulus can be factored"),
           "ou": ("Okamoto-Uchiyama", OU_MIN_KEY_SIZE, OU_RECOMMENDED_KEY_SIZE,
                  "modulus p**2 q can be factored (ECM finds its key_size/3-bit p)")}


class InsecureKeyWarning(UserWarning):
    """A Paillier or Okamoto-Uchiyama key shorter than 2048 bits was generated.

    The message names the key size. Filter it (for example
    ``warnings.simplefilter("ignore", InsecureKeyWarning)``) in tests and
    teaching code that use small keys on purpose.
    """


def check_key_size(key_size, stacklevel=2, scheme="paillier", warn=True):
    """Apply skfed's key policy to a modulus of ``key_size`` bits.

    Parameters
    ----------
    key_size : int
        Bit length of the modulus ``n``.
    stacklevel : int, default=2
        Where the warning points (2: the caller of this function) when no
        frame outside skfed, scikit-learn, joblib and the standard library
        calls it; otherwise it points at that frame, the user's line.
    scheme : {"paillier", "ou"}, default="paillier"
        Whose policy (see the module docstring for OU's estimate).
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
    name, minimum, recommended, weakness = _POLICY[scheme]
    if key_size >= recommended:
        return key_size
    if key_size < minimum and not get_config()["allow_insecure_keys"]:
        raise ValueError(
            f"key_size={key_size} is refused: a {key_size}-bit {name} "
            f"{weakness}, which reveals every ciphertext. Use "
            f"key_size={recommended} or more (at least "
            f"{minimum}, with a warning). Tests and teaching code may "
            "opt in with skfed.set_config(allow_insecure_keys=True) or the "
            "environment variable SKFED_ALLOW_INSECURE_KEYS=1."
        )
    if not warn:
        return key_size
    strength = "about 80-bit" if key_size >= minimum else "less than 80-bit"
    source = "NIST SP 800-57" if scheme == "paillier" else "ECM on p, NFS on n"
    warn_insecure(
        f"A {key_size}-bit {name} key gives {strength} security ({source}), "
        f"below the {recommended} bits (112-bit security) "
        "private data needs; use it for tests and teaching only.",
        stacklevel=stacklevel,
    )
    return key_size


#: What this worker process has shown (see :func:`warn_insecure`).
_shown_in_worker = set()


def _filter_action(text, category, module, lineno):
    """The action the warning filters give this warning (as ``warnings`` does)."""
    filters = getattr(warnings, "_get_filters", None)
    for action, msg, cat, mod, ln in (filters() if filters else warnings.filters):
        if ((msg is None or msg.match(text)) and issubclass(category, cat)
                and (mod is None or mod.match(module)) and ln in (0, lineno)):
            return action
    return warnings.defaultaction


def warn_insecure(message, stacklevel=1):
    """``warnings.warn(message, InsecureKeyWarning, stacklevel)``, shown once
    per line in a worker process, as Python's filters promise.

    Python's ``"default"`` action shows a warning once per line that issued
    it (``"module"``: once per module, ``"once"``: once), remembering what it
    showed until the filters change. In a joblib worker (``GridSearchCV``,
    ``cross_validate`` with ``n_jobs``) scikit-learn re-installs the
    caller's filters around every task, which makes Python forget: every
    fit in the worker would print the same warning again. In a child
    process skfed keeps that memory itself, so a grid search shows a key
    warning at most once per worker (and once for the refit in the
    caller). The caller's filters still decide: ``"ignore"`` hides it
    everywhere, ``"always"`` and ``"error"`` apply to every fit.

    The warning points at the user's line: the first frame outside skfed,
    scikit-learn, joblib and the standard library
    (:func:`~skfed._stacklevel.user_stacklevel`), so a fit inside a
    ``Pipeline`` or a search names the line that called it. ``stacklevel``
    (counted from the caller of this function, as for
    :func:`warnings.warn`) is used only where no such frame exists, as in
    a joblib worker process.
    """
    # + 1: this function's own frame
    stacklevel = user_stacklevel(fallback=stacklevel + 1)
    if multiprocessing.parent_process() is not None:
        try:
            frame = sys._getframe(stacklevel - 1)
        except ValueError:  # fewer frames than stacklevel: warnings says sys
            frame = None
        if frame is not None:
            module = frame.f_globals.get("__name__", "<string>")
            where = (frame.f_code.co_filename, frame.f_lineno)
            action = _filter_action(message, InsecureKeyWarning, module,
                                    frame.f_lineno)
            key = {"default": (message, *where), "module": (message, module),
                   "once": (message,)}.get(action)
            if key is not None:
                if key in _shown_in_worker:
                    return
                _shown_in_worker.add(key)
    warnings.warn(message, InsecureKeyWarning, stacklevel=stacklevel)
