"""The contract rules of :func:`skfed.federation.secure_sum.secure_sum`.

The runtime sends the messages; their privacy rules are declared here, in the
privacy core, so that the runtime knows nothing of contracts.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from ._contract import Masked, RandomIds, Rule

__all__ = ["secure_sum_rules", "SEED_SIZE"]


#: a pair seed: 128 bits, as 16 bytes
SEED_SIZE = 16


def secure_sum_rules(phase, party_role="party", receiver_role="server",
                     max_size=None):
    """Privacy-contract rules for one :func:`~skfed.federation.secure_sum.secure_sum` ``phase``.

    The broadcast request is not included: its content is the caller's.
    ``max_size`` bounds each upload (the size of the summed value; see
    :class:`~skfed.privacy.Element`).
    """
    return [
        Rule(f"{phase}/keys", sender=party_role, receiver=party_role,
             elements=(RandomIds("pair seed from the sender's CSPRNG",
                                 dtype="u", max_size=SEED_SIZE),),
             note="a fresh 128-bit seed per pair of contributors"),
        Rule(f"{phase}/upload", sender=party_role, receiver=receiver_role,
             elements=(Masked("pairwise ring masks (uniform in Z_2^64)",
                              dtype="u", max_size=max_size),),
             note="each upload is uniform; only the sum decodes"),
    ]
