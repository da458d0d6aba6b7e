"""One progress format: ``verbose=1`` prints the same kind of line everywhere."""

import re

import pytest
from sklearn.datasets import make_classification

from skfed._progress import MAX_LINES, Progress
from skfed.utils import all_estimators

from ._instances import CHECK_PARAMS

LINE = re.compile(r"^\[\w+\] (round|step|iteration) (\d+)/(\d+): .+, "
                  r"\d+\.\d\d s, \d+(\.\d)? (B|kB|MB|GB) sent$")

# Enough rounds for the every-k-th rule to matter where it is cheap.
LONG = {"FDSKLClassifier": {"max_iter": 200, "early_stopping": False},
        "FDSKLRegressor": {"max_iter": 200, "early_stopping": False},
        "HyFDCAClassifier": {"max_iter": 120}}


@pytest.mark.parametrize("name, cls", all_estimators())
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
