"""The SecureBoost training loop: who does what in each boosting round.

:func:`run_secureboost` is the driver (the paper's sections 4 and 7):

1. every party bins its own columns; the active party makes a key pair and
   sends the public key to the passive parties;
2. each round, the active party computes gradients and hessians, rounds them
   to fixed point, packs each pair into one plaintext, encrypts once per
   row and sends the ciphertexts to the passive parties;
3. for each output (one tree per class for multiclass) the tree is grown
   level by level (:func:`~._grower.grow_tree`);
4. with validation rows, the round's trees are applied to them by
   federated inference (:func:`~._predictor.federated_raw_predict`); the
   active party scores the training and validation predictions
   (the active party's :class:`~._estimator.Scorer`) and stops early on them
   (:func:`should_stop`).

The party functions below run on the active party's thread.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers
import time

import numpy as np

from .._progress import Progress
from ..crypto import generate_keypair
from ..federation import Local, protocol_rounds
from ._grower import grow_tree, passive_coverage
from ._histogram import passive_receive_gradients, setup_party
from ._packing import GradientLayout, weighted_fixed_point, weighted_row_bound
from ._predictor import federated_raw_predict
from ._sampling import goss_rows, uniform_rows

__all__ = ["run_secureboost", "model_of", "should_stop"]


def active_setup(state, max_bins, key_size, plaintext, scheme="paillier"):
    """Active party: bin own columns, make the key pair, set the baseline."""
    setup_party(state, max_bins)
    # Keys come from the operating system's generator, never from random_state.
    # The estimator's fit warned its caller of a small key_size already.
    state.public_key, state.private_key = generate_keypair(
        key_size, plaintext=plaintext, scheme=scheme, warn=False)
    state.scheme = scheme
    state.baseline = state.loss.baseline(state.y, state.n_outputs, state.w)
    state.raw = np.tile(state.baseline, (state.y.shape[0], 1))
    if state.y_val is not None:
        state.raw_val = np.tile(state.baseline, (state.y_val.shape[0], 1))
    state.trees = []
    state.passive_coverage = {}
    return state.public_key


def passive_setup(state, max_bins, public_key):
    """Passive party: bin own columns, keep the active party's public key."""
    setup_party(state, max_bins)
    state.public_key = public_key
    return None


def active_gradients(state, round_index, subsample, send, with_counts=False):
    """Active party: fixed-point gradients of this round; encrypt them if ``send``.

    Returns ``None``, or the message for the passive parties: the public
    layout (two integers), the rows carrying gradients (the root's instance
    space after subsampling) and one ``EncryptedArray`` per output.
    """
    n_rows = state.y.shape[0]
    w = state.w
    if state.goss is None:
        sample = uniform_rows(state.seed, round_index, n_rows, subsample)
        g, h = state.loss.gradients(state.y[sample], state.raw[sample])
        w = None if w is None else w[sample]
    else:
        # GOSS ranks rows by their weighted |g h|, then amplifies the rest.
        g, h = state.loss.gradients(state.y, state.raw)
        scale = np.ones(n_rows) if w is None else w
        sample, factor = goss_rows(state.seed, round_index, g * scale[:, None],
                                   h * scale[:, None], *state.goss)
        g, h = g[sample], h[sample]
        w = factor if w is None else w[sample] * factor
    state.position = np.full(n_rows, -1, dtype=np.intp)
    state.position[sample] = np.arange(sample.size)
    bound = weighted_row_bound(sample.size, w)
    precision = (GradientLayout.multi_output_precision(bound, state.key_size,
                                                       state.n_outputs)
                 if state.multi_output else None)
    state.layout = GradientLayout(bound, state.key_size, with_counts,
                                  precision_bits=precision, scheme=state.scheme)
    state.with_counts = with_counts
    state.qg, state.qh, state.exponents = [], [], []
    for k in range(state.n_outputs):
        (qg, eg), (qh, eh) = (weighted_fixed_point(state.layout, v[:, k], w)
                              for v in (g, h))
        state.qg.append(qg)
        state.qh.append(qh)
        state.exponents.append((eg, eh))
    if not send:
        return None
    # Row ids travel as int32 (4 bytes each); None says "every row".
    rows = None if sample.size == n_rows else sample.astype(np.int32)
    if state.multi_output:
        return _encrypt_multi_output(state, bound, with_counts, rows)
    encrypted = [state.layout.encrypt_pairs(state.public_key, state.qg[k], state.qh[k],
                                            state.n_jobs, state.private_key)
                 for k in range(state.n_outputs)]
    return state.layout.public_part(), rows, encrypted


def _encrypt_multi_output(state, bound, with_counts, rows):
    """Active party: the K pairs of a row packed into as few ciphertexts as fit.

    Groups of consecutive outputs share one ciphertext per row (the row
    count slot, if any, rides with group 0). The message carries one layout
    row per group.
    """
    precision = state.layout.precision_bits
    per = GradientLayout.outputs_per_ciphertext(bound, state.key_size, precision,
                                                state.scheme)
    groups = [list(range(i, min(i + per, state.n_outputs)))
              for i in range(0, state.n_outputs, per)]
    state.groups = groups
    state.group_layouts = [GradientLayout(bound, state.key_size,
                                          with_counts and i == 0, len(group),
                                          precision_bits=precision,
                                          scheme=state.scheme)
                           for i, group in enumerate(groups)]
    encrypted = [layout.encrypt_pairs(
        state.public_key, np.stack([state.qg[k] for k in group], axis=1),
        np.stack([state.qh[k] for k in group], axis=1), state.n_jobs,
        state.private_key) for layout, group in zip(state.group_layouts, groups)]
    layouts = np.stack([layout.public_part() for layout in state.group_layouts])
    return layouts, rows, encrypted


def active_precompute(state, start=True):
    """Active party: the next round's obfuscators, computed while it waits.

    Starts a background worker (lowest priority) computing as many fresh
    obfuscators as this round encrypted; the next round's encryption takes
    each of them once (``precompute_obfuscators`` of the Paillier or OU key).
    ``start=False`` stops it and drops what was not used (end of the fit).
    """
    if not start:
        state.private_key.stop_precomputing()
        return None
    per_row = len(state.groups) if state.multi_output else state.n_outputs
    count = int((state.position >= 0).sum()) * per_row
    state.private_key.precompute_obfuscators(count, state.n_jobs)
    return None


def active_scores(state, validation_contribution=None):
    """Active party: training score, and validation score after adding a round.

    Scores (:class:`~._estimator.Scorer`: the negative loss, or a scikit-learn
    scorer) come from the raw predictions, labels and weights the active
    party holds; a round's validation contribution is the federated
    prediction of its new trees on the held-out rows.
    """
    train = state.scorer(state.y, state.raw, state.w, train=True)
    if state.y_val is None:
        return train, None
    if validation_contribution is not None:
        state.raw_val += validation_contribution
    return train, state.scorer(state.y_val, state.raw_val, state.w_val)


def model_of(state):
    """A party's share of the model: (trees, baseline) if active, lookup table.

    Plus, only during an audit (see ``audit_log`` in
    :func:`~._histogram.passive_histograms`), a passive party's candidate
    list, its secret per-tree orders and its bins, for scoring attacks and
    replaying its side rule (:class:`~._contract.MinPassiveRows`), and the active
    party's gradients and decrypted candidate sums per node
    (:func:`~._grower.start_tree`), for playing them.
    """
    log = getattr(state, "audit_log", None)
    if log is not None and hasattr(state, "private_key"):
        log = {"active": True, "trees": list(log)}  # the attacker's own view
    elif log is not None:
        log = {"features": state.cand_features, "bins": state.cand_bins,
               "missing_left": state.cand_missing_left, "trees": list(log),
               # for the contract's replay of min_passive_side
               "row_bins": state.bins, "missing_bin": state.mapper.missing_bin}
    return (getattr(state, "trees", None), getattr(state, "baseline", None),
            list(state.records), log)


def should_stop(scores, n_iter_no_change, tol):
    """sklearn's rule: no score in the last n rounds beats the reference by tol.

    ``scores[0]`` is the score before the first round, as in
    HistGradientBoosting.
    """
    if len(scores) <= n_iter_no_change:
        return False
    reference = scores[-(n_iter_no_change + 1)] + tol
    return not any(s > reference for s in scores[-n_iter_no_change:])


def run_secureboost(fed, names, active, params, early_stopping, verbose, label):
    """Driver: the boosting rounds. Returns the training record.

    Parameters
    ----------
    fed : Federation
    names : list of str
        Party names by party index.
    active : str
    params : dict
        Estimator parameters (see :func:`~._grower.grow_tree`), plus
        ``n_estimators``, ``subsample``, ``max_bins``, ``key_size``,
        ``plaintext``, ``scheme`` (``"paillier"`` or ``"ou"``), ``active_only_rounds``, ``n_outputs``,
        ``n_iter_no_change``, ``tol``, ``validation`` (whether the active
        party holds validation rows), ``score_name`` (for ``verbose``).
    early_stopping : bool
        Stop when the validation score (the training score without
        validation rows) has not improved by ``tol`` in ``n_iter_no_change``
        rounds.
    """
    A = fed[active]
    passives = [p for p in names if p != active]
    public_key = A.call(active_setup, params["max_bins"], params["key_size"],
                        params["plaintext"], params["scheme"], phase="setup").result()
    fed.gather([fed[p].call(passive_setup, Local(params["max_bins"]), public_key,
                            sender=active, phase="setup/key") for p in passives])
    n_outputs = params["n_outputs"]
    validation = params["validation"]
    # Scores before the first round (the baseline), as HistGradientBoosting.
    train, val = A.call(active_scores, phase="score").result()
    train_scores, val_scores = [train], [val] if validation else []
    # Encrypted fits say after the first round how long the rest will take.
    progress = Progress(label, params["n_estimators"], verbose, fed=fed,
                        estimate=not params["plaintext"])
    for it in protocol_rounds(range(params["n_estimators"])):
        start = time.perf_counter()
        clock = {}
        use_passives = bool(passives) and it >= params["active_only_rounds"]
        # Active party: gradients -> fixed point -> one ciphertext per row.
        message = A.call(active_gradients, it, params["subsample"], use_passives,
                         params["min_samples_leaf"] > 1, phase="gradients").result()
        clock["encrypt"] = time.perf_counter() - start
        if use_passives:
            layout, sample, encrypted = message
            if it + 1 < params["n_estimators"]:
                # Not awaited: runs while the passive parties work.
                A.call(active_precompute, phase="gradients")
            fed.gather([fed[p].call(passive_receive_gradients, layout, sample,
                                    encrypted, sender=active, phase="gradients")
                        for p in passives])
        if params.get("multi_output") and n_outputs > 1:
            # One multi-output tree per round: every class's pair per row.
            grow_tree(fed, active, passives, (it, 0), -1, params, use_passives, clock)
        else:
            for k in range(n_outputs):
                grow_tree(fed, active, passives, (it, k), k, params, use_passives,
                          clock)
        contribution = None
        tick = time.perf_counter()
        if validation:
            new_trees = list(range(it * n_outputs, (it + 1) * n_outputs))
            contribution = federated_raw_predict(fed, active, names, "val", new_trees,
                                                 n_outputs)
        train, val = A.call(active_scores, contribution, phase="score").result()
        clock["validation"] = time.perf_counter() - tick
        train_scores.append(train)
        if validation:
            val_scores.append(val)
        watched = val_scores if validation else train_scores
        stop = early_stopping and should_stop(watched, params["n_iter_no_change"],
                                              params["tol"])
        # The scores are "higher is better"; a loss prints as itself.
        name, sign = (("loss", -1.0) if params["score_name"] == "-loss"
                      else (params["score_name"], 1.0))
        progress.report(
            it + 1, f"train {name} {sign * train:.5f}" + (
                "" if val is None else f", validation {name} {sign * val:.5f}"),
            phases=clock, last=stop)
        if stop:
            break
    A.call(active_precompute, False, phase="gradients").result()
    coverage = A.call(passive_coverage, phase="model").result()
    models = fed.gather([fed[p].call(model_of, phase="model") for p in names])
    trees = models[names.index(active)][0]
    if len(trees) != (it + 1) * n_outputs or not all(
            isinstance(tree, tuple) and len(tree) == 2
            and isinstance(tree[0], numbers.Integral) for tree in trees):
        raise ValueError(  # a malformed model would fail, or mislead, later
            f"Party {active!r} returned a malformed model in phase 'model': "
            f"expected {(it + 1) * n_outputs} (output, tree) pairs.")
    return {
        "trees": models[names.index(active)][0],
        "baseline": models[names.index(active)][1],
        "records": [m[2] for m in models],
        "audit_logs": {p: m[3] for p, m in zip(names, models) if m[3] is not None},
        "train_score": np.asarray(train_scores),
        "validation_score": np.asarray(val_scores),
        "passive_coverage": coverage,
    }
