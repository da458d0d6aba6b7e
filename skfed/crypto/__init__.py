"""Paillier encryption of whole numpy arrays.

Keys, vectorised encryption/decryption, homomorphic operations on
:class:`EncryptedArray` (add, subtract, multiply by plaintexts, sums, grouped
sums), packing of several values per plaintext, and a plaintext mode with the
same interface.

>>> import numpy as np
>>> from skfed.crypto import generate_keypair
>>> public_key, private_key = generate_keypair(key_size=512)
>>> gradients = public_key.encrypt(np.array([0.5, -0.25, 1.0, 2.0]))
>>> histogram = gradients.group_sum(np.array([0, 1, 0, 1]), n_groups=2)
>>> private_key.decrypt(histogram.rerandomize())
array([1.5 , 1.75])
"""

from ._array import EncryptedArray, concatenate
from ._plaintext import PlaintextArray, PlaintextPrivateKey, PlaintextPublicKey
from .encoding import PackedEncoder
from .paillier import PaillierPrivateKey, PaillierPublicKey, generate_keypair

__all__ = [
    "EncryptedArray",
    "PackedEncoder",
    "PaillierPrivateKey",
    "PaillierPublicKey",
    "PlaintextArray",
    "PlaintextPrivateKey",
    "PlaintextPublicKey",
    "concatenate",
    "generate_keypair",
]
