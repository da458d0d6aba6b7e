"""Paillier and Okamoto-Uchiyama encryption of whole numpy arrays.

Keys
    :func:`generate_keypair` ``(key_size=2048, plaintext=False,
    scheme="paillier")`` returns ``(public_key, private_key)`` from the
    operating system's cryptographic generator (never from ``random_state``).
    ``scheme="ou"`` gives Okamoto-Uchiyama keys (``n = p**2 q``; ciphertexts
    half the size, encryption about an order of magnitude faster, plaintexts
    below about ``2**(key_size / 3)``) whose arrays have the same interface;
    protocol code only passes the scheme along. Keys below 2048 bits warn
    (:class:`InsecureKeyWarning`), below 1024 bits they are refused unless
    ``skfed.set_config(allow_insecure_keys=True)`` (:func:`check_key_size`).
    ``plaintext=True`` returns keys
    whose arrays are plain numpy values behind the same interface
    (:class:`PlaintextArray`), so protocol code runs unchanged without
    encryption (teaching, lossless comparisons).

Encrypting
    ``public_key.encrypt(values, precision=None, n_jobs=None)`` returns an
    :class:`EncryptedArray` of the same shape; floats share one fixed-point
    exponent (53 significant bits of the largest magnitude by default),
    integers are exact. ``private_key.decrypt(encrypted, n_jobs=None)``
    returns float64 (int64 for integer arrays).

Operations
    ``+``/``-`` (encrypted or plaintext), ``*`` and ``/`` by plaintexts,
    ``sum(axis)``, ``group_sum(group_ids, n_groups)`` (histograms; 2-D ids give
    one histogram per feature), indexing, :func:`concatenate`,
    ``rerandomize()`` (fresh obfuscation for everything that leaves a party).

Packing
    :class:`PackedEncoder` and ``public_key.encrypt_packed(values, encoder)``
    put several bounded values (e.g. a gradient and a hessian) in one
    plaintext with slots that cannot overflow for up to ``max_summands``
    summands; ``decrypt`` unpacks to shape ``(..., n_slots)``.

Messages
    Arrays pickle as raw fixed-width integers plus exponent and ``n``, and
    report ``__message_size__() == (n_scalars, n_ciphertexts, n_bytes)``.

Security and speed
    Obfuscators use the Damgard-Jurik-Nielsen short-exponent variant with a
    fixed-base table by default (``obfuscation="djn"``, ~15x cheaper than
    ``r**n`` at 2048 bits; assumption stated in
    :mod:`skfed.crypto._obfuscation`), or the standard ``r**n``
    (``obfuscation="standard"``, DCR only). Work is spread over ``n_jobs``
    threads with gmpy2 releasing the GIL. The key owner encrypts faster
    (``private_key.encrypt``: obfuscators modulo ``p**2`` and ``q**2``) and
    can have the next encryption's obfuscators computed while it waits
    (``private_key.precompute_obfuscators(count)``: a lowest-priority forked
    worker; each obfuscator is fresh and used once). The OU key owner
    encrypts long (packed) plaintexts modulo ``p**2`` and ``q``
    (:mod:`skfed.crypto._ou_crt`, the same ciphertexts). ``group_sum`` with one
    id column per feature shares row products between features (a joint
    histogram per group of features, then one product per cell).

Building blocks
    Protocol code that works on raw ciphertexts uses the same pieces as the
    arrays: :func:`object_array` (an object array of ``mpz``),
    :func:`raw_group_sum` and :func:`feature_groups` (grouped products),
    :func:`parallel_map`, :func:`parallel_tasks`, :func:`effective_n_jobs`
    and :func:`fork_available` (the worker threads and forked processes),
    and :func:`warn_insecure` (a key-policy warning, shown once per line).

Examples
--------
>>> import numpy as np
>>> from skfed.crypto import PackedEncoder, generate_keypair
>>> public_key, private_key = generate_keypair(key_size=512)
>>> gradients = public_key.encrypt(np.array([0.5, -0.25, 1.0, 2.0]))
>>> histogram = gradients.group_sum(np.array([0, 1, 0, 1]), n_groups=2)
>>> private_key.decrypt(histogram.rerandomize())
array([1.5 , 1.75])
>>> encoder = PackedEncoder(bounds=[1.0, 0.25], max_summands=4)
>>> gh = public_key.encrypt_packed(np.array([[0.5, 0.25], [-1.0, 0.125]]), encoder)
>>> private_key.decrypt(gh.sum())
array([-0.5  ,  0.375])
"""

from ._array import EncryptedArray, concatenate
from ._group_sum import feature_groups, raw_group_sum
from ._key_policy import InsecureKeyWarning, check_key_size, warn_insecure
from ._ou import OUPrivateKey, OUPublicKey
from ._parallel import effective_n_jobs, fork_available, parallel_map, parallel_tasks
from ._plaintext import PlaintextArray, PlaintextPrivateKey, PlaintextPublicKey
from ._raw import object_array
from ._scheme import plaintext_bits
from .encoding import PackedEncoder
from .paillier import PaillierPrivateKey, PaillierPublicKey, generate_keypair

__all__ = [
    "EncryptedArray",
    "InsecureKeyWarning",
    "OUPrivateKey",
    "OUPublicKey",
    "PackedEncoder",
    "PaillierPrivateKey",
    "PaillierPublicKey",
    "PlaintextArray",
    "PlaintextPrivateKey",
    "PlaintextPublicKey",
    "check_key_size",
    "concatenate",
    "effective_n_jobs",
    "feature_groups",
    "fork_available",
    "generate_keypair",
    "object_array",
    "parallel_map",
    "parallel_tasks",
    "plaintext_bits",
    "raw_group_sum",
    "warn_insecure",
]
