"""Plaintext mode runs the same protocol code and matches the encrypted mode."""

import numpy as np
import pytest

from skfed.crypto import PackedEncoder, PlaintextArray, concatenate, generate_keypair


def _protocol_step(public_key, x, ids):
    # Code written once against the EncryptedArray interface.
    a = public_key.encrypt(x)
    b = (a * 2 - 0.5 + a[::-1]).rerandomize()
    hist = b.group_sum(ids, 3)
    return concatenate([hist.sum(axis=0), b[:2], a.sum().reshape(1)]) / 2


@pytest.fixture(scope="module")
def plain_keys():
    return generate_keypair(key_size=512, plaintext=True)


def test_same_protocol_same_result(keypair, plain_keys):
    rng = np.random.default_rng(0)
    x = rng.normal(size=30)
    ids = rng.integers(-1, 3, size=(30, 2))
    encrypted = keypair[1].decrypt(_protocol_step(keypair[0], x, ids))
    plain_result = _protocol_step(plain_keys[0], x, ids)
    assert isinstance(plain_result, PlaintextArray)
    plain = plain_keys[1].decrypt(plain_result)
    np.testing.assert_allclose(encrypted, plain, atol=1e-12)


def test_plaintext_array_interface(plain_keys):
    public_key, private_key = plain_keys
    a = public_key.encrypt(np.array([1, 2, 3]))
    assert private_key.decrypt(a).dtype == np.int64
    assert a.shape == (3,) and len(a) == 3
    assert a.__message_size__() == (3, 0, 24)
    assert public_key.__message_size__() == (0, 0, 0)
    np.testing.assert_array_equal(private_key.decrypt(-a + 1), [0, -1, -2])
    with pytest.raises(ValueError, match="NaN"):
        public_key.encrypt(np.array([np.nan]))
    with pytest.raises(TypeError):
        a * a


def test_plaintext_packed(plain_keys):
    public_key, private_key = plain_keys
    values = np.array([[0.5, 0.1], [-0.25, 0.2], [1.0, 0.0]])
    encoder = PackedEncoder([1.0, 0.25], max_summands=100)
    packed = public_key.encrypt_packed(values, encoder)
    assert packed.shape == (3,)
    hist = packed.group_sum(np.array([[0, 1], [0, 0], [1, 1]]), 2)
    assert hist.shape == (2, 2)
    np.testing.assert_allclose(
        private_key.decrypt(hist),
        [[values[:2].sum(0), values[2]], [values[1], values[[0, 2]].sum(0)]],
    )
    rest = private_key.decrypt(packed.sum() - packed[:1].sum())
    np.testing.assert_allclose(rest, values[1:].sum(0))
    np.testing.assert_allclose(private_key.decrypt(packed * 2), 2 * values)
    with pytest.raises(ValueError, match="bound"):
        public_key.encrypt_packed(values * 4, encoder)
