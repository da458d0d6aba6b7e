"""FDSKL's privacy contract: what each message of a fit or a prediction may carry.

Read with :mod:`skfed.privacy`: a message is allowed when a rule matches its
phase and the roles of its sender and receiver, and each payload element
satisfies its spec. Roles: ``"active"`` (label holders, the only owners of
coefficients), ``"passive"``, and ``"party"`` for either. The rules of the
sub-protocols FDSKL shares with AVFKAM (``gamma="scale"``, the masked
two-tree sums, prediction) are those of
:mod:`skfed.kernel_methods._vertical_features`.

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
- Partial sums of the local models ``f^l`` (Algorithm 1, line 7, and
  prediction): plaintext, as the paper sends them. They
  correlate with the labels by design, so they are declared
  :class:`~skfed.privacy.Inherent` for the kind ``"labels"``.
- ``gamma="scale"``: each party's sum and sum of squares over its whole
  block, tree-summed (aggregates over every row).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ..._privacy_core import Aggregate, Contract, Public, Rule
from .._vertical_features import (
    F_SUMS,
    contract_n_rows,
    gamma_rules,
    masked_sum_rules,
    predict_rules,
    random_features,
)

__all__ = ["fdskl_contract"]


def _step_indices_size(sizes):
    """The party's name, the minibatch's row ids and the new feature ids."""
    return 1 + sizes["rows"] + random_features(sizes)


def fdskl_contract(estimator):
    """The contract of a fitted FDSKL estimator (fit and predict)."""
    rules = gamma_rules(contract_n_rows(estimator)) + [
        Rule("step/indices", "party", "party",
             (Public("the step's active party, minibatch row ids and new "
                     "feature ids (Algorithm 1, line 3)", text=64,
                     max_size=_step_indices_size),),
             note="sent down T0 by the step's active party"),
        *masked_sum_rules("step/features", requested=False),
        Rule("step/decision", "party", "active", (F_SUMS,),
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
    ] + predict_rules()
    return Contract("fdskl", rules)
