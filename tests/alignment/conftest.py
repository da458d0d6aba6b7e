import pytest

from skfed.alignment import DHGroup

# A 512-bit safe prime generated once for these tests (gmpy2.next_prime on
# random 511-bit q until 2q + 1 was prime too). FOR TESTS ONLY: 512-bit
# discrete logarithms are within reach of an academic attacker; the library's
# groups are the RFC 3526 ones (2048 bits by default).
TEST_PRIME_512 = int(
    "AAAB14E691A18512F818947BA61DD3A7394E25BFBF39405A39D8C707877433D8"
    "92CFD6699C855AA9D8E040D978970CBD765FB7E1590E509C0BA11A4C0EB66903", 16)


@pytest.fixture(scope="session")
def small_group():
    return DHGroup(TEST_PRIME_512, "test512")
