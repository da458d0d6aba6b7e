"""AVFKAM's privacy contract: what each message of a fit or a prediction may carry.

Read with :mod:`skfed.privacy`, with the roles of FDSKL's contract
(``"active"``, ``"passive"``, ``"party"``). AVFKAM sends the masked
two-tree sums of its preprocessing (appendix C) and of prediction, and the
``gamma="scale"`` moments, under the shared rules of
:mod:`skfed.kernel_methods._vertical_features`; its training steps move only between active
parties, who hold the labels: the row ids of a step's pairs, the partial
sums ``f^l`` at those rows (plaintext, as the paper sends them; they
correlate with the labels by design, declared
:class:`~skfed.privacy.Inherent`), the decay factor, the threshold's sums
and, with early stopping, ``f^l`` at the held-out rows, which only the
active parties know.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ..._privacy_core import Contract, Inherent, Public, Rule
from .._vertical_features import (
    F_SUMS,
    contract_n_rows,
    gamma_rules,
    masked_sum_rules,
    predict_rules,
)

__all__ = ["avfkam_contract"]


def avfkam_contract(estimator):
    """The contract of a fitted AVFKAM estimator (fit and predict)."""
    rules = gamma_rules(contract_n_rows(estimator)) + [
        *masked_sum_rules("preprocess"),
        Rule("train/scores", "active", "active",
             (Inherent("row ids of the step's positive and negative rows",
                       exempt=("labels",), dtype="iu", max_size="rows"),),
             note="only to other active parties, who hold the labels"),
        Rule("train/scores-sum", "active", "active", (F_SUMS,),
             note="Algorithm 1, line 3: f^l at the sampled rows"),
        Rule("train/decay", "active", "active",
             (Public("decay factor 1 - gamma lambda", dtype="f",
                     max_size=1),)),
        Rule("threshold", "active", "active", (F_SUMS,),
             note="f^l at every training row, summed to the lead"),
        # Early stopping: the held-out rows are known to the active parties
        # only, so the lead's request carries nothing.
        Rule("validation/request", "active", "active", (),
             note="the lead asks for f^l at the held-out rows"),
        Rule("validation/scores", "active", "active", (F_SUMS,),
             note="f^l at the held-out rows, summed to the lead"),
    ] + predict_rules()
    return Contract("avfkam", rules)
