"""Pictures of messages: the summary bar chart and the timeline.

Drawing code behind :meth:`CommunicationSummary.plot` and
:meth:`MessageRecorder.plot_timeline`, kept apart from the accounting in
:mod:`skfed.federation._accounting` and :mod:`skfed.federation.network`
(matplotlib is imported only here, and only when a picture is asked for).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from .._optional import import_optional
from .._progress import human_bytes

__all__ = ["plot_summary", "plot_timeline"]


def plot_summary(summary, by="phase", ax=None):
    """Draw :meth:`CommunicationSummary.plot` (see there)."""
    plt = import_optional("matplotlib.pyplot", "CommunicationSummary.plot")

    fields, rows = summary._view(by)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.35 * max(len(rows), 3) + 1.2))
    labels = [r[0] for r in rows]
    pos = np.arange(len(rows))
    if by == "party":
        series = [("sent", 2, 1, 0.0), ("received", 4, 3, 0.4)]
        height = 0.4
    else:
        series = [(None, 4, 1, 0.2)]
        height = 0.6
    for name, b_col, m_col, offset in series:
        values = [r[b_col] for r in rows]
        bars = ax.barh(pos + offset - 0.2, values, height=height,
                       label=name)
        for bar, r in zip(bars, rows):
            ax.annotate(f" {r[m_col]} msg", (bar.get_width(),
                        bar.get_y() + bar.get_height() / 2),
                        va="center", fontsize="small")
    ax.set_yticks(pos, labels)
    ax.invert_yaxis()
    ax.set_xlabel("bytes")
    ax.set_title(f"by {by}: {summary.total_messages} messages, "
                 f"{human_bytes(summary.total_bytes)}")
    if by == "party":
        ax.legend(loc="lower right")
    ax.margins(x=0.15)
    return ax


def plot_timeline(messages, ax=None, *, contract=None, parties=None,
                  rounds=None, batch=True, max_arrows=150):
    """Draw :meth:`MessageRecorder.plot_timeline` (see there)."""
    plt = import_optional("matplotlib.pyplot",
                          "MessageRecorder.plot_timeline")
    rules_of = _contract_classifier(contract)
    messages = [m for m in messages
                if rounds is None or m.round in rounds]
    if parties is None:
        parties = sorted({name for m in messages
                          for name in (m.sender, m.receiver)},
                         key=_natural_key)
    lane = {p: i for i, p in enumerate(parties)}
    arrows = []  # [sender, receiver, phase, round, kind, count, bytes]
    for m in messages:
        if m.sender not in lane or m.receiver not in lane:
            continue
        kind = _message_kind(m, rules_of)
        last = arrows[-1] if arrows else None
        if (batch and last is not None and last[:4] ==
                [m.sender, m.receiver, m.phase, m.round]):
            last[4] = min(last[4], kind)
            last[5] += 1
            last[6] += m.n_bytes
        else:
            arrows.append([m.sender, m.receiver, m.phase, m.round, kind,
                           1, m.n_bytes])
    left_out = max(0, len(arrows) - max_arrows)
    arrows = arrows[:max_arrows]
    if ax is None:
        _, ax = plt.subplots(figsize=(max(4, 1.8 * len(parties)),
                                      min(12, 1.5 + 0.25 * len(arrows))))
    for i in range(len(parties)):
        ax.axvline(i, color="0.75", lw=1, zorder=0)
    previous_round = object()
    for y, (snd, rcv, phase, rnd, kind, count, n_bytes) in enumerate(arrows):
        color = _KIND_COLORS[kind]
        ax.annotate("", xy=(lane[rcv], y), xytext=(lane[snd], y),
                    arrowprops=dict(arrowstyle="->", color=color, lw=1.5))
        text = phase if count == 1 else f"{phase} x{count}"
        ax.text((lane[snd] + lane[rcv]) / 2, y - 0.12, text,
                ha="center", va="bottom", fontsize="x-small", color=color)
        if rnd != previous_round and rnd is not None:
            ax.text(-0.45, y, f"round {rnd}", ha="right", va="center",
                    fontsize="x-small", color="0.3")
        previous_round = rnd
    ax.set_xticks(range(len(parties)), parties)
    ax.xaxis.tick_top()
    ax.set_xlim(-1.2, len(parties) - 0.5)
    ax.set_ylim(len(arrows), -1)
    ax.set_yticks([])
    for side in ("left", "right", "bottom"):
        ax.spines[side].set_visible(False)
    Line2D = import_optional("matplotlib.lines",
                             "MessageRecorder.plot_timeline").Line2D
    ax.legend(handles=[Line2D([], [], color=_KIND_COLORS[k], label=label)
                       for k, label in enumerate(_KIND_NAMES)],
              loc="upper left", bbox_to_anchor=(1.0, 1.0),
              fontsize="small", frameon=False)
    if left_out:
        ax.set_xlabel(f"+{left_out} more arrows not shown\n"
                      "(see rounds=, max_arrows=)", fontsize="small")
    return ax


def _natural_key(name):
    import re

    return [(0, int(part), "") if part.isdigit() else (1, 0, part)
            for part in re.split(r"(\d+)", str(name)) if part]


_KIND_NAMES = ("plaintext", "masked", "encrypted")
_KIND_COLORS = ("tab:red", "tab:orange", "tab:green")


def _contract_classifier(contract):
    """A function phase -> whether the contract declares it masked."""
    if contract is None:
        return lambda phase: False
    if hasattr(contract, "_privacy_contract"):
        contract = contract._privacy_contract()
    cache = {}

    def masked(phase):
        if phase not in cache:
            cache[phase] = contract.hides_values(phase)
        return cache[phase]

    return masked


def _message_kind(message, masked):
    """0 plaintext, 1 masked, 2 encrypted."""
    if message.n_ciphertexts:
        return 2
    return 1 if masked(message.phase) else 0
