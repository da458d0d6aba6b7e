"""skfed's Okamoto-Uchiyama and Paillier beside SecretFlow HEU's, ops per CPU second.

Called by ``benchmarks/bench_crypto.py --schemes`` (issue 28). The process
is pinned to one core for the measurement (``os.sched_setaffinity``), every
implementation runs one thread (skfed with ``n_jobs=None``; HEU's thread pool
then has one core), and rates are operations per CPU second
(``time.process_time``), best of ``repeat`` interleaved rounds, so other
processes on a shared machine change them little.

Plaintexts are 100-bit signed integers, the size of SecureBoost's packed
``(h, g)`` pair per row. HEU (the ``sf-heu`` package, imported as ``heu``)
is optional: without it its rows are skipped with a note. HEU's OU draws
110-bit random exponents at 2048 bits, skfed's 256 bits (see
``skfed.crypto._ou``), so HEU's OU does about 14 + 11 fixed-base products
per encryption where skfed does 14 + 26. A diagnostic row runs skfed's
public-key path with a 112-bit exponent (not an option of skfed) to show
how much of the gap is the exponent's length.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import contextlib
import os
import time

import numpy as np

from skfed.crypto import generate_keypair

__all__ = ["schemes_table"]


@contextlib.contextmanager
def one_core():
    """Pin this process to one core (the one it runs on) for the block."""
    if not hasattr(os, "sched_setaffinity"):
        yield None
        return
    before = os.sched_getaffinity(0)
    core = min(before)
    os.sched_setaffinity(0, {core})
    try:
        yield core
    finally:
        os.sched_setaffinity(0, before)


def _cpu_rates(cases, repeat):
    """Operations per CPU second of each case, best of ``repeat`` rounds."""
    best = {name: 0.0 for name in cases}
    for _ in range(repeat):
        for name, (func, count) in cases.items():
            start = time.process_time()
            func()
            elapsed = max(time.process_time() - start, 1e-9)
            best[name] = max(best[name], count / elapsed)
    return best


def _skfed_cases(scheme, key_size, values):
    public_key, private_key = generate_keypair(key_size, scheme=scheme)
    name = {"paillier": "skfed Paillier (DJN)", "ou": "skfed OU"}[scheme]
    # Tables are built once per key, outside the measurement.
    public_key.raw_encrypt(values[:4])
    private_key.raw_encrypt(values[:4])
    c = public_key.raw_encrypt(values)
    modulus = public_key.ciphertext_modulus
    assert [int(v) for v in private_key.raw_decrypt(c)] == [
        int(v) % int(private_key.plaintext_modulus) for v in values]
    n = len(values)
    cases = {
        ("encrypt", name): (lambda: public_key.raw_encrypt(values), n),
        ("encrypt", name + ", key owner"): (lambda: private_key.raw_encrypt(values), n),
        ("decrypt", name): (lambda: private_key.raw_decrypt(c), n),
        ("add", name): (lambda: [a * b % modulus for a, b in zip(c, c)], n),
    }
    if scheme == "ou":
        # Diagnostic only (not offered by skfed): the same public-key path
        # with HEU's short 112-bit exponent instead of 256 bits, to separate
        # the exponent's length from the implementation's speed.
        table, plain = public_key._h_table, values.tolist()
        cases[("encrypt", name + ", 112-bit r (diag.)")] = (
            lambda: public_key._encrypt_chunk(plain, table.random_powers(n, 14)), n)
    return cases


def _heu_cases(key_size, values):
    try:
        from heu import numpy as hnp
        from heu import phe
    except ImportError:
        return {}, ("HEU rows skipped: the optional sf-heu package is not installed "
                    "(pip install sf-heu, Linux/macOS wheels; benchmark only)")
    cases = {}
    for schema, name in ((phe.SchemaType.OU, "HEU OU"),
                         (phe.SchemaType.ZPaillier, "HEU Z-Paillier")):
        kit = hnp.setup(schema, key_size)
        encoder = kit.bigint_encoder()
        array = kit.array(values, encoder)
        encryptor, decryptor, evaluator = (kit.encryptor(), kit.decryptor(),
                                           kit.evaluator())
        c = encryptor.encrypt(array)
        assert (decryptor.decrypt(c).to_numpy(encoder) == values).all()
        n = len(values)
        cases.update({
            ("encrypt", name): (lambda e=encryptor, a=array: e.encrypt(a), n),
            ("decrypt", name): (lambda d=decryptor, c=c: d.decrypt(c), n),
            ("add", name): (lambda v=evaluator, c=c: v.add(c, c), n),
        })
    return cases, None


def schemes_table(key_sizes, n_values=2000, repeat=3):
    """Print ops per CPU second on one core: skfed OU/Paillier, HEU OU/Z-Paillier."""
    rng = np.random.default_rng(0)
    values = np.empty(n_values, dtype=object)
    values[:] = [int(v) << 60 for v in rng.integers(-2**40, 2**40, n_values).tolist()]
    with one_core() as core:
        print(f"\n== operations per CPU second, one core (cpu {core}), 100-bit "
              f"plaintexts, {n_values} per call, best of {repeat} ==")
        for key_size in key_sizes:
            cases = {}
            for scheme in ("paillier", "ou"):
                cases.update(_skfed_cases(scheme, key_size, values))
            heu, note = _heu_cases(key_size, values)
            cases.update(heu)
            rates = _cpu_rates(cases, repeat)
            print(f"\n{key_size}-bit keys")
            print(f"{'op':<8} {'implementation':<30} {'ops / CPU s':>12} "
                  f"{'vs skfed Paillier':>18}")
            for (op, name), rate in rates.items():
                ref = rates[(op, "skfed Paillier (DJN)")]
                print(f"{op:<8} {name:<30} {rate:>12.0f} {rate / ref:>17.1f}x")
            if note:
                print(note)
            elif ("encrypt", "HEU OU") in rates:
                ratio = rates[("encrypt", "skfed OU")] / rates[("encrypt", "HEU OU")]
                owner = (rates[("encrypt", "skfed OU, key owner")]
                         / rates[("encrypt", "HEU OU")])
                short = (rates[("encrypt", "skfed OU, 112-bit r (diag.)")]
                         / rates[("encrypt", "HEU OU")])
                print(f"skfed OU / HEU OU encryption: {ratio:.2f}x (public key), "
                      f"{owner:.2f}x (key owner); with HEU's short exponent "
                      f"(diagnostic, not offered) {short:.2f}x")
