"""Array Paillier (skfed.crypto) against python-paillier (phe), side by side.

For each key size, prints encryptions and decryptions per second of
``skfed.crypto`` (n_jobs=1 and 2; DJN and standard obfuscation; the key
owner's CRT encryption, ``private_key.encrypt``) and of phe's
``encrypt``/``decrypt`` in a loop, measured in the same run, with the ratio;
and the time to group-sum 30,000 ciphertexts into 32 bins for 10 features
(one SecureBoost histogram round).

``--schemes`` adds (or, with ``--schemes-only``, prints only) skfed's
Okamoto-Uchiyama beside its Paillier and, when the optional ``sf-heu``
package imports, SecretFlow HEU's OU and Z-Paillier: operations per CPU
second on one core, same run (``benchmarks/_crypto_schemes.py``).

Run::

    python benchmarks/bench_crypto.py                  # 1024 and 2048 bits, < 2 min
    python benchmarks/bench_crypto.py --processes      # also a process-pool encryption
    python benchmarks/bench_crypto.py --schemes-only --key-sizes 2048
                                                       # OU vs Paillier vs HEU
"""

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from skfed.crypto import concatenate, generate_keypair

from _crypto_schemes import schemes_table


def best_rates(cases, repeat):
    """Operations per second of each case, best of ``repeat`` interleaved rounds.

    ``cases`` maps a name to ``(func, count)``. Rounds run every case in turn,
    so a burst of load from other processes on the machine hits all cases
    alike, and the best round of each is kept.
    """
    best = {name: 0.0 for name in cases}
    for _ in range(repeat):
        for name, (func, count) in cases.items():
            best[name] = max(best[name], count / _timed(func))
    return best


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
        tasks = [(int(public_key.n), chunk) for chunk in chunks]
        parts = list(pool.map(_process_encrypt, tasks))
        elapsed = time.perf_counter() - start
    return len(values) / elapsed, concatenate(parts)


def bench_key_size(key_size, n_values, n_phe, repeat, processes):
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    public_key, private_key = generate_keypair(key_size)
    keygen = time.perf_counter() - start
    table_time = _timed(lambda: public_key.djn.table)
    crt_table_time = _timed(lambda: private_key.crt_djn.build(n_jobs=2))
    phe_public, phe_private = public_key.phe_public_key, private_key.phe_private_key

    values = rng.normal(size=n_values)
    few = values[:n_phe]
    encryptions = {
        "phe encrypt loop": (
            lambda: [phe_public.encrypt(v) for v in few.tolist()], n_phe),
        "ours standard, n_jobs=1": (
            lambda: public_key.encrypt(few, obfuscation="standard"), n_phe),
        "ours djn, n_jobs=1": (lambda: public_key.encrypt(values), n_values),
        "ours djn, n_jobs=2": (lambda: public_key.encrypt(values, n_jobs=2), n_values),
        # The key owner's path (SecureBoost's active party, HyFDCA's clients):
        # the same DJN obfuscators computed modulo p**2 and q**2 (CRT).
        "key-owner CRT, n_jobs=1": (lambda: private_key.encrypt(values), n_values),
        "key-owner CRT, n_jobs=2": (
            lambda: private_key.encrypt(values, n_jobs=2), n_values),
    }
    encrypted = public_key.encrypt(values[: n_values // 2], n_jobs=2)
    phe_numbers = [phe_public.encrypt(v) for v in few[: n_phe // 2].tolist()]
    decryptions = {
        "phe decrypt loop": (
            lambda: [phe_private.decrypt(c) for c in phe_numbers], len(phe_numbers)),
        "ours CRT, n_jobs=1": (lambda: private_key.decrypt(encrypted), encrypted.size),
        "ours CRT, n_jobs=2": (
            lambda: private_key.decrypt(encrypted, n_jobs=2), encrypted.size),
    }
    # 30,000 ciphertexts (tiled: the cost does not depend on the plaintexts).
    block = public_key.encrypt(rng.normal(size=1000), n_jobs=2)
    gradients = concatenate([block] * 30)
    bins = rng.integers(0, 32, size=(30000, 10))
    group_sums = {
        f"n_jobs={n_jobs}": (
            lambda n_jobs=n_jobs: gradients.group_sum(bins, 32, n_jobs=n_jobs), 1)
        for n_jobs in (1, 2)
    }
    rows = []
    for op, cases in (("encrypt", encryptions), ("decrypt", decryptions)):
        rates = best_rates(cases, repeat)
        phe_rate = rates[next(iter(cases))]
        rows += [(op, name, r, r / phe_rate) for name, r in rates.items()]
    if processes:
        r, result = process_rate(public_key, values, 2)
        assert np.allclose(private_key.decrypt(result), values)
        rows.insert(4, ("encrypt", "ours djn, 2 processes", r, r / rows[0][2]))
    group_times = {name: 1 / r for name, r in best_rates(group_sums, repeat).items()}
    return keygen, (table_time, crt_table_time), rows, group_times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key-sizes", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--n-values", type=int, default=1000,
                        help="values encrypted by skfed.crypto's DJN per measurement "
                        "(half as many decrypted)")
    parser.add_argument("--n-phe", type=int, default=200,
                        help="values encrypted by phe's loop and by our standard "
                        "obfuscation (both slow); half as many decrypted by phe")
    parser.add_argument("--repeat", type=int, default=2,
                        help="interleaved rounds; the best of each is reported")
    parser.add_argument("--processes", action="store_true",
                        help="also measure encryption with a 2-process pool")
    parser.add_argument("--schemes", action="store_true",
                        help="also compare OU and Paillier (and HEU's, if installed), "
                             "ops per CPU second on one core")
    parser.add_argument("--schemes-only", action="store_true",
                        help="print only the --schemes table")
    args = parser.parse_args()
    if args.schemes_only:
        print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
        schemes_table(args.key_sizes, repeat=max(args.repeat, 3))
        print(f"\nload average after: {os.getloadavg()[0]:.2f}")
        return

    print(f"load average before: {os.getloadavg()[0]:.2f} "
          f"({os.cpu_count()} cores; other processes slow the 2-thread rows most)")
    for key_size in args.key_sizes:
        keygen, table_time, rows, group_times = bench_key_size(
            key_size, args.n_values, args.n_phe, args.repeat, args.processes
        )
        print(f"\n== {key_size}-bit key (keygen {keygen:.2f} s, DJN table "
              f"{table_time[0]:.2f} s, key-owner CRT tables {table_time[1]:.2f} s, "
              "once per key) ==")
        print(f"{'op':<8} {'implementation':<28} {'per second':>12} {'vs phe':>8}")
        for op, name, r, ratio in rows:
            print(f"{op:<8} {name:<28} {r:>12.0f} {ratio:>7.1f}x")
        print("group_sum 30,000 ciphertexts x 10 features into 32 bins: "
              + ", ".join(f"{k}: {v:.2f} s" for k, v in group_times.items()))
    if args.schemes:
        schemes_table(args.key_sizes, repeat=max(args.repeat, 3))
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
