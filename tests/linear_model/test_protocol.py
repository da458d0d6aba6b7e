"""HyFDCA's protocol (:mod:`skfed.linear_model._protocol`): what the
parties hold and send. The packed encryption's layout, the messages of an
encrypted round, splits that need no encryption or send a part alone, fresh
keys and masks, whole row groups under partial participation, the total
weight's secure sum, and clients that keep sparse blocks sparse."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from skfed.crypto import (EncryptedArray, OUPublicKey, PackedEncoder,
                          PaillierPublicKey)
from skfed.federation import record_messages
from skfed.linear_model import HyFDCAClassifier, _protocol
from skfed.linear_model._protocol import PRECISION_BITS, slots_per_plaintext
from skfed.partition import (HorizontalPartition, HybridPartition,
                             VerticalPartition)


def _small():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X)[::4], y[::4]


# -- encryption and the messages of a round -----------------------------------

@pytest.mark.parametrize("encryption, scheme", [("paillier", PaillierPublicKey),
                                                ("ou", OUPublicKey)])
def test_packing_fills_each_scheme_s_plaintext_without_overflow(encryption,
                                                                 scheme):
    # OU's plaintexts are a third of Paillier's (key_size // 3 - 3 bits):
    # fewer slots, and a packed sum over a row group's clients still fits.
    X, y = _small()
    with record_messages() as rec:
        clf = HyFDCAClassifier(max_iter=2, tol=None, key_size=512,
                               encryption=encryption, random_state=0).fit(X, y)
    part = clf.partition_
    sent = [m for m in rec.messages if m.phase == "inner products"]
    assert sent and all(isinstance(m.payload[0].public_key, scheme)
                        for m in sent)
    # The server adds the parts of the decryptor's partners: one here.
    n_slots = slots_per_plaintext(sent[0].payload[0].public_key,
                                  part.n_column_groups - 1)
    assert n_slots == {"paillier": 12, "ou": 3}[encryption]
    assert n_slots == PackedEncoder.max_slots(512, 1, PRECISION_BITS,
                                              encryption)
    for m in sent:
        (payload,) = m.payload
        rows = len(part.client_rows(int((m.receiver if m.sender == "server"
                                         else m.sender)[len("client"):])))
        assert payload.size == -(-rows // n_slots)
        assert payload.encoder.n_slots == n_slots
        assert payload.encoder.n_bits < int(payload.public_key.max_int).bit_length()


def test_messages_of_an_encrypted_round():
    X, y = _small()
    with record_messages() as rec:
        clf = HyFDCAClassifier(max_iter=3, tol=None, key_size=512,
                               random_state=0).fit(X, y)
    part = clf.partition_
    by_phase = {}
    for m in rec.messages:
        by_phase.setdefault(m.phase, []).append(m)
    # Inner products travel encrypted, both ways.
    for phase in ("inner products",):
        assert by_phase[phase]
        for m in by_phase[phase]:
            (payload,) = m.payload
            assert isinstance(payload, EncryptedArray)
    # The row groups' sums go to one client per row group, which decrypts
    # and shares them with its partners: one decryption per row group.
    rounds = clf.n_iter_ + 1  # the last w is evaluated once more
    returned = [m for m in by_phase["inner products"] if m.sender == "server"]
    assert len(returned) == part.n_row_groups * rounds
    for m in by_phase["inner products/shared"]:
        assert (part.client_cell(int(m.sender[len("client"):]))[0]
                == part.client_cell(int(m.receiver[len("client"):]))[0])
        assert m.payload[0].dtype.kind == "f"
    assert len(by_phase["inner products/shared"]) == (
        part.n_clients - part.n_row_groups) * rounds
    # The decryptor never encrypts its own part: only its partners send.
    uploaded = [m for m in by_phase["inner products"] if m.receiver == "server"]
    assert len(uploaded) == (part.n_clients - part.n_row_groups) * rounds
    decryptors = {m.receiver for m in returned}
    assert not decryptors & {m.sender for m in uploaded}
    # The curvature (setup): one secure sum over every client, and one
    # float back to each; no per-row norm travels.
    assert len(by_phase["curvature/upload"]) == part.n_clients
    assert [m.payload[0].size for m in by_phase["curvature"]] == (
        [1] * part.n_clients)
    assert not any(p.startswith("squared norms") for p in by_phase)
    # The server receives one masked upload per client per secure sum; no
    # column group is ever alone in a 2x2 grid with everyone taking part.
    uploads = by_phase["direction/upload"]
    assert len(uploads) == part.n_clients * clf.n_iter_
    assert all(m.payload[0].dtype == np.uint64 for m in uploads)
    assert not any(p.endswith("/alone/upload") for p in by_phase)
    # A client only ever receives the weights of its own columns.
    for m in by_phase["primal weights"]:
        k = int(m.receiver[len("client"):])
        width = len(part.client_columns(k)) + (part.client_cell(k)[1] == 0)
        assert m.payload[0].shape == (width, 1)
    # No dual variable leaves a client: nothing a client sends has one value
    # per row in plaintext.
    for m in rec.messages:
        if m.sender.startswith("client"):
            for leaf in m.payload:
                if isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f":
                    assert len(X) // 4 not in leaf.shape


def test_horizontal_split_needs_no_encryption():
    X, y = _small()
    with record_messages() as rec:
        clf = HyFDCAClassifier(HorizontalPartition(3), max_iter=5, tol=None,
                               key_size=512, random_state=0).fit(X, y)
    phases = set(clf.communication_.by_phase)
    assert "inner products" not in phases and "squared norms" not in phases
    assert not any(p.startswith("curvature") for p in phases)
    assert clf.communication_.total_ciphertexts == 0
    assert {"direction/upload", "objective report/upload", "step"} <= phases
    assert not any(isinstance(p, EncryptedArray) for m in rec.messages
                   for p in m.payload)


def test_vertical_split_sends_each_client_part_alone():
    # One row group: each column group has a single client, whose weight
    # change the server sees (declared as such in the contract).
    X, y = _small()
    clf = HyFDCAClassifier(VerticalPartition(3), max_iter=3, tol=None,
                           encryption=None, random_state=0).fit(X, y)
    phases = clf.communication_.by_phase
    assert phases["direction/alone/upload"]["messages"] == 3 * clf.n_iter_
    assert "direction/upload" not in phases


def test_keys_do_not_come_from_random_state():
    X, y = _small()
    params = dict(max_iter=1, tol=None, key_size=512, random_state=0)
    moduli = []
    for _ in range(2):
        with record_messages() as rec:
            HyFDCAClassifier(**params).fit(X, y)
        m = next(m for m in rec.messages if m.phase == "inner products")
        moduli.append(int(m.payload[0].public_key.n))
    assert moduli[0] != moduli[1]


def test_masks_differ_between_fits_but_the_model_does_not():
    X, y = _small()
    fits, uploads = [], []
    for _ in range(2):
        with record_messages() as rec:
            fits.append(HyFDCAClassifier(HorizontalPartition(3), max_iter=5,
                                         tol=None, random_state=0).fit(X, y))
        uploads.append([m.payload[0] for m in rec.messages
                        if m.phase == "direction/upload"])
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert not np.array_equal(uploads[0][0], uploads[1][0])


# -- the coordinate steps' curvature (issue 37) ---------------------------------

def _curvature_messages(messages):
    return [m for m in messages if m.phase == "curvature"]


@pytest.mark.parametrize("solver, kappa", [("accelerated", 1.0),
                                           ("paper", 2.0)])
def test_the_curvature_is_one_public_mean_over_all_rows(monkeypatch, solver,
                                                        kappa):
    # Parts of rows: one secure sum at setup, one float back to every
    # client (the mean squared row norm over all rows, the intercept's
    # column included); every row's curvature is kappa times it. No
    # per-row norm travels, and the unweighted mean is used with weights.
    X, y = _small()
    seen = []
    set_curvature = _protocol.client_set_curvature

    def spy(client, mean, kappa):
        set_curvature(client, mean, kappa)
        seen.append(client.sqnorm.copy())

    monkeypatch.setattr(_protocol, "client_set_curvature", spy)
    weights = np.random.RandomState(0).uniform(0.5, 2.0, len(y))
    with record_messages() as rec:
        clf = HyFDCAClassifier(solver=solver, max_iter=2, tol=None,
                               encryption=None, random_state=0).fit(
            X, y, sample_weight=weights)
    mean = np.mean(np.sum(X ** 2, axis=1) + 1.0)
    sent = _curvature_messages(rec.messages)
    assert len(sent) == clf.partition_.n_clients
    for m in sent:
        (value,) = m.payload
        assert m.sender == "server" and value.shape == (1,)
        assert value[0] == pytest.approx(mean, rel=1e-12)
    assert len(seen) == clf.partition_.n_clients
    for sqnorm in seen:
        np.testing.assert_allclose(sqnorm, kappa * mean, rtol=1e-12)
    assert not any(m.phase.startswith("squared norms") for m in rec.messages)
    # dual_curvature="row_norm" keeps the rows' norms, summed like the inner
    # products (the route that gives a client its partners' norms).
    with record_messages() as rec:
        clf = HyFDCAClassifier(solver=solver, dual_curvature="row_norm",
                               max_iter=2, tol=None, key_size=512,
                               random_state=0).fit(X, y)
    part = clf.partition_
    phases = [m.phase for m in rec.messages]
    assert phases.count("squared norms") == part.n_clients
    assert phases.count("squared norms/shared") == (
        part.n_clients - part.n_row_groups)
    assert not _curvature_messages(rec.messages)


@pytest.mark.parametrize("solver", ["accelerated", "paper"])
def test_whole_rows_keep_their_exact_local_norms(solver):
    # One column group: the client holds whole rows and computes each row's
    # norm itself; "auto" is "row_norm" there, and nothing is sent for it.
    X, y = _small()
    kw = dict(solver=solver, max_iter=20, tol=None, encryption=None,
              random_state=0)
    with record_messages() as rec:
        auto = HyFDCAClassifier(HorizontalPartition(2), dual_curvature="auto",
                                **kw).fit(X, y)
    exact = HyFDCAClassifier(HorizontalPartition(2), dual_curvature="row_norm",
                             **kw).fit(X, y)
    np.testing.assert_array_equal(auto.coef_, exact.coef_)
    assert not any(m.phase.startswith(("curvature", "squared norms"))
                   for m in rec.messages)


def test_on_rows_of_equal_norm_the_mean_is_each_row_s_norm():
    # Every row of norm 3 (no intercept): the public mean is each row's
    # norm, so the accelerated solver's "mean" and "row_norm" give the same
    # model.
    X, y = _small()
    X = 3.0 * X / np.linalg.norm(X, axis=1, keepdims=True)
    kw = dict(fit_intercept=False, max_iter=15, tol=None, encryption=None,
              random_state=0)
    auto = HyFDCAClassifier(dual_curvature="mean", **kw).fit(X, y)
    exact = HyFDCAClassifier(dual_curvature="row_norm", **kw).fit(X, y)
    assert np.max(np.abs(auto.coef_)) > 0.01
    np.testing.assert_allclose(auto.coef_, exact.coef_, rtol=0, atol=1e-9)


# -- participation, weights, sparse blocks ------------------------------------

@pytest.mark.parametrize("schedule", ["random", "cyclic"])
def test_only_row_groups_with_every_client_present_move(schedule):
    X, y = _small()
    with record_messages() as rec:
        clf = HyFDCAClassifier(HybridPartition(2, 2), participation=0.5,
                               schedule=schedule, max_iter=12, tol=None,
                               encryption=None, random_state=0).fit(X, y)
    part = clf.partition_
    # The clients of a round get their weights one after the other.
    rounds, previous = [], None
    for m in rec.messages:
        if m.phase == "primal weights":
            if previous != "primal weights":
                rounds.append(set())
            rounds[-1].add(int(m.receiver[len("client"):]))
        previous = m.phase
    assert rounds
    for active in rounds:  # whole row groups only
        for k in active:
            assert set(part.clients_of_row_group(part.client_cell(k)[0])) <= active
    if schedule == "cyclic":  # the row groups take turns
        assert rounds[:4] == [{0, 1}, {2, 3}, {0, 1}, {2, 3}]


@pytest.mark.parametrize("partition, alone", [
    (HybridPartition(3, 2), False), (VerticalPartition(2), True)])
def test_the_total_weight_is_summed_securely_and_sent_to_every_client(
        partition, alone):
    X, y = _small()
    s = np.random.RandomState(6).uniform(0.2, 3.0, size=len(y))
    with record_messages() as rec:
        clf = HyFDCAClassifier(partition, encryption=None, max_iter=2,
                               tol=None, random_state=0).fit(
                                   X, y, sample_weight=s)
    n_clients = clf.partition_.n_clients
    n_groups = clf.partition_.n_row_groups
    sent = [m for m in rec.messages if m.phase == "setup/weights"]
    assert len(sent) == n_clients
    for m in sent:  # S, and nothing else, to every client
        np.testing.assert_allclose(m.payload[0], [s.sum()], rtol=1e-12)
    scales = [m for m in rec.messages if m.phase == "setup/weights/scale"]
    assert len(scales) == n_groups
    uploads = [m for m in rec.messages if m.phase.startswith("setup/weights")
               and m.phase.endswith("upload")]
    assert len(uploads) == n_groups
    assert all(m.phase.endswith("alone/upload") == alone for m in uploads)
    assert all(m.payload[0].dtype == np.uint64 for m in uploads)
    # Without weights there is no such step.
    with record_messages() as rec:
        HyFDCAClassifier(partition, encryption=None, max_iter=2, tol=None,
                         random_state=0).fit(X, y)
    assert not any(m.phase.startswith("setup/weights") for m in rec.messages)


@pytest.mark.parametrize("partition", [HybridPartition(2, 2),
                                       HorizontalPartition(2)],
                         ids=["hybrid", "horizontal"])
def test_clients_hold_csr_blocks_and_nothing_is_densified(monkeypatch,
                                                          partition):
    X, y = _small()
    X[np.abs(X) < 0.8] = 0.0  # ~60% zeros
    blocks = []
    make_state = _protocol.client_state

    def recording(X_k, *args, **kwargs):
        blocks.append(X_k)
        return make_state(X_k, *args, **kwargs)

    def refuse(self, *args, **kwargs):
        raise AssertionError("a sparse matrix was densified during fit")

    monkeypatch.setattr(_protocol, "client_state", recording)
    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array,
                sp.csc_array):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)
    clf = HyFDCAClassifier(partition, encryption=None, max_iter=5, tol=None,
                           random_state=0).fit(sp.csc_matrix(X), y)
    assert len(blocks) == clf.partition_.n_clients
    assert all(sp.issparse(b) and b.format == "csr" for b in blocks)
    # the intercept column travels with column group 0 as a stored column
    assert sum(b.nnz for b in blocks) == np.count_nonzero(X) + len(y)
