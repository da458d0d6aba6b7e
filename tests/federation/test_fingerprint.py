"""Sealed share files: the model fingerprint and the integrity digest."""

import pickle

import numpy as np
import pytest

from skfed.federation._fingerprint import new_fingerprint, open_sealed, seal


def _sealed():
    values = [np.array([[0.0, 1.5, 1.0], [1.0, -0.25, 0.0]]), b"key"]
    fingerprint = new_fingerprint()
    record, digest = seal(values, "party1", fingerprint)
    return values, fingerprint, record, digest


def test_a_sealed_share_opens_to_its_values():
    values, fingerprint, record, digest = _sealed()
    out = open_sealed(record, "p1.joblib", "party1", fingerprint, digest)
    np.testing.assert_array_equal(out[0], values[0])
    assert out[1] == b"key"
    # The digest is keyed by the party's salt: another seal of the same
    # values gives another digest, so the driver cannot test a guess.
    assert seal(values, "party1", fingerprint)[1] != digest


def test_a_share_of_another_save_is_refused():
    values, fingerprint, record, digest = _sealed()
    other, other_digest = seal(values, "party1", new_fingerprint())
    with pytest.raises(ValueError, match="saved from another model or another save"):
        open_sealed(other, "p1.joblib", "party1", fingerprint, digest)


@pytest.mark.parametrize("edit", ["nan", "shift", "reseal"])
def test_an_edited_share_is_refused(edit):
    values, fingerprint, record, digest = _sealed()
    table = values[0].copy()
    table[0, 1] = np.nan if edit == "nan" else table[0, 1] + 0.5
    if edit == "reseal":  # the file made consistent again, with its fingerprint
        record = seal([table, values[1]], "party1", fingerprint)[0]
    else:
        record = dict(record, payload=pickle.dumps([table, values[1]]))
    with pytest.raises(ValueError, match="fails its integrity check"):
        open_sealed(record, "p1.joblib", "party1", fingerprint, digest)


def test_another_party_s_file_and_an_unsealed_file_are_refused():
    values, fingerprint, record, digest = _sealed()
    with pytest.raises(ValueError, match="holds the share of party 'party1', "
                                         "not of party 'party0'"):
        open_sealed(record, "p0.joblib", "party0", fingerprint, digest)
    with pytest.raises(ValueError, match="not a share file sealed"):
        open_sealed(values, "p1.joblib", "party1", fingerprint, digest)
    with pytest.raises(ValueError, match="names no fingerprint"):
        open_sealed(record, "p1.joblib", "party1", None, None)
