"""A passive party in its own process: loads its share, answers queries."""

import pickle

import numpy as np


def serve(share_path, columns_path, connection):
    """Answer ``(record_ids, rows)`` queries on the pipe until ``None``."""
    with open(share_path, "rb") as f:
        share = pickle.load(f)
    X_own = np.load(columns_path)
    while True:
        query = connection.recv()
        if query is None:
            break
        connection.send(share.answer(X_own, *query))
    connection.close()
