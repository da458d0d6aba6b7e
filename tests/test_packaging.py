"""The README's commands are what CI runs, and metadata lives in one place."""

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(.+?)\n```", text)


def test_readme_starts_with_the_two_commands():
    commands = _readme_commands()
    assert len(commands) >= 2
    assert commands[0].endswith("python -m skfed")
    assert "pytest" in commands[1]


def _ci_lines():
    """The commands of .ci/run, comments left out."""
    text = (ROOT / ".ci" / "run").read_text()
    return [line for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_ci_runs_the_readme_test_command():
    ci = "\n".join(_ci_lines())
    test_part = _readme_commands()[1].split("&& ", 3)[-1]
    assert test_part in ci, (test_part, ci)


def test_ci_runs_the_readme_first_command_first_with_no_extras():
    # Issue 35: CI installed the test extras only, so a module-level import
    # of pandas broke every estimator after the README's bare install and
    # CI could not see it.
    first, test = _readme_commands()[:2]
    assert "pip install . " in first and "[" not in first, first
    assert first.endswith("python -m skfed")
    lines = _ci_lines()
    runs_first = [k for k, line in enumerate(lines) if first in line]
    runs_test = [k for k, line in enumerate(lines)
                 if test.split("&& ", 3)[-1] in line]
    assert runs_first and runs_test, lines
    assert runs_first[0] < runs_test[0]
    # in a directory of its own, so that its `.venv` is a fresh one
    assert 'cd "$bare"' in lines[runs_first[0]]


def test_setup_cfg_has_no_metadata():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert "metadata" not in cfg and "options" not in cfg
