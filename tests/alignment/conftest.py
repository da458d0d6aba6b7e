import warnings

import pytest

import skfed
from skfed.alignment import DHGroup
from skfed.crypto import InsecureKeyWarning

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


@pytest.fixture(autouse=True)
def _small_groups_allowed():
    """The tests run the protocol in the 512-bit test group, far below the
    128-bit security PSI requires; they opt in explicitly (tests that check
    the refusal or the warning switch it off or catch it again)."""
    with skfed.config_context(allow_insecure_keys=True), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureKeyWarning)
        yield
