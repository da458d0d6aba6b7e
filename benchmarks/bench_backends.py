"""Threads versus Ray actors: the same federated fits, side by side.

Every quick-tour case (one per estimator) is fitted twice with the same seed,
once with one thread per party and once with one Ray actor per party (local
worker processes). The table gives both wall times, their ratio, the number
of messages (identical by construction) and Ray's extra cost per message.

Run::

    python benchmarks/bench_backends.py            # every estimator
    python benchmarks/bench_backends.py --quick    # the first two only
"""

import argparse
import time

import numpy as np

import skfed
from skfed._tour import _cases


def _fit(case, backend):
    from sklearn.base import clone

    X_train, X_test, y_train, _ = case.make_data()
    model = clone(case.estimator)
    with skfed.config_context(backend=backend):
        start = time.perf_counter()
        model.fit(X_train, y_train, **case.fit_params)
        seconds = time.perf_counter() - start
        X_eval = X_train if X_test is None else X_test
        out = (model.predict(X_eval) if hasattr(model, "predict")
               else model.labels_)
    return model, seconds, np.asarray(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    import ray

    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    print(f"ray.init: {time.perf_counter() - start:.1f} s (paid once per process)\n")
    cases = _cases()[: 2 if args.quick else None]
    header = (f"{'estimator':<34}{'threads s':>10}{'ray s':>9}{'ratio':>7}"
              f"{'messages':>10}{'ms/msg extra':>14}{'same model':>12}")
    print(header)
    print("-" * len(header))
    for case in cases:
        m_t, s_t, out_t = _fit(case, "threads")
        m_r, s_r, out_r = _fit(case, "ray")
        n_msg = m_t.communication_.total_messages
        same = (m_t.communication_ == m_r.communication_
                and np.array_equal(out_t, out_r))
        extra = 1000 * (s_r - s_t) / max(n_msg, 1)
        print(f"{case.name:<34}{s_t:>10.2f}{s_r:>9.2f}{s_r / s_t:>7.2f}"
              f"{n_msg:>10}{extra:>14.2f}{str(same):>12}")
    ray.shutdown()


if __name__ == "__main__":
    main()
