import pytest

from skfed.crypto import generate_keypair


@pytest.fixture(scope="session")
def keypair():
    """A small key: fast, and still large enough for a few packed slots."""
    return generate_keypair(key_size=512)


@pytest.fixture(scope="session")
def other_keypair():
    return generate_keypair(key_size=512)
