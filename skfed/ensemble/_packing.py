"""Fixed-point gradients, and packing of several values per Paillier or OU plaintext.

Why fixed point. The active party rounds every gradient ``g`` and hessian
``h`` to an integer multiple of ``2**e`` *before* anything else, and every
sum (its own histograms, the passive parties' encrypted ones, node totals)
is then a sum of integers, exact in any order and in either mode. Paillier
(which adds integers modulo ``n``) and the plaintext mode (int64 sums) give
bit-identical statistics, hence identical gains, trees and predictions: the
paper's losslessness, checked exactly rather than "up to rounding". The
precision is chosen so that any sum over the training rows stays below
``2**52`` in magnitude and converts to float64 exactly; it is 2**-37 of the
largest gradient at 30,000 rows, far below what changes a split.

Why signed-digit packing. ``skfed.crypto.PackedEncoder`` offsets each slot to
keep it non-negative and must therefore tell the decrypting side how many
values each ciphertext sums (its ``counts``). For a histogram those counts
are the passive party's per-bin row counts, which the paper never reveals to
the active party. Here the slots are *signed* fixed-width digits instead:
``T = sum_j x_j * 2**(j S)`` with ``|x_j| < 2**(S-1)`` decodes uniquely from
``T`` alone (peel the lowest ``S`` bits as a signed digit, subtract, shift),
and sums of packed values are packed sums as long as every slot sum stays in
range, which the width ``S`` guarantees. Negative numbers are native to
Paillier (``-m`` is ``n - m``) and Okamoto-Uchiyama (``-m`` is ``p - m``, the
key owner knowing ``p``), so no offsets and no counts travel. OU plaintexts
are a third of the key size (679 bits at 2048), so a histogram ciphertext
holds a third as many candidates.

Two packings use it:

- per row, the pair ``(h, g)`` in one plaintext (one encryption per row and
  round instead of two), by the active party;
- per histogram message, ``per_ciphertext`` cumulative candidate pairs in one
  ciphertext (Horner: ``acc = acc * 2**(2S) + c``, all homomorphic), by the
  passive party, so the active party decrypts ~20x fewer ciphertexts.

In plaintext mode the same messages are int64 arrays of shape ``(n, 2)``
(``PlaintextArray``), since packing only saves ciphertexts.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import gmpy2
import numpy as np

from ..crypto import EncryptedArray, PlaintextArray, PlaintextPublicKey, plaintext_bits
from ..crypto._parallel import parallel_tasks

__all__ = ["GradientLayout", "weighted_row_bound", "weighted_fixed_point",
           "histogram_sums", "pack_candidates", "unpack_candidates"]


class GradientLayout:
    """Fixed-point layout of gradient pairs for one boosting round.

    Parameters
    ----------
    n_rows : int
        Largest number of values ever summed (the rows that carry gradients).
    key_size : int
        Key size; with ``scheme`` it gives the plaintext capacity
        (:func:`skfed.crypto.plaintext_bits`).
    with_counts : bool, default=False
        Add a slot holding 1 per row, so that sums carry row counts
        (needed only for ``min_samples_leaf > 1``).
    precision_bits : int or None, default=None
        At most this many bits of precision (default 40; never more than the
        exact-sum bound allows). Multi-output trees trade a few bits for more
        candidates per ciphertext (:meth:`multi_output_precision`, which
        reads Paillier's capacity whatever the scheme, so that plaintext,
        Paillier and OU fits round alike and build the same trees).
    n_outputs : int, default=1
        Gradient pairs per row (several classes of a multi-output tree share
        one ciphertext): slots ``(h_0, g_0, h_1, g_1, ..., [count])``.
    scheme : {"paillier", "ou"}, default="paillier"
        Whose plaintext capacity packs the slots (plaintext mode uses
        Paillier's; packing never changes the model).

    Attributes
    ----------
    precision_bits : int
        Each value is rounded to ``bound * 2**-precision_bits``.
    slot_bits : int
        Width ``S`` of one signed slot.
    n_slots : int
        Values per row: ``2 * n_outputs``, plus 1 with counts.
    per_ciphertext : int
        Candidates packed into one histogram ciphertext.
    """

    def __init__(self, n_rows, key_size, with_counts=False, n_outputs=1,
                 precision_bits=None, scheme="paillier"):
        row_bits = max(int(n_rows), 1).bit_length()
        # n_rows * 2**precision_bits < 2**52: every sum is an exact float64.
        self.precision_bits = min(40 if precision_bits is None else precision_bits,
                                  52 - row_bits)
        if self.precision_bits < 16:
            raise ValueError(
                f"{n_rows} rows are too many for exact 52-bit histogram sums; "
                "use subsample < 1 or fewer rows."
            )
        self.slot_bits = self.precision_bits + row_bits + 1
        self.key_size = int(key_size)
        self.n_outputs = int(n_outputs)
        self.n_slots = 2 * self.n_outputs + (1 if with_counts else 0)
        # |T| < 2**(n_slots S k) must stay below max_int: Paillier's n // 3
        # (>= key_size - 3 bits), OU's public bound on p (key_size // 3 - 3).
        capacity = plaintext_bits(self.key_size, scheme)
        self.per_ciphertext = capacity // (self.n_slots * self.slot_bits)
        if self.per_ciphertext < 1:
            needed = self.n_slots * self.slot_bits + 3
            needed = 3 * needed if scheme == "ou" else needed
            raise ValueError(
                f"key_size={key_size} is too small to hold the "
                f"{self.n_slots * self.slot_bits} bits of one row's gradients "
                f"({scheme} plaintexts have {capacity} bits); use a "
                f"key of at least {needed} bits."
            )

    @staticmethod
    def outputs_per_ciphertext(n_rows, key_size, precision_bits=40, scheme="paillier"):
        """How many gradient pairs (plus a count slot) one ciphertext holds."""
        row_bits = max(int(n_rows), 1).bit_length()
        slot_bits = min(precision_bits, 52 - row_bits) + row_bits + 1
        return max(1, (plaintext_bits(key_size, scheme) // slot_bits - 1) // 2)

    @staticmethod
    def multi_output_precision(n_rows, key_size, n_outputs, floor=32):
        """Precision that packs one more candidate per ciphertext, if cheap.

        With ``2 K`` slots per candidate a 2048-bit plaintext often holds one
        candidate and a few bits to spare; giving up a bit or two of the 40
        (never below ``floor``) fits a second one and halves the decryptions.
        Returns the precision (40 when nothing is gained).
        """
        row_bits = max(int(n_rows), 1).bit_length()
        precision = min(40, 52 - row_bits)
        slots = 2 * n_outputs
        per = (int(key_size) - 3) // (slots * (precision + row_bits + 1))
        if per == 0:
            return precision
        narrower = (int(key_size) - 3) // (slots * (per + 1)) - row_bits - 1
        return narrower if floor <= narrower < precision else precision

    def public_part(self):
        """What the passive parties need: ``(slot_bits, per_ciphertext, n_slots)``."""
        return np.array([self.slot_bits, self.per_ciphertext, self.n_slots],
                        dtype=np.int64)

    # -- active party: quantise and encrypt --------------------------------

    def exponent_for(self, values):
        """Base-2 exponent ``e`` of a quantisation of ``values`` (kept secret)."""
        largest = float(np.max(np.abs(values))) if values.size else 0.0
        bound_exponent = math.frexp(largest)[1] if largest > 0 else 0
        return bound_exponent - self.precision_bits

    @staticmethod
    def quantize(values, exponent):
        """Integers ``round(values / 2**exponent)`` (int64)."""
        return np.rint(np.ldexp(values, -exponent)).astype(np.int64)

    def encrypt_pairs(self, public_key, qg, qh, n_jobs=None, private_key=None):
        """One ciphertext per row holding ``(qh, qg[, 1])`` as signed slots.

        ``qg`` and ``qh`` are ``(n,)``, or ``(n, n_outputs)`` for several
        pairs per row (slots ``h_0, g_0, h_1, g_1, ...``).

        The active party owns the key pair: given ``private_key``, it encrypts
        with the key owner's CRT path (same ciphertext distribution, ~2x
        faster; see ``PaillierPrivateKey.raw_encrypt`` and
        ``OUPrivateKey.raw_encrypt``).
        """
        encrypter = public_key if private_key is None else private_key
        qg = np.asarray(qg).reshape(qg.shape[0], -1)
        qh = np.asarray(qh).reshape(qh.shape[0], -1)
        m = qg.shape[1]
        with_counts = self.n_slots > 2 * m
        if isinstance(public_key, PlaintextPublicKey):
            # Plaintext slots: g_0..g_{m-1}, h_0..h_{m-1}[, count].
            columns = [qg, qh] + ([np.ones((qg.shape[0], 1), qg.dtype)]
                                  if with_counts else [])
            return encrypter.encrypt(np.concatenate(columns, axis=1))
        shift = self.slot_bits
        count = (1 << (2 * m * shift)) if with_counts else 0
        plaintexts = np.empty(qg.shape[0], dtype=object)
        if m == 1:
            plaintexts[:] = [h + (g << shift) + count
                             for g, h in zip(qg[:, 0].tolist(), qh[:, 0].tolist())]
        else:
            plaintexts[:] = [
                sum((h << (2 * j * shift)) + (g << ((2 * j + 1) * shift))
                    for j, (g, h) in enumerate(zip(gs, hs))) + count
                for gs, hs in zip(qg.tolist(), qh.tolist())]
        ciphertexts = encrypter.raw_encrypt(plaintexts, n_jobs=n_jobs)
        return EncryptedArray(public_key, ciphertexts, 0, is_integer=True)


def weighted_row_bound(n_rows, w):
    """What the fixed-point layout must budget for: rows, or the weight total.

    With weights the sums of ``w * q`` are bounded by ``sum(w) * 2**p``
    (``q`` an unweighted fixed-point value); counts still need ``n_rows``.
    """
    if w is None:
        return n_rows
    return max(n_rows, int(np.ceil(w.sum())))


def weighted_fixed_point(layout, values, w):
    """``round(w * round(values / 2**e))`` and its exponent (active party only).

    Weights scale each row's ``g`` and ``h`` here, before encryption: nobody
    else ever sees a weight. The unweighted values are rounded first, at the
    precision of the layout, and only then multiplied by the weights: an
    integer weight ``m`` then gives exactly the fixed-point sums of ``m``
    repeated rows (sklearn's sample-weight semantics, bit for bit). Rows of
    weight 0 do not set the scale.
    """
    if w is None:
        exponent = layout.exponent_for(values)
        return layout.quantize(values, exponent), exponent
    values = np.where(w > 0, values, 0.0)
    exponent = layout.exponent_for(values)
    return np.rint(w * layout.quantize(values, exponent)).astype(np.int64), exponent


def histogram_sums(encrypted, bins, n_groups, n_jobs=None):
    """Per-feature, per-bin sums of row gradient pairs (Algorithm 1).

    Parameters
    ----------
    encrypted : EncryptedArray of shape (n,) or PlaintextArray of shape (n, 2)
    bins : ndarray of shape (n, n_features)
    n_groups : int

    Returns
    -------
    EncryptedArray (n_features, n_groups) or PlaintextArray (n_features, n_groups, 2)
    """
    ids = bins.astype(np.intp)
    if isinstance(encrypted, PlaintextArray):
        parts = [encrypted.group_sum(ids[:, f], n_groups).values
                 for f in range(ids.shape[1])]
        values = np.stack(parts) if parts else np.zeros((0, n_groups, 2), np.int64)
        return PlaintextArray(encrypted.public_key, values)
    return encrypted.group_sum(ids, n_groups, n_jobs=n_jobs)


def pack_candidates(candidates, layout_public, n_jobs=None):
    """Pack candidate pairs ``per_ciphertext`` at a time and re-randomise them.

    Parameters
    ----------
    candidates : EncryptedArray (n_candidates,) or PlaintextArray (n_candidates, 2)
    layout_public : ndarray ``(slot_bits, per_ciphertext)``

    Returns
    -------
    message : EncryptedArray (n_chunks,) or PlaintextArray (n_candidates, 2)
        Fresh ciphertexts, unlinkable to the row ciphertexts they came from.
    """
    if isinstance(candidates, PlaintextArray):
        return candidates.rerandomize()
    slot_bits, per_ciphertext, n_slots = (int(v) for v in layout_public)
    n = candidates.shape[0]
    if n == 0:
        return candidates
    modulus = candidates.public_key.ciphertext_modulus
    shift = 1 << (n_slots * slot_bits)
    ciphertexts = candidates.ciphertexts.tolist()
    chunks = [ciphertexts[a:a + per_ciphertext] for a in range(0, n, per_ciphertext)]

    def horner(chunk):
        # Candidate j of a chunk lands at bits [n_slots S j, n_slots S (j + 1)):
        # acc = acc * 2**(n_slots S) + c, homomorphically. A short last chunk
        # leaves its top slots 0 (what padding with encryptions of 0 gave).
        acc = chunk[-1]
        for c in reversed(chunk[:-1]):
            acc = gmpy2.powmod(acc, shift, modulus) * c % modulus
        return acc

    # A chunk costs per_ciphertext - 1 shifts (milliseconds at 2048 bits):
    # one task per chunk for the worker threads.
    packed = np.empty(len(chunks), dtype=object)
    packed[:] = parallel_tasks(horner, chunks, n_jobs)
    return EncryptedArray(candidates.public_key, packed, 0,
                          is_integer=True).rerandomize(n_jobs=n_jobs)


def unpack_candidates(private_key, message, n_candidates, layout, n_jobs=None):
    """Decrypt a candidate message into int64 arrays ``(G, H[, counts])``."""
    values = private_key.decrypt(message, n_jobs=n_jobs)
    m = layout.n_slots // 2
    with_counts = layout.n_slots % 2 == 1
    if isinstance(message, PlaintextArray):
        values = values.astype(np.int64)
        if m == 1:
            return tuple(values[:, j] for j in range(layout.n_slots))
        counts = (values[:, 2 * m],) if with_counts else ()
        return (values[:, :m], values[:, m:2 * m]) + counts
    slot_bits = layout.slot_bits
    mask = (1 << slot_bits) - 1
    half = 1 << (slot_bits - 1)
    digits = []
    for total in values.ravel().tolist():
        total = int(total)
        for _ in range(layout.n_slots * layout.per_ciphertext):
            digit = total & mask
            if digit >= half:
                digit -= 1 << slot_bits
            digits.append(digit)
            total = (total - digit) >> slot_bits
    digits = np.asarray(digits[:layout.n_slots * n_candidates], dtype=np.int64)
    digits = digits.reshape(-1, layout.n_slots)
    # Slots per candidate: h_0, g_0, h_1, g_1, ..., then the count.
    counts = (digits[:, 2 * m],) if with_counts else ()
    if m == 1:
        return (digits[:, 1], digits[:, 0]) + counts
    return (digits[:, 1:2 * m:2], digits[:, 0:2 * m:2]) + counts
