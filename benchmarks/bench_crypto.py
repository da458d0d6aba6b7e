"""Array Paillier (skfed.crypto) against python-paillier (phe), side by side.

For each key size, prints encryptions and decryptions per second of
``skfed.crypto`` (n_jobs=1 and 2; DJN and standard obfuscation) and of phe's
``encrypt``/``decrypt`` in a loop, measured in the same run, with the ratio;
and the time to group-sum 30,000 ciphertexts into 32 bins for 10 features
(one SecureBoost histogram round).

Run::

    python benchmarks/bench_crypto.py                  # 1024 and 2048 bits, < 2 min
    python benchmarks/bench_crypto.py --processes      # also a process-pool encryption
"""

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from skfed.crypto import concatenate, generate_keypair


def rate(func, count, repeat=1):
    """Operations per second of ``func()`` doing ``count`` operations (best of repeat)."""
    best = min(_timed(func) for _ in range(repeat))
    return count / best, best


def _timed(func):
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def _process_encrypt(args):
    # Runs in a worker process: its own key object and DJN table.
    n, values = args
    from skfed.crypto.paillier import public_key_from_n

    return public_key_from_n(n).encrypt(values)


def process_rate(public_key, values, n_workers):
    """Encryptions per second with a process pool (table built per process)."""
    chunks = np.array_split(values, 4 * n_workers)
    with ProcessPoolExecutor(n_workers) as pool:
        start = time.perf_counter()
        parts = list(pool.map(_process_encrypt, [(int(public_key.n), c) for c in chunks]))
        elapsed = time.perf_counter() - start
    return len(values) / elapsed, concatenate(parts)


def bench_key_size(key_size, n_values, n_phe, processes):
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    public_key, private_key = generate_keypair(key_size)
    keygen = time.perf_counter() - start
    table_time = _timed(lambda: public_key.djn.table)
    phe_public, phe_private = public_key.phe_public_key, private_key.phe_private_key

    values = rng.normal(size=n_values)
    phe_values = values[:n_phe].tolist()
    rows = []

    phe_enc, _ = rate(lambda: [phe_public.encrypt(v) for v in phe_values], n_phe)
    rows.append(("encrypt", "phe encrypt loop", phe_enc, 1.0))
    for obfuscation, n_jobs in [("standard", 1), ("djn", 1), ("djn", 2)]:
        r, _ = rate(
            lambda: public_key.encrypt(values, obfuscation=obfuscation, n_jobs=n_jobs),
            n_values,
        )
        rows.append(("encrypt", f"ours {obfuscation}, n_jobs={n_jobs}", r, r / phe_enc))
    if processes:
        r, encrypted = process_rate(public_key, values, 2)
        assert np.allclose(private_key.decrypt(encrypted), values)
        rows.append(("encrypt", "ours djn, 2 processes", r, r / phe_enc))

    encrypted = public_key.encrypt(values, n_jobs=2)
    phe_numbers = [phe_public.encrypt(v) for v in phe_values[: max(1, n_phe // 2)]]
    phe_dec, _ = rate(lambda: [phe_private.decrypt(c) for c in phe_numbers], len(phe_numbers))
    rows.append(("decrypt", "phe decrypt loop", phe_dec, 1.0))
    for n_jobs in (1, 2):
        r, _ = rate(lambda: private_key.decrypt(encrypted, n_jobs=n_jobs), n_values)
        rows.append(("decrypt", f"ours CRT, n_jobs={n_jobs}", r, r / phe_dec))

    # 30,000 ciphertexts (tiled: the cost does not depend on the plaintexts).
    block = public_key.encrypt(rng.normal(size=1000), n_jobs=2)
    gradients = concatenate([block] * 30)
    bins = rng.integers(0, 32, size=(30000, 10))
    group_times = {}
    for n_jobs in (1, 2):
        group_times[n_jobs] = _timed(lambda: gradients.group_sum(bins, 32, n_jobs=n_jobs))
    return keygen, table_time, rows, group_times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key-sizes", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--n-values", type=int, default=2000,
                        help="values encrypted/decrypted by skfed.crypto per measurement")
    parser.add_argument("--n-phe", type=int, default=200,
                        help="values encrypted by phe's loop (it is slow)")
    parser.add_argument("--processes", action="store_true",
                        help="also measure encryption with a 2-process pool")
    args = parser.parse_args()

    for key_size in args.key_sizes:
        keygen, table_time, rows, group_times = bench_key_size(
            key_size, args.n_values, args.n_phe, args.processes
        )
        print(f"\n== {key_size}-bit key (keygen {keygen:.2f} s, "
              f"DJN table {table_time:.2f} s, once per key) ==")
        print(f"{'op':<8} {'implementation':<28} {'per second':>12} {'vs phe':>8}")
        for op, name, r, ratio in rows:
            print(f"{op:<8} {name:<28} {r:>12.0f} {ratio:>7.1f}x")
        print("group_sum 30,000 ciphertexts x 10 features into 32 bins: "
              + ", ".join(f"n_jobs={k}: {v:.2f} s" for k, v in group_times.items()))


if __name__ == "__main__":
    main()
