"""The privacy contracts of FDSKL and AVFKAM: what each message may hold.

Read with :mod:`skfed.privacy`: a message is allowed when a rule matches its
phase and the roles of its sender and receiver, and each payload element
satisfies its spec. Roles: ``"active"`` (label holders, the only owners of
coefficients), ``"passive"``, and ``"party"`` for either.

What travels, and why it is safe:

- Masked two-tree sums (Algorithm 3; phases ``*/T1``, ``*/T2``): ring
  elements (``uint32`` angles) only. Every party but ``l'`` masks each
  entry with a uniform ring element drawn fresh from its CSPRNG; ``l'``
  leads the receiver's only ``T1`` child, so every ``T1`` partial sum a
  party other than the receiver gets carries a fresh mask, every ``T2``
  partial sum is masks only, and no party can cancel one with the other.
- Their requests: the row and feature ids (public to every party).
- ``omega^T x + b`` at the receiver: the result of the sum, never a message.
  It is inherent to the paper (the receiver needs ``phi_j(x_i)``) and is what
  :mod:`skfed.kernel_methods._attacks` attacks.
- Partial sums of the local models ``f^l`` (Algorithm 1, line 7; AVFKAM's
  line 3, threshold, prediction): plaintext, as the paper sends them. They
  correlate with the labels by design, so they are declared
  :class:`~skfed.privacy.Inherent` for the kind ``"labels"``.
- ``gamma="scale"``: each party's sum and sum of squares over its whole
  block, tree-summed (aggregates over every row).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from .._privacy_core import Aggregate, Contract, Inherent, Masked, Public, Rule

__all__ = ["fdskl_contract", "avfkam_contract", "masked_sum_rules"]

_T1 = ("uniform ring mask (angles in Z_2^32), fresh per row and feature, from "
       "each sender's CSPRNG; l' leads the receiver's only T1 child")
_T2 = "sums of fresh ring masks only (no data)"


def random_features(sizes):
    """The random features a fit may draw: FDSKL's feature ids (its
    features per step for at most ``max_iter`` steps, at most the pool,
    ``"auto"`` resolved; a diverged fit keeps fewer than it sent), AVFKAM's
    ``n_random_features``."""
    est = sizes["est"]
    if hasattr(est, "n_components_per_iter"):
        return int(est._n_feature_ids)
    return int(est.n_random_features)


def rows_x_features(sizes):
    """One value per row and random feature."""
    return sizes["rows"] * random_features(sizes)


def _step_indices_size(sizes):
    """The party's name, the minibatch's row ids and the new feature ids."""
    return 1 + sizes["rows"] + random_features(sizes)


def rows_x_outputs(sizes):
    """One value per row and output (one output but for multiclass)."""
    classes = getattr(sizes["est"], "classes_", ())
    return sizes["rows"] * (len(classes) if len(classes) > 2 else 1)


def masked_sum_rules(phase, requested=True):
    """Rules of the masked two-tree sums of ``phase`` (Algorithm 3)."""
    rules = [
        Rule(f"{phase}/T1", "party", "party",
             (Masked(_T1, dtype="u", max_size=rows_x_features),),
             note="a T1 partial sum; only the receiver gets one without a mask "
                  "left in it, and it is the result"),
        Rule(f"{phase}/T2", "party", "party",
             (Masked(_T2, dtype="u", max_size=rows_x_features),),
             note="a T2 partial sum of masks; no party can cancel its T1 inputs "
                  "with it (the trees are checked node by node)"),
    ]
    if requested:
        rules.append(Rule(
            f"{phase}/request", "active", "party",
            (Public("row ids (None: every row)", dtype="iu", max_size="rows",
                    query=True),
             Public("feature ids", dtype="iu", max_size=random_features)),
            note="the coefficient holder asks for these rows and features"))
    return rules


def _gamma_rules(n_rows):
    return [
        Rule("gamma/moments", "party", "party",
             (Aggregate(n_rows, "sum, sum of squares, entry and column counts "
                        "of the senders' blocks", dtype="f", max_size=4),),
             note="gamma='scale' needs var(X)"),
        Rule("gamma/broadcast", "party", "party",
             (Public("gamma", dtype="f", max_size=1),)),
    ]


_F_SUMS = Inherent("partial sums of the local models f^l(x) (zeros from "
                   "passive parties)", exempt=("labels",), dtype="f",
                   max_size=rows_x_outputs)


def _predict_rules():
    return masked_sum_rules("predict/features") + [
        Rule("predict/sum", "party", "active", (_F_SUMS,),
             note="Algorithm 2: f(x) = sum of f^l(x), to the label holder"),
    ]


def _n_rows(estimator):
    # Aggregates span every row the parties hold (the fitted X).
    return max(int(getattr(estimator, "_privacy_n_rows", 2)), 2)


def fdskl_contract(estimator):
    """The contract of a fitted FDSKL estimator (fit and predict)."""
    rules = _gamma_rules(_n_rows(estimator)) + [
        Rule("step/indices", "party", "party",
             (Public("the step's active party, minibatch row ids and new "
                     "feature ids (Algorithm 1, line 3)", text=64,
                     max_size=_step_indices_size),),
             note="sent down T0 by the step's active party"),
        *masked_sum_rules("step/features", requested=False),
        Rule("step/decision", "party", "active", (_F_SUMS,),
             note="Algorithm 1, line 7: f(x_i) summed over T0"),
        Rule("step/decay", "party", "party",
             (Public("decay factor 1 - gamma lambda", dtype="f",
                     max_size=1),)),
        Rule("step/loss", "active", "active",
             (Public("step number", dtype="iu", max_size=1),
              Aggregate(1, "mean loss of the batch and of the held-out rows, "
                        "largest |f|", dtype="f", exempt=("labels",),
                        max_size=3),
              Public("check flag", dtype="b", max_size=1)),
             note="a non-lead active party reports its step to the lead"),
        Rule("step/keep", "active", "active",
             (Public("step number", dtype="iu", max_size=1),)),
        Rule("step/restore", "active", "active",
             (Public("step number", dtype="iu", max_size=1),)),
    ] + _predict_rules()
    return Contract("fdskl", rules)


def avfkam_contract(estimator):
    """The contract of a fitted AVFKAM estimator (fit and predict)."""
    rules = _gamma_rules(_n_rows(estimator)) + [
        *masked_sum_rules("preprocess"),
        Rule("train/scores", "active", "active",
             (Inherent("row ids of the step's positive and negative rows",
                       exempt=("labels",), dtype="iu", max_size="rows"),),
             note="only to other active parties, who hold the labels"),
        Rule("train/scores-sum", "active", "active", (_F_SUMS,),
             note="Algorithm 1, line 3: f^l at the sampled rows"),
        Rule("train/decay", "active", "active",
             (Public("decay factor 1 - gamma lambda", dtype="f",
                     max_size=1),)),
        Rule("threshold", "active", "active", (_F_SUMS,),
             note="f^l at every training row, summed to the lead"),
        # Early stopping: the held-out rows are known to the active parties
        # only, so the lead's request carries nothing.
        Rule("validation/request", "active", "active", (),
             note="the lead asks for f^l at the held-out rows"),
        Rule("validation/scores", "active", "active", (_F_SUMS,),
             note="f^l at the held-out rows, summed to the lead"),
    ] + _predict_rules()
    return Contract("avfkam", rules)
