"""The simulated network: parties as actors, message accounting, tree sums."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from .aggregation import (
    AngleEncoder,
    are_totally_different,
    balanced_tree,
    child_sets,
    choose_excluded,
    masked_tree_sum,
    subtree_leaf_sets,
    totally_different_trees,
    tree_broadcast,
    tree_leader,
    tree_leaves,
    tree_sum,
    unmaskable,
)
from ._accounting import (
    CommunicationSummary,
    Message,
    current_round,
    measure,
    protocol_round,
    protocol_rounds,
    set_round,
)
from .network import Federation, MessageRecorder, record_messages
from ._party_data import PartyData
from ._ray import RemoteValue
from .party import (
    FederationTimeoutError,
    Local,
    Party,
    PartyError,
    PartyFuture,
    PartyState,
    PartyStopped,
    check_stop,
)

__all__ = [
    "Party",
    "PartyState",
    "PartyFuture",
    "PartyError",
    "FederationTimeoutError",
    "PartyStopped",
    "check_stop",
    "Local",
    "PartyData",
    "RemoteValue",
    "Federation",
    "Message",
    "MessageRecorder",
    "CommunicationSummary",
    "measure",
    "record_messages",
    "protocol_round",
    "protocol_rounds",
    "current_round",
    "set_round",
    "balanced_tree",
    "tree_leaves",
    "tree_leader",
    "subtree_leaf_sets",
    "are_totally_different",
    "totally_different_trees",
    "child_sets",
    "unmaskable",
    "tree_sum",
    "tree_broadcast",
    "masked_tree_sum",
    "choose_excluded",
    "AngleEncoder",
]
