"""Planted leaks in federated kernel k-means, and the data they run on.

Shared by test_contract.py (``check_messages`` must catch each leak) and
test_attacks.py (``row_reconstruction`` must reach ~0 relative error).
"""

import numpy as np
from sklearn.datasets import make_blobs
from sklearn.preprocessing import StandardScaler

import skfed.cluster._refine as refine
from skfed.cluster import FederatedKernelKMeans
from skfed.federation import record_messages

X_raw, _ = make_blobs(150, n_features=6, centers=3, center_box=(-10, 30),
                      random_state=0)
X_std = StandardScaler().fit_transform(X_raw)


def estimator(**params):
    return FederatedKernelKMeans(3, max_iter=4, tol=None, random_state=0,
                                 **{"partition": 3, **params})


def fit_recorded(est, X, **fit_params):
    with record_messages() as rec:
        est.fit(X, **fit_params)
    return rec.messages


def _user_uploads_its_rows(original, phase):
    def leaky_setup(fed, users, gamma, *, draw_key):
        out = original(fed, users, gamma, draw_key=draw_key)
        for u in users:
            rows = fed[u].call(lambda state: state.X).result()
            fed["server"].call(lambda state, rows: None, rows, sender=u,
                               phase=phase).result()
        return out
    return leaky_setup


class _Total:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def _take(state, value):
    state.stash.setdefault("leak", []).append(np.asarray(value, dtype=float))


def _plaintext_sums(real, moments_only):
    """Users upload their sums in plaintext, the server adds them; the moment
    upload is the former protocol's ``(n, sum x, sum ||x||^2)``."""

    def leaky(fed, parties, receiver, local, *args, phase="secure-sum",
              encoder=None, sender=None):
        # The setup's sums (moments_only) or the others: one module holds both.
        if (phase != "setup: moments" if moments_only
                else phase.startswith("setup:")):
            return real(fed, parties, receiver, local, *args, phase=phase,
                        encoder=encoder, sender=sender)
        if phase == "setup: moments":
            def local(state):
                X = state.X
                return np.concatenate([[len(X)], X.sum(0), [np.sum(X * X)]])
        values = [fed[p].call(local, *args, sender=sender,
                              phase=f"{phase}/request").result() for p in parties]
        for p, v in zip(parties, values):
            fed[receiver].call(_take, v, sender=p, phase=f"{phase}/upload").result()
        total = fed[receiver].call(
            lambda state: np.sum(state.stash.pop("leak"), axis=0)).result()
        return _Total(total[1:] if phase == "setup: moments" else total)

    return leaky


def _totals_to_the_server(fed, users, *, n_clusters, n_features, encoder):
    """The refinement as first built: the users' totals are summed to the
    server, which decodes them and relays them to the users."""
    server = "server"
    total = refine.secure_sum(fed, users, server, refine.user_cluster_totals,
                              n_clusters, n_features,
                              phase=refine.PHASE_REFINE_TOTALS,
                              encoder=encoder).result()
    out = fed.gather(fed[u].call(refine.user_take_totals, total, n_clusters,
                                 n_features, sender=server,
                                 phase=refine.PHASE_REFINE_RELAY)
                     for u in users)
    return out[0]
