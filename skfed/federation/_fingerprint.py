"""A fingerprint and an integrity check for model shares saved to files.

:meth:`~skfed.federation.PartyData.save_shares` has every party write its
share of a model to a file on its own host; a file from another fit, or one
changed since (NaN or shifted thresholds, another fit's key), loaded back
silently would change the predictions. Each share file is therefore sealed:

- the **model fingerprint** is a random id the driver draws (from
  ``secrets``) for each save and hands to every party; every file of that
  save carries it, and the driver's part of the model records it;
- the **integrity digest** is BLAKE2b of the file's pickled payload, keyed
  by a salt drawn by the party itself and stored in the file. The party
  returns the digest to the driver, which records it beside the fingerprint.
  Keyed by a salt the driver never sees, the digest tells the driver nothing
  about the share (it cannot test a guess of a threshold against it).

At load each party checks, before it unpickles anything, that the file is a
sealed share of the right party, that its fingerprint is the model's, and
that its digest is both the one stored and the one the driver recorded; any
mismatch stops the load with a message naming the file and what differs.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import hashlib
import hmac
import pickle
import secrets

__all__ = ["new_fingerprint", "seal", "open_sealed"]

#: the format tag of a sealed share file
FORMAT = "skfed share v1"


def new_fingerprint():
    """A fresh model fingerprint (the driver's CSPRNG, 128 bits, hex)."""
    return secrets.token_hex(16)


def _digest(salt, payload):
    return hashlib.blake2b(payload, key=salt, digest_size=32).hexdigest()


def seal(values, party, fingerprint):
    """``(record, digest)``: the values of ``party`` as a sealed file record."""
    payload = pickle.dumps(values, protocol=pickle.HIGHEST_PROTOCOL)
    salt = secrets.token_bytes(16)  # the party's own: the driver never sees it
    digest = _digest(salt, payload)
    record = {"format": FORMAT, "party": str(party), "model": fingerprint,
              "salt": salt, "digest": digest, "payload": payload}
    return record, digest


def open_sealed(record, path, party, fingerprint, digest):
    """The values of a sealed record, after every check; else a ValueError.

    ``fingerprint`` and ``digest`` are what the driver recorded at save.
    """
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ValueError(
            f"{path} is not a share file sealed by PartyData.save_shares (it "
            "may have been written by an older skfed, without a model "
            "fingerprint): load the model that was fitted and save its "
            "shares again.")
    if record.get("party") != str(party):
        raise ValueError(
            f"{path} holds the share of party {record.get('party')!r}, not of "
            f"party {party!r}: each party loads its own file.")
    if fingerprint is None or digest is None:
        raise ValueError(
            f"The model given names no fingerprint for party {party!r}'s "
            "share: pass the estimator (or the driver_file) that "
            "PartyData.save_shares saved along with these files.")
    if record.get("model") != fingerprint:
        raise ValueError(
            f"{path} was saved from another model or another save (model "
            f"fingerprint {str(record.get('model'))[:12]}..., this model's is "
            f"{fingerprint[:12]}...): load the files saved together with this "
            "model.")
    payload = record.get("payload")
    stored = record.get("digest")
    if (not isinstance(payload, bytes) or not isinstance(stored, str)
            or not hmac.compare_digest(_digest(bytes(record.get("salt", b"")),
                                               payload), stored)
            or not hmac.compare_digest(stored, digest)):
        raise ValueError(
            f"{path} fails its integrity check: its contents changed after "
            "PartyData.save_shares wrote them (a value edited, or the file "
            "replaced). Restore the file saved with this model.")
    return pickle.loads(payload)
