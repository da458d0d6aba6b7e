"""Every estimator under faults: interrupts, timeouts, and each phase failing.

The sweep discovers the phases of each estimator's ``fit`` and ``predict``
(and of :func:`skfed.alignment.align`) by recording a small run, then makes
one party fail at one call of one phase (see ``tests/_faults.py``): it
raises, hangs past the timeout, or answers with the wrong shape. Each run
must end in an error naming the party (and phase or function) within the
timeout, leave no party thread busy, and leave ``fit``'s estimator unfitted;
an answer of the wrong shape must give an error or, if the protocol never
uses it, the very same model, never a different one.

By default a representative subset runs (the first, middle and last phase
of each ``fit`` and ``predict``; one hang per estimator), about 20 s. The
full sweep (every phase, every kind, ~5 minutes) runs with
``SKFED_FULL_FAULT_SWEEP=1 python -m pytest tests/test_faults.py``.
"""

import _thread
import os
import threading
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import cross_val_score
from sklearn.utils.validation import check_is_fitted

import skfed
from skfed.alignment import DHGroup, align
from skfed.ensemble import SecureBoostClassifier
from skfed.federation import FederationTimeoutError
from skfed.kernel_methods import AVFKAMRanker
from skfed.partition import HorizontalPartition, VerticalPartition
from skfed.preprocessing import _protocol as preprocessing_protocol
from skfed.utils import all_estimators

from ._faults import (
    PROMPT_SECONDS,
    InjectedFault,
    busy_party_threads,
    call_counts,
    inject_fault,
    record_calls,
)

FULL_SWEEP = os.environ.get("SKFED_FULL_FAULT_SWEEP", "") not in ("", "0")
# Tiny fits stop at max_iter: not what these tests are about.
pytestmark = pytest.mark.filterwarnings(
    "ignore::sklearn.exceptions.ConvergenceWarning")

#: Small, fast settings (encryption on, 512-bit keys) for every estimator.
PARAMS = {
    "AVFKAMRanker": dict(max_iter=30, n_random_features=20, batch_size=8,
                         features_per_step=8, random_state=0),
    "FDSKLClassifier": dict(max_iter=10, batch_size=8, n_components_per_iter=4,
                            random_state=0),
    "FDSKLRegressor": dict(max_iter=10, batch_size=8, n_components_per_iter=4,
                           random_state=0),
    "FederatedKernelKMeans": dict(n_clusters=2, n_random_features=10, max_iter=2,
                                  tol=None, coreset_size=20, random_state=0),
    "HyFDCAClassifier": dict(max_iter=3, key_size=512, random_state=0),
    "SecureBoostClassifier": dict(n_estimators=2, max_depth=2, key_size=512,
                                  random_state=0),
    "SecureBoostRegressor": dict(n_estimators=2, max_depth=2, key_size=512,
                                 random_state=0),
    # The transformers on three row holders: every fit runs its protocol
    # between them and a server (a column split sends nothing). Their
    # transform is local: only fit is swept.
    "StandardScaler": dict(partition=HorizontalPartition(3)),
    "MinMaxScaler": dict(partition=HorizontalPartition(3)),
    "MaxAbsScaler": dict(partition=HorizontalPartition(3)),
    "SimpleImputer": dict(partition=HorizontalPartition(3),
                          strategy="most_frequent"),
    "OneHotEncoder": dict(partition=HorizontalPartition(3),
                          handle_unknown="ignore"),
    "KBinsDiscretizer": dict(partition=HorizontalPartition(3), n_bins=3),
}
#: Categories: a few values per column, so the value counts open several.
CATEGORICAL = {"SimpleImputer", "OneHotEncoder"}
#: Estimators without a federated fit of their own (audits of other runs).
NOT_SWEPT = {"PSIAudit"}
ESTIMATORS = {name: cls for name, cls in all_estimators() if name not in NOT_SWEPT}

#: Wrong-shaped answers no one can detect, by design, with the reason.
UNDETECTABLE = {
    ("align", "blind own ids"): "a party that blinds fewer of its own ids "
    "cannot be told from one that holds fewer ids",
}

# party_timeout of a run with a hanging party, for the test of that setting:
# it bounds every wait of the run, not only the hang (1 s let a sound phase
# time out first when both cores were pinned; 3 s holds there).
HANG_TIMEOUT = 3.0
# The sweep's timeout for the hanging party alone (inject_fault's
# hang_timeout): every other wait keeps SOUND_TIMEOUT, so no sound step of
# a loaded machine can time out first, whatever the load.
SWEEP_HANG_TIMEOUT = 1.0
SOUND_TIMEOUT = 60.0
# a hang must end by then, counted from the planted call: timeout + stop +
# a margin wide enough for both cores pinned by other processes (a planted
# hang lasts 60 s)
SLOW = HANG_TIMEOUT + PROMPT_SECONDS


def _data(name):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 6))
    if name in CATEGORICAL:
        return np.round(X), None
    if "Regressor" in name:
        return X, X[:, 0] + 0.1 * rng.normal(size=60)
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


def _output(estimator, X):
    if hasattr(estimator, "decision_function"):
        return estimator.decision_function(X)
    if not hasattr(estimator, "predict"):  # a transformer
        out = estimator.transform(X)
        return out.toarray() if hasattr(out, "toarray") else out
    return estimator.predict(X)


# A 512-bit safe prime, as in tests/alignment (tests only).
_TEST_PRIME_512 = int(
    "AAAB14E691A18512F818947BA61DD3A7394E25BFBF39405A39D8C707877433D8"
    "92CFD6699C855AA9D8E040D978970CBD765FB7E1590E509C0BA11A4C0EB66903", 16)


def _align_run():
    tables = [pd.DataFrame({"id": np.arange(k, 40 + k), f"x{k}": np.arange(40.0)})
              for k in range(3)]
    X, _, _ = align(tables, on="id", group=DHGroup(_TEST_PRIME_512, "test512"),
                    exponent_bits=128)
    return X.to_numpy()


class _Target:
    """One thing to break: a stage (``fit``, ``predict`` or ``align``) to run."""

    def __init__(self, name):
        self.name = name
        self._clean = None

    def clean(self):
        if self._clean is None:
            if self.name == "align":
                self._clean = {"align": _align_run()}
            else:
                X, y = _data(self.name)
                model = ESTIMATORS[self.name](**PARAMS[self.name]).fit(X, y)
                self._clean = {"model": model, "output": _output(model, X)}
        return self._clean

    def stages(self):
        return ("align",) if self.name == "align" else ("fit", "predict")

    def reference(self, stage):
        return self.clean()["align" if stage == "align" else "output"]

    def calls(self, stage):
        """``{(party, key): count}`` of the calls of a clean run of ``stage``."""
        self.clean()  # not recorded
        with record_calls() as calls:
            if stage == "align":
                _align_run()
            elif stage == "fit":
                ESTIMATORS[self.name](**PARAMS[self.name]).fit(*_data(self.name))
            else:
                _output(self.clean()["model"], _data(self.name)[0])
        return call_counts(calls)


_TARGETS = {}


def _target(name):
    if name not in _TARGETS:
        _TARGETS[name] = _Target(name)
    return _TARGETS[name]


def _pick(keys):
    """The representative subset: first, middle and last in call order."""
    keys = list(keys)
    if FULL_SWEEP or len(keys) <= 3:
        return keys
    return [keys[0], keys[len(keys) // 2], keys[-1]]


def _check_case(target, stage, party, key, n, kind):
    """Run one faulty case; return a list of problems (empty if all is well)."""
    estimator, error, output = None, None, None
    X, y = _data(target.name) if stage != "align" else (None, None)
    if stage == "predict":
        estimator = clone(target.clean()["model"]).fit(X, y)
    elif stage == "fit":
        estimator = ESTIMATORS[target.name](**PARAMS[target.name])
    start = time.monotonic()
    with skfed.config_context(party_timeout=SOUND_TIMEOUT):
        with inject_fault(party, key, n, kind,
                          hang_timeout=SWEEP_HANG_TIMEOUT) as fault:
            try:
                if stage == "align":
                    output = _align_run()
                elif stage == "fit":
                    estimator.fit(X, y)
                else:
                    output = _output(estimator, X)
            except Exception as exc:  # noqa: BLE001 - classified below
                error = exc
    elapsed = time.monotonic() - fault.get("fired_at", start)
    where = f"{target.name} {stage}: {party} {key} #{n} {kind}"
    if not fault["fired"]:
        return [f"{where}: the fault was not planted"]
    if kind == "garbage" and fault["garbled"] is False:
        return []  # an answer without a shape (None, a key): nothing to break
    if kind == "garbage" and (target.name, key) in UNDETECTABLE:
        return []
    problems = []
    if stage == "fit" and error is None:
        try:  # the model the faulty fit produced, predicted without faults
            output = _output(estimator, X)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{where}: fit accepted the fault, then predict "
                            f"failed: {type(exc).__name__}: {str(exc)[:200]}")
            output = target.reference(stage)
    if kind == "garbage":
        if error is None and not _same(output, target.reference(stage)):
            problems.append(f"{where}: wrong-shaped answer silently accepted "
                            "(the result differs from the clean run)")
    elif error is None:
        problems.append(f"{where}: no error")
    else:
        text = str(error)
        if f"'{party}'" not in text or (key not in text and
                                        key.removeprefix("local:") not in text):
            problems.append(f"{where}: the error does not name the party and "
                            f"phase: {type(error).__name__}: {text[:300]}")
        if kind == "hang" and elapsed > SLOW:
            problems.append(f"{where}: took {elapsed:.1f} s")
        if kind == "hang" and not _is_timeout(error):
            problems.append(f"{where}: not a timeout: {type(error).__name__}")
    if error is not None and stage == "fit":
        try:
            check_is_fitted(estimator)
            problems.append(f"{where}: fitted attributes left after the failure")
        except NotFittedError:
            pass
    if stage == "predict":
        check_is_fitted(estimator)  # predict never unfits the model
    busy = busy_party_threads(wait=PROMPT_SECONDS)
    if busy:
        problems.append(f"{where}: threads still busy: {busy}")
    return problems


def _same(output, reference):
    output, reference = np.asarray(output), np.asarray(reference)
    return output.shape == reference.shape and np.allclose(output, reference)


def _is_timeout(error):
    while error is not None:
        if isinstance(error, FederationTimeoutError):
            return True
        error = error.__cause__
    return False


def _cases(name, kinds):
    target = _target(name)
    for stage in target.stages():
        counts = target.calls(stage)
        for party, key in _pick(counts):
            n = (counts[party, key] + 1) // 2  # a call in the middle of a loop
            for kind in kinds:
                yield target, stage, party, key, n, kind


def test_every_estimator_is_swept():
    assert set(ESTIMATORS) <= set(PARAMS), (
        "Add small settings for the new estimator to PARAMS in "
        f"tests/test_faults.py: {sorted(set(ESTIMATORS) - set(PARAMS))}")


@pytest.mark.parametrize("name", sorted(PARAMS) + ["align"])
@pytest.mark.parametrize("kind", ["raise", "garbage"])
def test_a_party_failing_in_any_phase_is_named_and_cleaned_up(name, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problems = [p for case in _cases(name, [kind]) for p in _check_case(*case)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", sorted(PARAMS) + ["align"])
def test_a_hanging_party_times_out_in_any_phase(name):
    cases = list(_cases(name, ["hang"]))
    if not FULL_SWEEP:  # one hang per estimator: each costs the timeout
        cases = cases[len(cases) // 2:len(cases) // 2 + 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problems = [p for case in cases for p in _check_case(*case)]
    assert not problems, "\n".join(problems)


def test_the_fault_helper_plants_what_it_says():
    X, y = _data("SecureBoostClassifier")
    clf = SecureBoostClassifier(**PARAMS["SecureBoostClassifier"])
    with inject_fault("party1", "setup/key", kind="raise") as fault:
        with pytest.raises(Exception, match="injected fault") as info:
            clf.fit(X, y)
    assert fault["fired"]
    assert isinstance(info.value.__cause__, InjectedFault)
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)


# -- the acceptance tests of the runtime, on a real estimator ----------------

def _warm_pool():
    X, y = _data("SecureBoostClassifier")
    SecureBoostClassifier(**PARAMS["SecureBoostClassifier"]).fit(X, y)


@pytest.mark.usefixtures("ctrl_c_reaches_python")
def test_ctrl_c_during_cross_val_score_is_a_keyboard_interrupt():
    # error_score=nan used to turn Ctrl-C into a failed fold and carry on.
    _warm_pool()
    baseline = threading.active_count()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 6))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    clf = SecureBoostClassifier(n_estimators=200, key_size=512, random_state=0)
    interrupted, fits = {}, []
    fit = SecureBoostClassifier.fit

    def counted_fit(self, *args, **kwargs):
        fits.append(time.monotonic())
        return fit(self, *args, **kwargs)

    def interrupt():
        interrupted["at"] = time.monotonic()
        _thread.interrupt_main()

    timer = threading.Timer(0.5, interrupt)
    with pytest.raises(KeyboardInterrupt):
        timer.start()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(SecureBoostClassifier, "fit", counted_fit)
            cross_val_score(clf, X, y, cv=3, error_score=np.nan)
    # Event-based: no fold started after Ctrl-C (error_score carried on to
    # the next fold); the time bound only catches a fold run to its end.
    assert len(fits) >= 1 and max(fits) < interrupted["at"]
    assert time.monotonic() - interrupted["at"] < PROMPT_SECONDS
    assert not busy_party_threads(wait=PROMPT_SECONDS)
    assert threading.active_count() <= baseline
    with pytest.raises(KeyboardInterrupt):  # a direct fit stays unfitted
        threading.Timer(0.3, _thread.interrupt_main).start()
        clf.fit(X, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)
    assert not busy_party_threads(wait=PROMPT_SECONDS)


@pytest.mark.usefixtures("ctrl_c_reaches_python")
@pytest.mark.parametrize("asynchronous", [True, False])
@pytest.mark.parametrize("phase", ["preprocess", "train"])
def test_ctrl_c_stops_every_avfkam_thread(phase, asynchronous):
    # The label holder replays its sampling for max_iter steps before
    # training (plan_steps) without reading the stop flag: after Ctrl-C it
    # went on for minutes at max_iter=10**7 (3.6 CPU-s in 20 s), and Ctrl-C
    # itself waited out the runtime's 1 s for a party that does not stop.
    from skfed.kernel_methods._avfkam import _protocol as protocol

    X, y = _data("AVFKAMRanker")
    # preprocess: one label holder replays all 10**7 steps; train: two
    # label holders stop replaying once they drew every seed, then train.
    partition = VerticalPartition(3, active_parties=(0,) if phase == "preprocess"
                                  else (0, 2))
    AVFKAMRanker(partition, **PARAMS["AVFKAMRanker"]).fit(X, y)  # warm the pool
    baseline = threading.active_count()
    ranker = AVFKAMRanker(partition, max_iter=10**7, asynchronous=asynchronous,
                          random_state=0)
    # Ctrl-C from inside the phase once it runs, however slow the machine:
    # event-based, so no wall-clock margin decides where it lands.
    target = "plan_steps" if phase == "preprocess" else "sample_step"
    original = getattr(protocol, target)
    interrupted = {}

    def interrupting(*args, **kwargs):
        if not interrupted:
            interrupted["at"] = time.monotonic()
            _thread.interrupt_main()
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(protocol, target, interrupting)
        with pytest.raises(KeyboardInterrupt):
            ranker.fit(X, y)
    assert interrupted
    assert time.monotonic() - interrupted["at"] < PROMPT_SECONDS
    # No party or driver thread left working (failure mode: minutes).
    assert not busy_party_threads(wait=PROMPT_SECONDS)
    assert threading.active_count() <= baseline
    with pytest.raises(NotFittedError):
        check_is_fitted(ranker)


@pytest.mark.usefixtures("ctrl_c_reaches_python")
@pytest.mark.parametrize("name, target", [
    ("StandardScaler", "holder_centred_sums"),  # the second secure sum
    ("MaxAbsScaler", "holder_exceeds"),  # a round of the secure-OR search
    ("OneHotEncoder", "holder_slot_table"),  # a value-count round
    ("KBinsDiscretizer", "holder_histogram"),  # a secure histogram
])
def test_ctrl_c_stops_a_transformer_fit(name, target):
    # Ctrl-C from inside a holder's step of the protocol (event-based):
    # the fit ends at once, no party thread keeps working, nothing fitted.
    X, y = _data(name)
    ESTIMATORS[name](**PARAMS[name]).fit(X, y)  # warm the pool
    baseline = threading.active_count()
    estimator = ESTIMATORS[name](**PARAMS[name])
    original = getattr(preprocessing_protocol, target)
    interrupted = {}

    def interrupting(*args, **kwargs):
        if not interrupted:
            interrupted["at"] = time.monotonic()
            _thread.interrupt_main()
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(preprocessing_protocol, target, interrupting)
        with pytest.raises(KeyboardInterrupt):
            estimator.fit(X, y)
    assert interrupted
    assert time.monotonic() - interrupted["at"] < PROMPT_SECONDS
    assert not busy_party_threads(wait=PROMPT_SECONDS)
    assert threading.active_count() <= baseline
    with pytest.raises(NotFittedError):
        check_is_fitted(estimator)


def test_a_hanging_party_with_a_short_party_timeout_ends_promptly():
    _warm_pool()
    baseline = threading.active_count()
    X, y = _data("SecureBoostClassifier")
    clf = SecureBoostClassifier(**PARAMS["SecureBoostClassifier"])
    for _ in range(3):  # repeated timeouts do not pile threads up
        start = time.monotonic()
        with skfed.config_context(party_timeout=HANG_TIMEOUT):
            with inject_fault("party1", "histogram/rows", kind="hang"):
                with pytest.raises(FederationTimeoutError,
                                   match="Party 'party1' did not answer within 3 s "
                                         r"\(phase 'histogram/rows'"):
                    clf.fit(X, y)
        # ~3.5 s on an idle machine; a hang without the timeout lasts 60 s
        assert time.monotonic() - start < HANG_TIMEOUT + PROMPT_SECONDS
        assert not busy_party_threads(wait=PROMPT_SECONDS)
        assert threading.active_count() <= baseline
