"""A fingerprint and an integrity check for model shares.

The same two checks guard the shares an estimator's ``export_shares()``
hands out in memory (SecureBoost, FDSKL, AVFKAM): every share of one fit
carries the fit's fingerprint (:func:`new_fingerprint`, drawn at fit) and
the digest of its own content at export (:func:`content_digest`); before a
share is used, :func:`check_intact` and :func:`check_same_model` refuse one
edited since, or one of another fit, naming the share's party.

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

import numpy as np

__all__ = ["new_fingerprint", "content_digest", "check_intact",
           "check_same_model", "seal", "open_sealed"]

#: the format tag of a sealed share file
FORMAT = "skfed share v1"


def new_fingerprint():
    """A fresh model fingerprint (the driver's CSPRNG, 128 bits, hex)."""
    return secrets.token_hex(16)


def content_digest(*parts):
    """BLAKE2b (128 bits, hex) of a share's content.

    ``parts`` are numbers, strings, bytes, arrays or None, nested in dicts
    (hashed by value, in key order), lists and tuples.
    """
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        if isinstance(part, dict):
            h.update(content_digest(*[part[k] for k in sorted(part)]).encode())
        elif isinstance(part, (list, tuple)):
            h.update(content_digest(*part).encode())
        elif part is None:
            h.update(b"none")
        else:
            a = np.ascontiguousarray(part)
            h.update(str((a.dtype.str, a.shape)).encode())
            h.update(a.tobytes() if a.dtype != object else repr(a.tolist()).encode())
    return h.hexdigest()


def _exported_by_an_older_skfed(share):
    return ValueError(
        f"The share of party {share.party} carries no model fingerprint (it "
        "was exported by an older skfed): export the shares again from the "
        "fitted model.")


def check_intact(share, what):
    """Refuse a share whose content changed since export.

    ``share.digest`` is :func:`content_digest` of its content at export,
    ``share._digest_now()`` the same of its content now; ``what`` names
    the content for the message.
    """
    if not hasattr(share, "digest"):
        raise _exported_by_an_older_skfed(share)
    if not hmac.compare_digest(share._digest_now(), str(share.digest)):
        raise ValueError(
            f"The share of party {share.party} fails its integrity check: its "
            f"content ({what}) changed after export_shares made it. Use the "
            "share as exported.")


def check_same_model(share, model, whose="asked for"):
    """Refuse a share of another fit than ``model`` (a fingerprint, or None
    to check nothing); ``whose`` says where ``model`` comes from."""
    if model is None:
        return
    if getattr(share, "model", None) is None:
        raise _exported_by_an_older_skfed(share)
    if model != share.model:
        raise ValueError(
            f"The share of party {share.party} is of another fit (model "
            f"fingerprint {share.model[:12]}..., {whose} {str(model)[:12]}...): "
            "use the shares exported together from one fitted model.")


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
