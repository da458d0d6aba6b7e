"""The groups of Diffie-Hellman PSI: safe primes, hashing ids into them,
exponents, and the security policy they meet."""

import gmpy2
import numpy as np
import pytest

import skfed
from skfed.alignment import GROUPS, DHGroup, private_set_intersection
from skfed.crypto import InsecureKeyWarning

from .conftest import TEST_PRIME_512


@pytest.mark.parametrize("name, bits", [("modp2048", 2048), ("modp3072", 3072)])
def test_named_groups_are_safe_primes_of_their_size(name, bits):
    group = GROUPS[name]
    assert group.bits == bits
    assert gmpy2.is_prime(group.p, 30) and gmpy2.is_prime(group.q, 30)
    # RFC 3526 primes start and end with 64 one bits.
    assert group.p >> (bits - 64) == 2**64 - 1 and group.p % 2**64 == 2**64 - 1


def test_dhgroup_rejects_numbers_that_are_not_safe_primes():
    with pytest.raises(ValueError, match="safe prime"):
        DHGroup(2**127 - 1)  # prime, but (p - 1) / 2 is not
    with pytest.raises(ValueError, match="safe prime"):
        DHGroup(TEST_PRIME_512 + 2)
    with pytest.raises(ValueError, match="not a known group"):
        private_set_intersection([[1], [1]], group="modp1024")


def test_hash_lands_in_the_prime_order_subgroup(small_group):
    ids = [0, 1, 2**80, "0", "1", "", "ünïcode", b"raw"]
    hashed = small_group.hash_ids(ids)
    p, q = small_group.p, small_group.q
    assert all(1 < h < p and gmpy2.powmod(h, q, p) == 1 for h in hashed)
    assert len(set(hashed)) == len(ids)  # 1 and "1" hash apart
    # Deterministic, and numpy integers hash like Python integers.
    assert small_group.hash_ids([np.int64(1), 1]) == [hashed[1], hashed[1]]
    # Another group name separates the hashes even for the same prime.
    other = DHGroup(TEST_PRIME_512, "other")
    assert other.hash_ids([1]) != small_group.hash_ids([1])


def test_hash_outputs_look_uniform_over_the_subgroup(small_group):
    # A squared uniform element is a quadratic residue; its top bits spread
    # evenly: the mean of h / p over many ids is close to 1/2.
    hashed = small_group.hash_ids(range(2000))
    ratios = np.array([float(h) / float(small_group.p) for h in hashed])
    assert abs(ratios.mean() - 0.5) < 0.03
    assert 0.15 < ratios.std() < 0.45


def test_random_exponent_lengths(small_group):
    keys = [small_group.random_exponent(128) for _ in range(50)]
    assert all(k.bit_length() == 128 for k in keys) and len(set(keys)) == 50
    full = [small_group.random_exponent(None) for _ in range(50)]
    assert all(1 <= k < small_group.q for k in full)
    assert max(k.bit_length() for k in full) > 500


@pytest.mark.parametrize("name, strength", [("modp2048", 112), ("modp3072", 128),
                                            ("curve25519", 128)])
def test_security_strength_of_the_named_groups(name, strength, small_group):
    assert GROUPS[name].security_bits == strength
    assert small_group.security_bits == 0  # below NIST's 1024-bit row


def test_groups_below_128_bit_security_are_refused():
    with skfed.config_context(allow_insecure_keys=False):
        with pytest.raises(ValueError, match=r"'modp2048' gives about 112-bit "
                           r"security.*Use group='curve25519'.*'modp3072'"):
            private_set_intersection([[1, 2], [2, 3]], group="modp2048")
        with pytest.raises(ValueError, match=r"'test512' gives less than "
                           r"80-bit security.*allow_insecure_keys=True"):
            private_set_intersection([[1, 2], [2, 3]],
                                     group=DHGroup(TEST_PRIME_512, "test512"))
        with pytest.raises(ValueError, match=r"exponent_bits=224 gives about "
                           r"112-bit security.*exponent_bits=256"):
            private_set_intersection([[1, 2], [2, 3]], exponent_bits=224,
                                     group="modp3072")


def test_opting_in_allows_the_2048_bit_group_but_never_tiny_exponents():
    with skfed.config_context(allow_insecure_keys=True):
        with pytest.warns(InsecureKeyWarning, match=r"'modp2048'.*112-bit.*"
                          r"exponent_bits=160 gives about 80-bit"):
            assert private_set_intersection([[1, 2], [2, 3]], group="modp2048",
                                            exponent_bits=160) == [2]
        with pytest.raises(ValueError, match="too short"):
            private_set_intersection([[1, 2], [2, 3]], exponent_bits=127)
