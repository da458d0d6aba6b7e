"""FedAvg lifted to hybrid splits: the baseline HyFDCA is compared with.

Our reading of the paper's FedAvg baseline (section 5): every participating
client starts from the global weights of its own columns, runs local
mini-batch SGD on the regularised hinge loss of its own block (the only
scores it can form are ``x_{k,i}^T w_k``, from its columns), and the server
averages each weight over the participating clients that hold its column,
weighted by their numbers of rows. The learning rate is ``a / (b + sqrt(t))``
as in the paper's tuning. Plain numpy, no encryption: FedAvg sends weights in
the clear, and only its optimisation quality is compared here.
"""

import numpy as np

__all__ = ["FedAvgHybrid"]


class FedAvgHybrid:
    """FedAvg on a resolved :class:`~skfed.partition.HybridPartition`.

    Parameters
    ----------
    alpha : float
        ``lambda`` of the objective ``lambda/2 ||w||^2 + mean hinge``.
    local_steps : int
        SGD steps per client per round.
    batch_size : int
    a, b : float
        Learning rate ``a / (b + sqrt(t))`` in round ``t``.
    participation : float
        Fraction of clients per round (random subsets).
    random_state : int
    """

    def __init__(self, alpha, local_steps=10, batch_size=16, a=1.0, b=1.0,
                 participation=1.0, random_state=0):
        self.alpha = alpha
        self.local_steps = local_steps
        self.batch_size = batch_size
        self.a = a
        self.b = b
        self.participation = participation
        self.random_state = random_state

    def run(self, X, y_signed, partition, n_rounds, checkpoints=()):
        """Train; return the global weights at each round in ``checkpoints``."""
        rng = np.random.RandomState(self.random_state)
        K = partition.n_clients
        blocks = [(partition.client_rows(k), partition.client_columns(k))
                  for k in range(K)]
        w = np.zeros(X.shape[1])
        snapshots = {}
        n_part = max(1, int(round(self.participation * K)))
        for t in range(1, n_rounds + 1):
            clients = (range(K) if self.participation >= 1 else
                       sorted(rng.choice(K, n_part, replace=False)))
            lr = self.a / (self.b + np.sqrt(t))
            total = np.zeros_like(w)
            weight = np.zeros_like(w)
            for k in clients:
                rows, cols = blocks[k]
                Xk, yk, wk = X[np.ix_(rows, cols)], y_signed[rows], w[cols].copy()
                for _ in range(self.local_steps):
                    batch = rng.randint(0, len(rows), size=self.batch_size)
                    margins = yk[batch] * (Xk[batch] @ wk)
                    active = margins < 1
                    grad = self.alpha * wk - (
                        (yk[batch] * active) @ Xk[batch]) / self.batch_size
                    wk -= lr * grad
                total[cols] += len(rows) * wk
                weight[cols] += len(rows)
            seen = weight > 0
            w[seen] = total[seen] / weight[seen]
            if t in checkpoints:
                snapshots[t] = w.copy()
        return snapshots
