"""Semantic checks: does a plaintext payload carry another party's secret?

A secret column ``s`` (``n`` values: a party's column, the labels, its
gradients...) is looked for in every plaintext element, in two places:

- along every axis of every leaf whose length is ``n`` (a column of a
  matrix payload, as before), per message;
- in every contiguous window of ``n`` values of a stream: the element
  flattened (all its numeric leaves, in order, C order) in every message
  of one phase to one receiver, one after the other (the checker builds
  the streams): a copy reshaped to ``(n/2, 2)``, with a value appended,
  split over two leaves or two messages of a phase, or hidden in a Python
  list is a window of the stream. Each stream is searched as sent and
  after each of :data:`TRANSFORMS` (cumulative sums undo first
  differences, first differences undo cumulative sums).

Four comparisons, each invariant to a family of disguises (the fourth,
**steps**, finds a vector of at most :data:`MAX_LEVELS` distinct values
each forming one run of the rows sorted by the secret, any quantisation
of it; on the aligned axes and the best affine windows):

- **affine**: the squared Pearson correlation ``R^2`` above
  :data:`R2_THRESHOLD` (an affine image, a rounded copy, a copy plus noise
  of 0.12 standard deviations: R^2 = 1 / 1.0144 = 0.986);
- **rank**: the absolute Spearman correlation above :data:`RANK_THRESHOLD`
  (any monotone transform: x^3, exp(x), a signed square root, the ranks);
- **permutation**: the sorted values equal the sorted secret up to an
  affine map, within :func:`sorted_tolerance` (a copy in an order the
  receiver may know, reversed or sorted, rounded to 3 decimals).

Each secret a message (along its axes) or a stream (in its windows)
carries is reported once, by the first comparison that finds it (in that
order).

Windows cost: the affine comparison runs on every window, with one FFT
correlation per secret column (``O(L log L)`` for an element of ``L``
values; the secrets of one length are stacked); the rank and permutation
comparisons run exactly on at most 26 candidate windows per secret length:
the first and the last, the
:data:`CANDIDATES` windows best by the affine score, by the same score
computed on the ranks of the whole element (a monotone image stays monotone
there), and by closeness of the window's skewness and kurtosis to the
secret's (a permuted affine copy has the same ones). Streams longer than
:data:`MAX_VALUES` are checked on their first ``MAX_VALUES`` values, in
FFT segments of ``2**18`` values.
Windows and ranks need ``n >= MIN_WINDOW_ROWS`` and, for the rank and
permutation comparisons, a secret with at least :data:`MIN_DISTINCT`
distinct values (a permuted binary label vector gives away only the class
counts).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers

import numpy as np
from scipy.fft import irfft, next_fast_len, rfft
from scipy.special import gammaln
from scipy.stats import rankdata

from ._leaves import leaves

__all__ = ["R2_THRESHOLD", "RANK_THRESHOLD", "ROW_TOLERANCE",
           "SemanticChecker", "flat_values"]

#: a plaintext vector whose affine fit to a secret column has R^2 above this
#: is reported as that secret (a copy with noise of 0.12 sd: 0.986)
R2_THRESHOLD = 0.97
#: below this many rows the affine threshold is 0.99 (chance correlations)
_R2_SHORT = 0.99
#: an absolute Spearman correlation above this: a monotone image of the secret
RANK_THRESHOLD = 0.97
#: sorted values whose affine fit to the sorted secret leaves less than this
#: fraction of the variance (and less than ``0.01 / n`` for a secret of
#: ``n`` rows): a permutation of the secret. A copy rounded to 3 decimals
#: sits at 4e-8; two independent normal samples of 16..1000 values at
#: least 5e-3..4e-4 (issue 37: 2,000 draws per size), a factor 40 above
#: ``0.01 / n`` at every size
SORTED_TOLERANCE = 1e-6
#: most distinct values of a step function (a quantised copy) looked for
MAX_LEVELS = 16
#: a step function is reported when its levels would each form one run of
#: the sorted secret by chance with a probability below this
STEP_CHANCE = 1e-9
#: the invertible maps each stream is also searched after, to undo them:
#: ``cumsum`` undoes first differences ``[x0, x1 - x0, ...]``, ``diff``
#: (first value kept) undoes cumulative sums; both restart at every message
TRANSFORMS = {
    "first differences undone (cumulative sum)": np.cumsum,
    "cumulative sums undone (first differences)":
        lambda v: np.diff(v, prepend=0.0),
}
#: values per FFT segment of a long stream (segments overlap by ``n - 1``)
_SEGMENT = 1 << 18
#: a plaintext vector within this relative distance of a private row is it
ROW_TOLERANCE = 1e-6
#: shortest secret searched for in windows and by ranks
MIN_WINDOW_ROWS = 16
#: fewest distinct values of a secret for the rank and permutation checks
MIN_DISTINCT = 10
#: candidate windows per secret column and per criterion
CANDIDATES = 8
#: values of one element the window search reads
MAX_VALUES = 1 << 22
# columns of one leaf compared along one axis
_MAX_COLUMNS = 4096


def _as_float(leaf):
    """A numeric leaf as floats (ring values read in two's complement)."""
    if isinstance(leaf, (bool, np.bool_, numbers.Real)) and not isinstance(
            leaf, np.ndarray):
        return np.array([float(leaf)])
    if not isinstance(leaf, np.ndarray) or leaf.dtype.kind not in "biuf":
        return None
    if leaf.dtype.kind == "u" and leaf.dtype.itemsize in (4, 8):
        # ring values (Z_2^64, or angles in Z_2^32): read as a decoder would,
        # so that small negative values stay next to small positive ones
        signed = np.int64 if leaf.dtype.itemsize == 8 else np.int32
        return leaf.astype(signed).astype(float)
    return leaf.astype(float)


def _standardise(matrix):
    """Centred, unit-norm finite non-constant columns, and their indices."""
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    keep = np.all(np.isfinite(matrix), axis=0)
    matrix = matrix[:, keep]
    centred = matrix - matrix.mean(axis=0)
    norms = np.linalg.norm(centred, axis=0)
    ok = norms > 1e-12 * max(1.0, float(np.max(np.abs(matrix), initial=0.0)))
    return centred[:, ok] / norms[ok], np.flatnonzero(keep)[ok]


class _Target:
    """The secret columns of one length, prepared once for every payload.

    Secrets of the same row count are stacked, so that one FFT and one set
    of candidate windows serve all of them; ``owner_of[j]`` names the
    secret and its column behind stacked column ``j``.
    """

    def __init__(self, secrets):
        blocks, self.owner_of = [], []
        for secret in secrets:
            values = np.asarray(secret.values, dtype=float)
            values = values[:, None] if values.ndim == 1 else values
            blocks.append(values)
            self.owner_of += [(secret, c) for c in range(values.shape[1])]
        self.matrix = np.hstack(blocks)
        self.n = self.matrix.shape[0]
        self.std, self.cols = _standardise(self.matrix)
        self.raw = self.matrix[:, self.cols]
        index = {id(secret): i for i, secret in enumerate(secrets)}
        self.secret_ids = np.array(
            [index[id(self.owner_of[c][0])] for c in self.cols], dtype=int)
        distinct = np.array([np.unique(c).size for c in self.raw.T], dtype=int)
        self.rich = distinct >= MIN_DISTINCT
        # a step function is looked for in secrets richer than its levels
        self.steppable = distinct > MAX_LEVELS
        self.rank_std, _ = _standardise(rankdata(self.raw, axis=0))
        ordered = np.sort(self.raw, axis=0)
        self.sorted_up, _ = _standardise(ordered)
        self.sorted_down, _ = _standardise(ordered[::-1])
        z = self.std * np.sqrt(self.n)
        self.skew = np.abs(np.mean(z ** 3, axis=0))
        self.kurt = np.mean(z ** 4, axis=0)
        self._fft = {}

    def fft(self, kind, size):
        key = (kind, size)
        if key not in self._fft:
            matrix = self.std if kind == "raw" else self.rank_std
            self._fft[key] = np.conj(rfft(matrix.astype(np.float32), size,
                                          axis=0))
        return self._fft[key]


def _r2_threshold(n):
    return R2_THRESHOLD if n >= MIN_WINDOW_ROWS else _R2_SHORT


def _per_secret(kind, scores, ok, target, found, where=None):
    """Add to ``found`` the best passing column of each secret not in it
    (``where[j]``: the candidate vector that matched target column ``j``)."""
    for sid in np.unique(target.secret_ids[ok]):
        if int(sid) in found:
            continue
        cols = np.flatnonzero(ok & (target.secret_ids == sid))
        j = int(cols[np.argmax(scores[cols])])
        found[int(sid)] = (kind, float(scores[j]), j,
                           None if where is None else int(where[j]))


def _best(matrix, labels):
    """Per target column: the best score over candidates, and which."""
    arg = np.argmax(matrix, axis=0)
    return matrix[arg, np.arange(matrix.shape[1])], labels[arg]


def sorted_tolerance(n):
    """The permutation test's tolerance for a secret of ``n`` rows."""
    return min(SORTED_TOLERANCE, 0.01 / n)


def _column_scores(columns, target, found, labels=None):
    """Match candidate vectors (columns) with the secrets, into ``found``:
    ``{secret: (kind, score, target column, label)}``, affine first, where
    ``label`` is ``labels[i]`` of the candidate that matched (None without
    labels)."""
    n = target.n
    labels = (np.full(columns.shape[1], -1) if labels is None
              else np.asarray(labels))
    finite = np.all(np.isfinite(columns), axis=0)
    columns, labels = columns[:, finite], labels[finite]
    payload, kept = _standardise(columns)
    if payload.shape[1] == 0:
        return found
    r2, where = _best(np.square(payload.T @ target.std), labels[kept])
    _per_secret("affine", r2, r2 > _r2_threshold(n), target, found, where)
    if n < MIN_WINDOW_ROWS or not target.rich.any():
        return found
    rich = target.rich
    ranks, kept = _standardise(rankdata(columns, axis=0))
    if ranks.shape[1]:
        rho, where = _best(np.abs(ranks.T @ target.rank_std), labels[kept])
        rho = np.where(rich, rho, 0.0)
        _per_secret("monotone", rho, rho > RANK_THRESHOLD, target, found,
                    where)
    ordered, kept = _standardise(np.sort(columns, axis=0))
    if ordered.shape[1]:
        up = np.abs(ordered.T @ target.sorted_up)
        down = np.abs(ordered.T @ target.sorted_down)
        close, where = _best(np.maximum(up, down), labels[kept])
        close = np.where(rich, close, 0.0)
        _per_secret("permutation", close, close > 1.0 - sorted_tolerance(n),
                    target, found, where)
    return found


def _step_chance(counts):
    """The chance that levels of these sizes each form one run of a random
    order: ``k! prod(n_i!) / n!``, as a natural log."""
    counts = np.asarray(counts, dtype=float)
    return float(gammaln(counts.size + 1) + gammaln(counts + 1).sum()
                 - gammaln(counts.sum() + 1))


def _runs(levels, order):
    ordered = levels[order]
    return 1 + int(np.count_nonzero(ordered[1:] != ordered[:-1]))


def _step_scores(columns, target, found, labels=None):
    """Candidates with 2..MAX_LEVELS distinct values that are a step
    function of a secret column with more distinct values: sorted by the
    column, each level forms one run (any quantisation with any labels of
    its levels, 1 bit included), which chance would do with a probability
    below :data:`STEP_CHANCE`."""
    if MAX_LEVELS < 2 or not target.steppable.any():
        return found
    labels = (np.full(columns.shape[1], -1) if labels is None
              else np.asarray(labels))
    ordered = np.sort(columns, axis=0)
    distinct = 1 + np.count_nonzero(ordered[1:] != ordered[:-1], axis=0)
    few = (distinct >= 2) & (distinct <= MAX_LEVELS)
    for i in np.flatnonzero(few & np.all(np.isfinite(columns), axis=0)):
        v = columns[:, i]
        values, codes, counts = np.unique(v, return_inverse=True,
                                          return_counts=True)
        k = values.size
        if not 2 <= k <= MAX_LEVELS or _step_chance(counts) > np.log(
                STEP_CHANCE):
            continue
        for j in np.flatnonzero(target.steppable):
            sid = int(target.secret_ids[j])
            if sid in found:
                continue
            x = target.raw[:, j]
            # ties of the secret in either order of the levels
            if (_runs(codes, np.lexsort((codes, x))) == k
                    or _runs(codes, np.lexsort((-codes, x))) == k):
                found[sid] = ("steps", float(k), j, int(labels[i]))
    return found


class _Windows:
    """The sliding windows of one flattened element, for one length ``n``."""

    def __init__(self, flat, n):
        self.flat, self.n = flat, n
        self.count = flat.size - n + 1
        self.size = next_fast_len(flat.size + n)
        scale = np.std(flat) or 1.0
        z = (flat - np.mean(flat)) / scale
        z2 = z * z
        sums = [np.concatenate([[0.0], np.cumsum(p)])
                for p in (z, z2, z2 * z, z2 * z2)]
        s1, s2, s3, s4 = (c[n:] - c[:-n] for c in sums)
        mean = s1 / n
        self.var = np.maximum(s2 - n * mean ** 2, 0.0)
        m2 = self.var / n
        ok = m2 > 1e-12
        m3 = s3 / n - 3 * mean * s2 / n + 2 * mean ** 3
        m4 = s4 / n - 4 * mean * s3 / n + 6 * mean ** 2 * s2 / n - 3 * mean ** 4
        self.skew = np.where(ok, np.abs(m3) / np.where(ok, m2, 1) ** 1.5, np.inf)
        self.kurt = np.where(ok, m4 / np.where(ok, m2, 1) ** 2, np.inf)
        # the screens run in single precision; matches are verified exactly
        self.spectrum = rfft(z.astype(np.float32), self.size)
        self._ranked = None

    def correlations(self, target, kind="raw"):
        """Pearson r of every window with every column: (count, k)."""
        if kind == "raw":
            spectrum, var = self.spectrum, self.var
        else:
            if self._ranked is None:
                # ordinal ranks are enough for a screen (ties are rare in
                # floats; the verification uses average ranks)
                ranked = np.empty(self.flat.size)
                ranked[np.argsort(self.flat)] = np.arange(self.flat.size)
                ranked = (ranked - ranked.mean()) / (ranked.std() or 1.0)
                c = np.concatenate([[0.0], np.cumsum(ranked), ])
                c2 = np.concatenate([[0.0], np.cumsum(ranked ** 2)])
                s1, s2 = c[self.n:] - c[:-self.n], c2[self.n:] - c2[:-self.n]
                self._ranked = (rfft(ranked.astype(np.float32), self.size),
                                np.maximum(s2 - s1 ** 2 / self.n, 0.0))
            spectrum, var = self._ranked
        dots = irfft(spectrum[:, None] * target.fft(kind, self.size),
                     self.size, axis=0)[:self.count]
        norm = np.sqrt(var)[:, None]
        return np.where(norm > 1e-9, dots / np.where(norm > 1e-9, norm, 1), 0.0)

    def window(self, starts):
        return np.stack([self.flat[i:i + self.n] for i in starts], axis=1)


def _top(scores, k):
    k = min(k, scores.size)
    return np.argpartition(scores, scores.size - k)[scores.size - k:]


def _window_scores(windows, target, found):
    """The best match among the candidate windows, each verified exactly.

    The screens run over every window; the affine, rank and permutation
    comparisons then run exactly on the candidates (single precision and
    payloads of mixed scales blur a screen, never a verification).
    """
    best = np.max(windows.correlations(target) ** 2, axis=1)
    starts = {0, windows.count - 1}
    affine = _top(best, CANDIDATES).tolist()
    starts.update(affine)
    if target.n >= MIN_WINDOW_ROWS and target.rich.any():
        ranked = np.max(np.abs(windows.correlations(target, "rank")), axis=1)
        moments = np.min(
            np.abs(windows.skew[:, None] - target.skew[None])
            + np.abs(windows.kurt[:, None] - target.kurt[None])
            / np.maximum(target.kurt[None], 1.0), axis=1)
        starts.update(_top(ranked, CANDIDATES).tolist())
        starts.update(_top(-moments, CANDIDATES).tolist())
    starts = sorted(starts)
    _column_scores(windows.window(starts), target, found, starts)
    # a quantised copy keeps much of the affine score (2 bits: R^2 0.85)
    affine = sorted(affine)
    return _step_scores(windows.window(affine), target, found, affine)


def _row_match(array, secret):
    """The smallest relative distance of a payload vector to a private row."""
    rows = np.asarray(secret.values, dtype=float)
    d = rows.shape[1]
    if d < 2:
        return None
    best = None
    for axis in range(array.ndim):
        if array.shape[axis] != d:
            continue
        vectors = np.moveaxis(array, axis, -1).reshape(-1, d)[:_MAX_COLUMNS]
        dist = np.sqrt(np.maximum(
            np.square(vectors).sum(1)[:, None] - 2 * vectors @ rows.T
            + np.square(rows).sum(1)[None, :], 0.0))
        rel = dist / np.maximum(np.linalg.norm(rows, axis=1)[None, :], 1e-12)
        i = int(np.argmin(np.min(rel, axis=0)))
        score = float(np.min(rel[:, i]))
        if best is None or score < best[0]:
            best = (score, i)
    return best


def _describe(match, target):
    kind, score, j = match[:3]
    secret, column = target.owner_of[int(target.cols[j])]
    what = {"affine": f"an affine image (R^2 = {score:.4f})",
            "monotone": f"a monotone image (|Spearman| = {score:.4f})",
            "permutation": "a permutation (sorted values equal up to an "
                           "affine map)",
            "steps": f"a {int(score)}-level step function (a quantised "
                     "copy)"}[kind]
    return (f"{what} of {secret.owner}'s {secret.kind} ({secret.name}, "
            f"column {column})")


def _secret_key(match, target):
    secret, _ = target.owner_of[int(target.cols[match[2]])]
    return (secret.owner, secret.kind, secret.name)


def flat_values(value):
    """An element's numeric leaves as floats, and flattened (C order, in
    leaf order, finite values only): what the window search reads."""
    arrays = [a for a in (_as_float(leaf) for leaf in leaves(value))
              if a is not None and a.size]
    if not arrays:
        return arrays, np.empty(0)
    flat = np.concatenate([a.ravel() for a in arrays])
    return arrays, flat[np.isfinite(flat)]


class SemanticChecker:
    """Compares plaintext elements with the secrets of the fit.

    :meth:`message_problems` checks one message's element (private rows,
    and secrets along the axes of its leaves); :meth:`stream_problems` runs
    the window search on a stream (the flattened values of one element of
    every message of a phase to one receiver, in order), as is and after
    each of :data:`TRANSFORMS`. :meth:`problems` does both on one element.
    """

    def __init__(self, secrets):
        self.rows = [s for s in secrets if s.kind == "rows"]
        self.columns = [s for s in secrets if s.kind != "rows"
                        and np.ndim(s.values) in (1, 2)
                        and np.shape(s.values)[0] >= 3]
        self._targets = {}

    def _target(self, secrets):
        key = tuple(id(s) for s in secrets)
        if key not in self._targets:
            self._targets[key] = _Target(secrets)
        return self._targets[key]

    def _by_length(self, spec, receiver):
        """The secrets ``receiver`` may not get in ``spec``, by length."""
        by_length = {}
        for secret in self.columns:
            if secret.owner != receiver and secret.kind not in spec.exempt:
                by_length.setdefault(np.shape(secret.values)[0], []).append(secret)
        out = {}
        for n, secrets in by_length.items():
            target = self._target(secrets)
            if target.std.shape[1]:
                out[n] = target
        return out

    def problems(self, spec, value, receiver):
        """Every secret ``value`` carries, in words (one per secret)."""
        arrays, flat = flat_values(value)
        found = self.message_problems(spec, arrays, receiver)
        keys = {key for key, _ in found}
        return [text for _, text in found] + [
            text for _, key, text in self.stream_problems(spec, [flat],
                                                          receiver)
            if key not in keys]

    def message_problems(self, spec, arrays, receiver):
        """``(secret, words)`` of what one element's leaves (``arrays``, as
        floats) carry: a private row, or a secret along one of their axes
        (affine, monotone, permutation, steps)."""
        out = []
        if not arrays:
            return out
        for secret in self.rows:
            if secret.owner == receiver or secret.kind in spec.exempt:
                continue
            for array in arrays:
                match = _row_match(array, secret)
                if match is not None and match[0] < ROW_TOLERANCE:
                    out.append(((secret.owner, secret.kind, secret.name),
                                f"a vector equal to private row {match[1]} of "
                                f"{secret.owner} ({secret.name})"))
                    break
        for target in self._by_length(spec, receiver).values():
            found = {}
            self._aligned(arrays, target, found)
            out += [(_secret_key(match, target), _describe(match, target))
                    for match in found.values()]
        return out

    def stream_problems(self, spec, parts, receiver):
        """``(part, secret, words)`` of what the windows of a stream carry.

        ``parts`` are the flattened values of the stream's messages in
        order; ``part`` is the one where the matching window starts. Each
        secret is reported once per stream, by the first search that finds
        it: the values as they are, then each of :data:`TRANSFORMS`
        (applied to each part, so that a map restarts at every message).
        """
        targets = {n: t for n, t in self._by_length(spec, receiver).items()
                   if n >= MIN_WINDOW_ROWS}
        parts = [p for p in parts]
        total = sum(p.size for p in parts)
        if not targets or total < min(targets):
            return []
        bounds = np.cumsum([0] + [p.size for p in parts])
        variants = [("", parts)] + [
            (f"{name}: ", [transform(p) if p.size else p for p in parts])
            for name, transform in TRANSFORMS.items()]
        out, seen = [], set()
        for n, target in targets.items():
            if total < n:
                continue
            for prefix, pieces in variants:
                flat = np.concatenate(pieces)[:MAX_VALUES]
                found = {}
                for start in range(0, flat.size - n + 1, _SEGMENT):
                    new = _window_scores(
                        _Windows(flat[start:start + _SEGMENT + n - 1], n),
                        target, {})
                    for sid, match in new.items():
                        if sid not in found:
                            found[sid] = match[:3] + (match[3] + start,)
                for match in found.values():
                    key = _secret_key(match, target)
                    if key in seen:
                        continue
                    seen.add(key)
                    part = int(np.searchsorted(bounds, match[3],
                                               side="right") - 1)
                    out.append((part, key, prefix + _describe(match, target)))
        return out

    @staticmethod
    def _aligned(arrays, target, found):
        for array in arrays:
            for axis in range(array.ndim):
                if array.shape[axis] != target.n:
                    continue
                columns = np.moveaxis(array, axis, 0).reshape(target.n, -1)
                _column_scores(columns[:, :_MAX_COLUMNS], target, found)
                _step_scores(columns[:, :_MAX_COLUMNS], target, found)
