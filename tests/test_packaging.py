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


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    test_part = _readme_commands()[1].split("&& ", 3)[-1]
    assert test_part in ci, (test_part, ci)


def test_setup_cfg_has_no_metadata():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert "metadata" not in cfg and "options" not in cfg
