"""The quick tour as a command-line tool (``python -m skfed``)."""

import subprocess
import sys

import pytest

from skfed._tour import QUICK_NOTE, main


def test_help_exits_at_once_without_running_the_tour():
    result = subprocess.run([sys.executable, "-m", "skfed", "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "usage: python -m skfed" in result.stdout
    for option in ("--estimator", "--quick", "--plot"):
        assert option in result.stdout
    assert "baseline " not in result.stdout.splitlines()[-1]  # no table


def test_quick_single_estimator_with_plot(tmp_path, capsys):
    path = tmp_path / "timeline.png"
    assert main(["--quick", "--estimator", "secureboost", "--plot",
                 str(path)]) == 0
    out = capsys.readouterr().out
    assert QUICK_NOTE in out and "allow_insecure_keys=True" in out
    lines = [line for line in out.splitlines()
             if line.startswith("SecureBoostClassifier")]
    assert len(lines) == 1 and "512-bit" in lines[0]
    assert "FDSKL" not in out and "HyFDCA" not in out
    header = next(line for line in out.splitlines() if line.startswith("estimator"))
    for column in ("score", "baseline", "messages", "MB", "seconds"):
        assert column in header
    assert path.stat().st_size > 10_000
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_unknown_estimator_names_the_choices(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--estimator", "ridge"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "no tour case matches --estimator 'ridge'" in err
    assert "SecureBoostClassifier" in err


def test_tour_cases_do_not_import_the_tour():
    code = ("import sys, skfed._tour_cases; "
            "print('skfed._tour' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                            text=True, timeout=60)
    assert result.stdout.strip() == "False", result.stderr


def test_readme_pastes_the_tour_table():
    from pathlib import Path

    from skfed._tour import _cases

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    block = readme.split("Quick tour output", 1)[1].split("```")[1]
    lines = block.strip().splitlines()
    assert lines[0].split() == ["estimator", "data", "parties", "metric",
                                "score", "baseline", "messages", "MB",
                                "seconds"]
    names = [case.name for case in _cases()]
    pasted = [line for line in lines[1:] if line.strip()
              and not set(line) <= {"-", " "}]
    assert [line[:len(name)] for line, name in zip(pasted, names)] == names
    assert len(pasted) == len(names)


def test_plot_without_matplotlib_stops_before_the_tour(tmp_path, monkeypatch,
                                                        capsys):
    # It used to run every case, then fail with a ModuleNotFoundError
    # traceback when drawing.
    import skfed._tour as tour

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # not installed
    monkeypatch.setattr(tour, "run_tour", lambda *a, **k: pytest.fail("ran"))
    assert main(["--quick", "--plot", str(tmp_path / "t.png")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert "--plot needs matplotlib" in captured.err
    assert "pip install 'skfed[plot]'" in captured.err


def test_the_tour_states_its_key_choice_once_without_warnings(monkeypatch, capsys):
    # The full tour (1024-bit keys) used to print InsecureKeyWarnings
    # pointing into skfed's own files.
    import warnings

    import numpy as np
    from sklearn.dummy import DummyClassifier

    import skfed._tour as tour
    from skfed._tour import KEY_NOTE, run_tour
    from skfed._tour_case import TourCase
    from skfed.ensemble import SecureBoostClassifier

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 4)), np.arange(40) % 2
    case = TourCase(
        name="SecureBoostClassifier (1024-bit)", dataset="noise",
        make_data=lambda: (X, X, y, y),
        estimator=SecureBoostClassifier(n_estimators=1, max_depth=1,
                                        key_size=1024, random_state=0),
        baseline=DummyClassifier(), baseline_name="dummy")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_tour([case], out=lambda *a: None)
    assert not [w for w in caught if "Paillier key" in str(w.message)]
    monkeypatch.setattr(tour, "_cases", lambda quick, name: [case])
    monkeypatch.setattr(tour, "run_tour", lambda *a, **k: [])
    assert main(["--estimator", "secureboost"]) == 0
    assert capsys.readouterr().out.count(KEY_NOTE) == 1
