"""Each party's private key and what it draws from it (FDSKL and AVFKAM).

Part of :mod:`._vertical_features` (which imports every name here), kept
apart so that each module stays short:

- :func:`party_key_mode` and :func:`resolve_party_keys`: where the keys of
  a fit come from (the estimators' ``party_keys`` parameter);
- :func:`party_key`: a party's key, drawn from its own CSPRNG on first use
  when none was given;
- :func:`party_directions` and :func:`party_phases`: a party's own rows of
  ``omega_j`` and its phase of feature ``j``, a pseudo-random function of
  its private key and ``j`` (:func:`~skfed.kernel_approximation.keyed_directions`).

Keys. The paper draws ``omega_j`` from a seed every party knows, so whoever
receives ``omega_j^T x + b`` over many features can solve the linear system
for the other parties' columns (it knows their directions). Here each party
draws its block of ``omega_j`` from its own key, so the receiver knows the
distribution of the other blocks but not the blocks. In a simulation the
keys derive from a given ``random_state`` (reproducible fits; anyone who
knows the seed knows the keys); ``party_keys="os"`` draws them from the
operating system, as a deployment does, and so does the default ``"auto"``
when ``random_state`` is None. The keys are part of each party's share of
the model (:mod:`._export`): prediction needs them.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import secrets

from ..kernel_approximation import (
    derive_party_key,
    keyed_directions,
    keyed_phases,
)

__all__ = [
    "PARTY_KEY_MODES",
    "party_key_mode",
    "resolve_party_keys",
    "party_key",
    "party_directions",
    "party_phases",
]

#: values of the estimators' ``party_keys`` parameter
PARTY_KEY_MODES = ("auto", "random_state", "os")


def party_key_mode(mode, random_state):
    """The key source a fit uses: ``"auto"`` resolved.

    ``"auto"`` is ``"os"`` when ``random_state`` is None (the model is not
    reproducible anyway, so nothing is lost by keys nobody can rebuild) and
    ``"random_state"`` otherwise (a seeded fit is reproducible, and whoever
    knows the seed can rebuild every key).
    """
    if mode not in PARTY_KEY_MODES:
        raise ValueError(f"party_keys must be one of {PARTY_KEY_MODES}, got "
                         f"{mode!r}.")
    if mode == "auto":
        return "os" if random_state is None else "random_state"
    return mode


def resolve_party_keys(mode, seeds, random_state=None):
    """The key of every party for a fit (one entry per party).

    Parameters
    ----------
    mode : {"auto", "random_state", "os"}
        ``"random_state"``: derived from ``seeds`` (drawn from the
        estimator's ``random_state``), so a fit is reproducible and whoever
        knows the seed can rebuild every key (simulation). ``"os"``: ``None``
        for every party, which then draws its own key from the operating
        system inside its own thread (deployment; the model changes with
        every fit). ``"auto"``: see :func:`party_key_mode`.

    seeds : list of int
        One seed per party (used in ``"random_state"`` mode).

    random_state : int, RandomState instance or None
        The estimator's, for ``"auto"``.

    Returns
    -------
    list of bytes or None
    """
    if party_key_mode(mode, random_state) == "random_state":
        return [derive_party_key(seed, k) for k, seed in enumerate(seeds)]
    return [None] * len(seeds)


def party_key(state):
    """This party's private key (drawn from the OS on first use if unset)."""
    if state.key is None:
        # party_keys="os": the party's own CSPRNG, in its own thread.
        state.key = secrets.token_bytes(32)
    return state.key


def party_directions(state, feature_ids):
    """This party's rows of ``omega_j`` (its columns, in its own order)."""
    return keyed_directions(party_key(state), len(state.columns), feature_ids,
                            state.kernel, state.gamma)


def party_phases(state, feature_ids):
    """This party's phases of the features, uniform on ``[0, 2 pi)``."""
    return keyed_phases(party_key(state), feature_ids)
