"""Timelines: round numbers and times on recorded messages, and the plots."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402

from skfed.alignment import PSIAudit, align  # noqa: E402
from skfed.federation import (  # noqa: E402
    CommunicationSummary,
    Federation,
    Message,
    current_round,
    protocol_round,
    protocol_rounds,
    record_messages,
)
from tests._instances import CHECK_PARAMS  # noqa: E402
from skfed.utils import all_estimators  # noqa: E402

ESTIMATORS = dict(all_estimators())


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _echo(state, x):
    return x


def test_message_stays_backward_compatible():
    m = Message("a", "b", "p", 1, 0, 8, (1,))
    assert m.time is None and m.round is None
    assert Message._make(["a", "b", "p", 1, 0, 8, (1,)]) == m


def test_rounds_and_times_are_recorded_also_for_nested_calls():
    def forward(state, x):  # runs on b's thread: inherits the caller's round
        return state.fed["a"].call(_echo, x, sender="b", phase="back").result()

    with record_messages() as rec, Federation({"a": {}, "b": {}}) as fed:
        fed["b"].call(lambda s: setattr(s, "fed", fed)).result()
        fed["b"].call(_echo, -1, sender="a", phase="setup").result()
        for t in protocol_rounds(range(3)):
            fed["b"].call(forward, t, sender="a", phase="go").result()
        with protocol_round(7):
            assert current_round() == 7
            fed["b"].call(_echo, 0, sender="a", phase="late").result()
        assert current_round() is None
    assert [(m.phase, m.round) for m in rec.messages] == [
        ("setup", None), ("go", 0), ("back", 0), ("go", 1), ("back", 1),
        ("go", 2), ("back", 2), ("late", 7)]
    times = rec.times()
    assert np.all(np.diff(times) >= 0) and times[0] >= 0


def test_protocol_rounds_restores_the_round_on_break():
    with protocol_round(3):
        for t in protocol_rounds(range(10)):
            if t == 2:
                break
        assert current_round() == 3


def test_table_by_party_and_unknown_view():
    summary = CommunicationSummary([("a", "b", "p", 2, 4, 0, 32),
                                    ("b", "a", "q", 1, 1, 0, 8)])
    table = summary.table(by="party")
    assert "sent_bytes" in table and "received_messages" in table
    line_a = next(line for line in table.splitlines() if line.startswith("a "))
    assert line_a.split()[1:] == ["2", "32", "1", "8"]
    with pytest.raises(ValueError, match="'phase', 'link' or 'party'"):
        summary.table(by="sender")
    with pytest.raises(ValueError, match="'phase', 'link' or 'party'"):
        summary.plot(by="round")


def _kinds(ax):
    """Colours of the drawn arrows."""
    return [a.arrow_patch.get_edgecolor() for a in ax.texts
            if getattr(a, "arrow_patch", None) is not None]


def _fit_recorded(name):
    est = ESTIMATORS[name](**CHECK_PARAMS.get(name, {}))
    if name == "AVFKAMRanker":  # two active parties: scores cross each step
        from skfed.partition import VerticalPartition

        est.set_params(partition=VerticalPartition(3, active_parties=(0, 1)),
                       max_iter=40)
    if "key_size" in est.get_params():
        est.set_params(key_size=512)
    if name == "AVFKAMRanker":
        X, y = make_classification(n_samples=80, n_features=6,
                                   weights=[0.8], random_state=0)
    else:
        X, y = make_classification(n_samples=60, n_features=6, random_state=0)
    if name == "FederatedKernelKMeans":
        y = None
    if name.endswith("Regressor"):
        y = X[:, 0] + 0.1 * X[:, 1]
    with record_messages() as rec:
        est.fit(X, y)
    return est, rec


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_plots_render_for_every_estimator(name):
    est, rec = _fit_recorded(name)
    rounds = {m.round for m in rec.messages}
    assert len(rounds - {None}) >= 2, f"{name} sets no protocol rounds"
    ax = rec.plot_timeline(contract=est, rounds=range(3))
    assert len(_kinds(ax)) > 0
    assert [t.get_text() for t in ax.get_xticklabels()]
    for by in ("phase", "link", "party"):
        ax = est.communication_.plot(by=by)
        assert len(ax.patches) > 0


def test_timeline_colours_encrypted_masked_and_plaintext():
    from skfed.crypto import generate_keypair
    from skfed.privacy import Contract, Masked, Public, Rule

    pk, _ = generate_keypair(512)
    contract = Contract("demo", rules=[
        Rule("masked", "*", "*", (Masked("mask"),)),
        Rule("plain", "*", "*", (Public("x"),))])
    with record_messages() as rec, Federation({"a": {}, "b": {}}) as fed:
        for phase, value in (("plain", 1.0), ("masked", 2.0),
                             ("enc", pk.encrypt(np.ones(2)))):
            fed["b"].call(_echo, value, sender="a", phase=phase).result()
    colours = [matplotlib.colors.to_hex(c) for c in
               _kinds(rec.plot_timeline(contract=contract))]
    expected = [matplotlib.colors.to_hex(c) for c in
                ("tab:red", "tab:orange", "tab:green")]
    assert colours == expected
    # Without a contract only ciphertexts are told apart.
    colours = [matplotlib.colors.to_hex(c) for c in _kinds(rec.plot_timeline())]
    assert colours == [expected[0], expected[0], expected[2]]


def test_timeline_batches_and_caps_arrows():
    with record_messages() as rec, Federation({"a": {}, "b": {}}) as fed:
        for t in protocol_rounds(range(4)):
            for _ in range(3):
                fed["b"].call(_echo, t, sender="a", phase="step").result()
    assert len(_kinds(rec.plot_timeline())) == 4
    assert len(_kinds(rec.plot_timeline(batch=False))) == 12
    ax = rec.plot_timeline(max_arrows=2)
    assert len(_kinds(ax)) == 2 and "+2 more arrows not shown" in ax.get_xlabel()


def test_plots_render_for_alignment():
    rng = np.random.default_rng(0)
    ids = [rng.choice(np.arange(100), size=30, replace=False) for _ in range(2)]
    tables = [pd.DataFrame({"id": ids[0], "x": rng.normal(size=30)}),
              pd.DataFrame({"id": ids[1], "z": rng.normal(size=30)})]
    with record_messages() as rec:
        align(tables, on="id")
    ax = rec.plot_timeline(contract=PSIAudit())
    assert len(_kinds(ax)) > 0
    assert len(rec.summary().plot(by="link").patches) > 0
