"""One progress format: ``verbose=1`` prints the same kind of line everywhere."""

import re

import pytest
from sklearn.datasets import make_classification

import skfed.preprocessing
from skfed._progress import MAX_LINES, Progress
from skfed.utils import all_estimators

from ._instances import CHECK_PARAMS

LINE = re.compile(r"^\[\w+\] (round|step|iteration) (\d+)/(\d+): .+, "
                  r"\d+\.\d\d s, \d+(\.\d)? (B|kB|MB|GB) sent"
                  r"(; (about|at most) \d+(\.\d)? (s|min|h) for the other \d+ "
                  r"\w+s)?$")

# Enough rounds for the every-k-th rule to matter where it is cheap.
LONG = {"FDSKLClassifier": {"max_iter": 200, "early_stopping": False},
        "FDSKLRegressor": {"max_iter": 200, "early_stopping": False},
        "HyFDCAClassifier": {"max_iter": 120}}


#: The federated transformers (skfed.preprocessing) take no ``verbose``, by
#: design: their fit is a handful of secure sums (two for StandardScaler,
#: sixteen for MinMaxScaler's extremes, at most eleven more per quantile
#: search) done in well under a second on the suite's data, not an
#: iterative training; its number of rounds is not known in advance (the
#: value counts rehash colliding slots, a quantile search stops once exact),
#: so "round i/N" would have no N; and their parameters are scikit-learn's
#: namesakes' (which print nothing) plus the partition's. The rounds show in
#: ``communication_`` and in a recorded timeline instead.
NO_PROGRESS = {"StandardScaler", "MinMaxScaler", "MaxAbsScaler",
               "SimpleImputer", "OneHotEncoder", "KBinsDiscretizer"}


def test_transformers_without_progress_take_no_verbose():
    # the exclusion stays exact: a new estimator is not excused, and a
    # transformer given a verbose must then pass the test below
    assert NO_PROGRESS == set(skfed.preprocessing.__all__)
    for name, cls in all_estimators():
        assert ("verbose" in cls().get_params()) == (name not in NO_PROGRESS), name


@pytest.mark.parametrize("name, cls", [(name, cls) for name, cls in all_estimators()
                                       if name not in NO_PROGRESS])
def test_verbose_one_prints_one_format(name, cls, capsys):
    est = cls(**{**CHECK_PARAMS.get(name, {}), **LONG.get(name, {})},
              verbose=1)
    X, y = make_classification(n_samples=80, n_features=6,
                               weights=[0.7] if name == "AVFKAMRanker" else None,
                               random_state=0)
    if name.endswith("Regressor"):
        y = X[:, 0] + 0.5 * X[:, 1]
    est.fit(X, None if name == "FederatedKernelKMeans" else y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert 1 <= len(lines) <= MAX_LINES + 2, len(lines)
    for line in lines:
        assert LINE.match(line), line
    numbers = [int(LINE.match(line).group(2)) for line in lines]
    assert numbers == sorted(numbers)
    total = int(LINE.match(lines[0]).group(3))
    assert total == est.get_params().get("max_iter",
                                         est.get_params().get("n_estimators"))


def test_every_kth_line_plus_first_and_last(capsys):
    progress = Progress("Demo", 200, verbose=1)
    for i in range(1, 201):
        progress.report(i, "loss 1")
    lines = capsys.readouterr().out.strip().splitlines()
    assert progress.every == 5 and len(lines) == 41
    assert lines[0].startswith("[Demo] round 1/200: loss 1, ")
    assert lines[-1].startswith("[Demo] round 200/200: ")
    progress.report(7, "stopped", last=True)
    assert "round 7/200: stopped" in capsys.readouterr().out


def test_verbose_two_adds_phase_seconds(capsys):
    from skfed.ensemble import SecureBoostClassifier

    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    SecureBoostClassifier(n_estimators=2, encryption=None, random_state=0,
                          verbose=2).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and LINE.match(lines[0])
    assert lines[1].startswith("    seconds: encrypt ")


def test_remaining_time_and_format():
    from skfed._progress import format_duration, remaining_time

    assert remaining_time(2.0, 1, 100) == 198.0
    assert remaining_time(6.0, 3, 4) == 2.0
    assert remaining_time(5.0, 4, 4) == 0.0 and remaining_time(1.0, 0, 4) == 0.0
    assert [format_duration(s) for s in (4.2, 198.0, 7200.0)] == [
        "4 s", "3 min", "2.0 h"]


def test_encrypted_fit_prints_the_wait_after_its_first_round(capsys, monkeypatch):
    """Only the first line of an encrypted fit carries the estimate."""
    import types
    import warnings

    from skfed import _progress
    from skfed.ensemble import SecureBoostClassifier

    # A first round of exactly 3 s: 2 more rounds take 6 s.
    clock = iter([100.0, 103.0, 105.0, 106.0])
    monkeypatch.setattr(_progress, "time",
                        types.SimpleNamespace(perf_counter=lambda: next(clock)))
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        SecureBoostClassifier(n_estimators=3, key_size=512, encryption="ou",
                              early_stopping=False, random_state=0,
                              verbose=1).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 and all(LINE.match(line) for line in lines)
    assert ", 3.00 s, " in lines[0]
    assert lines[0].endswith(" sent; about 6 s for the other 2 rounds")
    assert "about" not in lines[1] + lines[2]
    # Plaintext fits are quick: no estimate.
    monkeypatch.undo()
    SecureBoostClassifier(n_estimators=3, encryption=None, early_stopping=False,
                          random_state=0, verbose=1).fit(X, y)
    assert "about" not in capsys.readouterr().out


def test_verbose_lines_read_as_a_user_expects(capsys):
    # SecureBoost printed "train -loss -0.54189" and HyFDCA "relative gap
    # 1e+300" while its dual was still 0.
    from skfed.ensemble import SecureBoostClassifier
    from skfed.linear_model import HyFDCAClassifier

    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    SecureBoostClassifier(n_estimators=2, encryption=None, random_state=0,
                          early_stopping=False, verbose=1).fit(X, y)
    HyFDCAClassifier([[0, 1], [2, 3]], encryption=None, max_iter=3,
                     tol=None, verbose=1).fit(X, y)
    out = capsys.readouterr().out
    assert re.search(r"round 1/2: train loss 0\.\d+", out), out
    assert "-loss" not in out and "e+300" not in out
    assert re.search(r"round 1/3: primal .*relative gap (n/a|\d)", out), out


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_encrypted_hyfdca_prints_at_most_the_wait(capsys, monkeypatch):
    """HyFDCA's first encrypted round bounds the rest (tol may stop it
    earlier); plaintext fits and whole-row clients (nothing encrypted) do
    not print an estimate."""
    import types

    from skfed import _progress
    from skfed.linear_model import HyFDCAClassifier

    clock = iter([100.0, 102.0] + [110.0] * 10)
    monkeypatch.setattr(_progress, "time",
                        types.SimpleNamespace(perf_counter=lambda: next(clock)))
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    for encryption in ("paillier", "ou"):
        HyFDCAClassifier([[0, 1], [2, 3]], encryption=encryption,
                         key_size=512, max_iter=4, tol=None, verbose=1,
                         random_state=0).fit(X, y)
        clock = iter([100.0, 102.0] + [110.0] * 10)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 8 and all(LINE.match(line) for line in out)
    assert out[0].endswith(" sent; about 6 s for the other 3 rounds"), out[0]
    assert out[4].endswith(" sent; about 6 s for the other 3 rounds")
    assert "about" not in "".join(out[1:4] + out[5:])
    clock = iter([100.0, 102.0] + [110.0] * 10)
    HyFDCAClassifier([[0, 1], [2, 3]], key_size=512, max_iter=4, tol=1e-9,
                     verbose=1, random_state=0).fit(X, y)
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith(" sent; at most 6 s for the other 3 rounds"), first
    # The paper solver runs every round and encrypts the duals even on
    # whole rows: "about", for both splits.
    for partition in ([[0, 1], [2, 3]], [[0, 1, 2, 3]]):
        clock = iter([100.0, 102.0] + [110.0] * 10)
        HyFDCAClassifier(partition, solver="paper", key_size=512, max_iter=4,
                         local_iterations=2, step_size=0.05, verbose=1,
                         random_state=0).fit(X, y)
        first = capsys.readouterr().out.splitlines()[0]
        assert first.endswith(" sent; about 6 s for the other 3 rounds"), first
    monkeypatch.undo()
    HyFDCAClassifier([[0, 1], [2, 3]], solver="paper", encryption=None,
                     max_iter=3, local_iterations=2, step_size=0.05,
                     verbose=1).fit(X, y)
    assert "about" not in capsys.readouterr().out
    for params in ({"encryption": None}, {"partition": [[0, 1, 2, 3]]}):
        HyFDCAClassifier(**{"partition": [[0, 1], [2, 3]], **params},
                         key_size=512, max_iter=3, verbose=1).fit(X, y)
        assert "about" not in capsys.readouterr().out


def test_hyfdca_round_line_says_what_it_does_not_know_yet():
    from skfed.linear_model._reports import round_summary

    out = {"primal": float("inf"), "dual": 1e-12, "gap": 1e300}
    text = round_summary(out, 2)
    assert "inf" not in text and "e+300" not in text
    assert text.startswith("primal n/a") and "relative gap n/a" in text
    out = {"primal": 0.5, "dual": 0.25, "gap": 1.0}
    assert round_summary(out, 4) == (
        "primal 0.5, dual 0.25, relative gap 1 (4 clients)")
