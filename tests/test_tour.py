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
