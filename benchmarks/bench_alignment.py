"""Private entity alignment: Curve25519 against the MODP groups, side by side.

Everything printed is measured in one run of this script, each ``align``
in a fresh Python process (so that its peak memory is its own):

1. Group operations per second: X25519 through ``cryptography`` (the
   default group; the call holds the GIL, so the workers are processes)
   against a 256-bit-exponent modular exponentiation with gmpy2 in RFC
   3526's 2048- and 3072-bit groups (threads), with 1 and 2 workers.
2. End-to-end ``align`` of P parties with N ids each (half of every set
   common to all, half its own; the hub holds the label), in each group,
   beside the plaintext inner join it replaces (pandas ``merge``): wall
   time, CPU (the parties' threads and their worker processes), ids per
   second, bytes sent, peak memory, and the ratios against ``"modp2048"``
   when it ran at the same size. The 2048-bit group is below PSI's 128-bit
   floor and runs here only with the explicit opt-in
   (``allow_insecure_keys``), as a comparison.
3. The memory of the largest Curve25519 run extrapolated to 10^7 ids per
   party (labelled as such).

Run::

    python benchmarks/bench_alignment.py             # 20,000 ids: all three groups
    python benchmarks/bench_alignment.py --quick     # 5,000 ids
    python benchmarks/bench_alignment.py --sizes 20000 1000000 --big-groups curve25519
    python benchmarks/bench_alignment.py --parties 3 --sizes 1000000 \\
        --big-groups curve25519 --n-jobs 2
    python benchmarks/bench_alignment.py --audit     # who learns what, measured

``--big-groups`` limits the sizes above 100,000 to the groups named (a
10^6 run in the 2048-bit group takes about 12 minutes on two idle cores).
``--audit`` prints instead the privacy audit of the protocol (three
parties, default group): the contract violations and the attack table of
:func:`skfed.privacy.audit` (``set_sizes``, ``id_linking``).

The machine may be shared: the load average is printed before and after.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings

import numpy as np
import pandas as pd

GROUPS = ("curve25519", "modp2048", "modp3072")
REFERENCE = "modp2048"


def make_tables(n_ids, n_parties=2, seed=0):
    """P parties with n_ids customers each: n_ids / 2 common to all, the
    other half each party's own (50% overlap for two parties)."""
    rng = np.random.default_rng(seed)
    n_common = n_ids // 2
    n_own = n_ids - n_common
    universe = rng.choice(10**12, size=n_common + n_parties * n_own, replace=False)
    tables = []
    for k in range(n_parties):
        own = universe[n_common + k * n_own:n_common + (k + 1) * n_own]
        ids = rng.permutation(np.concatenate([universe[:n_common], own]))
        table = pd.DataFrame({"id": ids, f"x{k}": rng.normal(size=n_ids)})
        if k == 0:
            table["label"] = rng.integers(0, 2, size=n_ids)
        tables.append(table)
    return tables


def _rss_mb():
    """Peak resident memory of this process and of its largest child, MB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, child


def _cpu():
    usage = [resource.getrusage(who) for who in
             (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


def run_case(group, n_ids, n_parties, n_jobs):
    """One ``align`` (in this process); a dict of what was measured."""
    import skfed
    from skfed.alignment import align
    from skfed.crypto import InsecureKeyWarning

    rss_start, _ = _rss_mb()  # the interpreter and its imports
    tables = make_tables(n_ids, n_parties)
    rss_before, _ = _rss_mb()
    cpu = _cpu()
    with skfed.config_context(allow_insecure_keys=group == REFERENCE,
                              party_timeout=None), warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureKeyWarning)
        start = time.perf_counter()
        X, _, _, communication = align(tables, label="label", group=group,
                                       n_jobs=n_jobs, return_communication=True)
        seconds = time.perf_counter() - start
    cpu = _cpu() - cpu
    rss_peak, rss_child = _rss_mb()
    plain = min(_timed_merge(tables) for _ in range(3))
    assert len(X) == n_ids // 2, (len(X), n_ids)
    return {"group": group, "n_ids": n_ids, "n_parties": n_parties,
            "seconds": seconds, "cpu": cpu, "merge": plain,
            "bytes": communication.total_bytes,
            "messages": communication.total_messages, "rss_start": rss_start,
            "rss_before": rss_before, "rss_peak": rss_peak,
            "rss_child": rss_child}


def _timed_merge(tables):
    start = time.perf_counter()
    joined = tables[0]
    for table in tables[1:]:
        joined = joined.merge(table, on="id")
    return time.perf_counter() - start


def measure(group, n_ids, n_parties, n_jobs):
    """``run_case`` in a fresh Python process."""
    command = [sys.executable, __file__, "--case", group, str(n_ids),
               str(n_parties), str(n_jobs)]
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def operation_rates(n_values=2000, repeat=3):
    """``{(group, workers): operations per second}``, best of ``repeat``."""
    import gmpy2

    from skfed.alignment import GROUPS as NAMED
    from skfed.alignment import _x25519
    from skfed.crypto._parallel import parallel_map

    curve = NAMED["curve25519"]
    key = curve.random_exponent()
    n_points = 8 * n_values  # cheaper than a MODP exponentiation: more of them
    points = curve._to_message(curve.hash_ids(range(n_points)))
    cases = {}
    for workers in (1, 2):
        def x25519(workers=workers):
            # As the protocol runs them, points checked on receipt included:
            # in the calling thread for one worker, else in forked worker
            # processes (threads would not help: the exchange holds the GIL).
            saved = _x25519._MIN_FORK_ITEMS
            _x25519._MIN_FORK_ITEMS = n_points + 1 if workers == 1 else 0
            try:
                curve._exponentiate(points, key, workers, "bench", "bench")
            finally:
                _x25519._MIN_FORK_ITEMS = saved
            return n_points
        cases[("curve25519", workers)] = x25519
        for name in ("modp2048", "modp3072"):
            group = NAMED[name]
            exponent = group.random_exponent(256)
            bases = group.hash_ids(range(n_values // 8))

            def modp(workers=workers, group=group, exponent=exponent, bases=bases):
                parallel_map(lambda chunk: gmpy2.powmod_base_list(
                    chunk, exponent, group.p), bases, workers)
                return len(bases)
            cases[(name, workers)] = modp
    best = {}
    for _ in range(repeat):  # interleaved: a burst of load hits every case
        for case, func in cases.items():
            start = time.perf_counter()
            count = func()
            best[case] = max(best.get(case, 0.0), count / (time.perf_counter() - start))
    return best


def privacy_audit(n_ids=500, n_customers=1000, seed=0):
    """The audit table of three parties with ``n_ids`` customers each."""
    from skfed.alignment import PSIAudit
    from skfed.privacy import audit

    rng = np.random.default_rng(seed)
    customers = np.array([f"C{i:06d}" for i in range(n_customers)], dtype=object)
    sets = [list(rng.choice(customers, size=n_ids, replace=False))
            for _ in range(3)]
    names = ["bank", "insurer", "shop"]
    report = audit(PSIAudit(party_names=names, hub="bank",
                            universe=list(customers)), sets)
    common = len(set.intersection(*map(set, sets)))
    print(f"3 parties (hub: bank), {n_ids} of {n_customers:,} customers each, "
          f"{common} in common, group {report.estimator.group!r}; the "
          f"attacker's universe: all {n_customers:,} customers. "
          f"{len(report.messages)} messages, {len(report.violations)} contract "
          f"violation(s), {report.seconds:.1f} s.")
    with pd.option_context("display.width", 120, "display.max_rows", 100):
        print(report.attacks.round(4).to_string(index=False))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 ids")
    parser.add_argument("--sizes", type=int, nargs="+",
                        help="ids per party (default 20,000)")
    parser.add_argument("--groups", nargs="+", default=list(GROUPS),
                        choices=GROUPS, help="groups to run (default: all)")
    parser.add_argument("--big-groups", nargs="+", choices=GROUPS,
                        help="groups to run at sizes above 100,000")
    parser.add_argument("--parties", type=int, default=2)
    parser.add_argument("--n-jobs", type=int, default=None,
                        help="workers per party (default None: one worker "
                             "process per party for Curve25519, the party's "
                             "own thread for MODP; the parties already use "
                             "both cores)")
    parser.add_argument("--no-rates", action="store_true",
                        help="skip table 1")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each align, interleaved across groups; "
                             "the fastest is kept (default 1)")
    parser.add_argument("--audit", action="store_true",
                        help="print the privacy audit (who learns what) only")
    parser.add_argument("--case", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        group, n_ids, n_parties, n_jobs = args.case
        print(json.dumps(run_case(group, int(n_ids), int(n_parties),
                                  None if n_jobs == "None" else int(n_jobs))))
        return
    if args.audit:
        privacy_audit()
        return
    sizes = args.sizes or ([5000] if args.quick else [20000])
    print(f"cores: {os.cpu_count()}, load average before: "
          f"{', '.join(f'{v:.1f}' for v in os.getloadavg())} (1, 5, 15 min; the "
          "machine is shared: timings are under that load)")

    if not args.no_rates:
        print("\n1. Group operations per second (measured, best of 3 rounds)")
        rates = operation_rates(1000 if args.quick else 4000)
        print(f"{'group':<11} {'operation':<44} {'1 worker':>9} {'2 workers':>10}")
        labels = {"curve25519": "check + X25519 (cryptography), processes",
                  "modp2048": "x^a mod p, 256-bit a (gmpy2), threads",
                  "modp3072": "x^a mod p, 256-bit a (gmpy2), threads"}
        for name in GROUPS:
            print(f"{name:<11} {labels[name]:<44} {rates[(name, 1)]:>9.0f} "
                  f"{rates[(name, 2)]:>10.0f}")
        for name in ("modp2048", "modp3072"):
            ratio = rates[("curve25519", 1)] / rates[(name, 1)]
            print(f"   X25519 is {ratio:.1f}x faster than a {name} "
                  "exponentiation (1 worker)")

    print(f"\n2. align() of {args.parties} parties, N ids each, N/2 common to all "
          f"(measured; n_jobs={args.n_jobs})")
    print("   CPU: the parties' threads and their worker processes; RSS: peak "
          "resident memory of the run's process (before align: the tables)")
    print(f"{'N per party':>11} {'group':>10} {'align (s)':>10} {'CPU (s)':>8} "
          f"{'merge (s)':>9} {'ids/s':>8} {'MB sent':>8} {'RSS MB':>7} "
          f"{'(before)':>8} {'wall vs 2048':>12} {'CPU vs 2048':>11} "
          f"{'bytes vs 2048':>13}")
    results = []
    for n_ids in sizes:
        groups = args.groups
        if n_ids > 100_000 and args.big_groups:
            groups = [g for g in groups if g in args.big_groups]
        measured = {}
        for _ in range(args.repeat):  # interleaved: load bursts hit all groups
            for group in groups:
                r = measure(group, n_ids, args.parties, args.n_jobs)
                if group not in measured or r["seconds"] < measured[group]["seconds"]:
                    measured[group] = r
        reference = measured.get(REFERENCE)
        for group, r in measured.items():
            results.append(r)
            ratios = ("", "", "")
            if reference is not None:
                ratios = (f"{reference['seconds'] / r['seconds']:.1f}x",
                          f"{reference['cpu'] / r['cpu']:.1f}x",
                          f"1/{reference['bytes'] / r['bytes']:.1f}")
            print(f"{n_ids:>11,} {group:>10} {r['seconds']:>10.1f} {r['cpu']:>8.1f} "
                  f"{r['merge']:>9.3f} {args.parties * n_ids / r['seconds']:>8.0f} "
                  f"{r['bytes'] / 1e6:>8.1f} {r['rss_peak']:>7.0f} "
                  f"{r['rss_before']:>8.0f} {ratios[0]:>12} {ratios[1]:>11} "
                  f"{ratios[2]:>13}")

    curve = [r for r in results if r["group"] == "curve25519"]
    if curve:
        big = max(curve, key=lambda r: r["n_ids"])
        scale = 10**7 / big["n_ids"]
        tables = big["rss_before"] - big["rss_start"]
        protocol = big["rss_peak"] - big["rss_before"]
        peak = big["rss_start"] + scale * (tables + protocol)
        print(f"\n3. Peak memory at 10^7 ids per party, EXTRAPOLATED linearly "
              f"from the {big['n_ids']:,}-id Curve25519 run ({args.parties} "
              f"parties; not run): interpreter {big['rss_start']:.0f} MB + "
              f"tables {tables * scale / 1024:.1f} GB + protocol "
              f"{protocol * scale / 1024:.1f} GB = {peak / 1024:.1f} GB "
              f"({(tables + protocol) * 2**20 / (big['n_ids'] * args.parties):.0f} "
              f"bytes per id per party). The largest worker process peaked at "
              f"{big['rss_child']:.0f} MB resident, mostly pages shared with "
              "the parent through the fork.")
    print(f"\nload average after: {', '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
