"""Modules named in issue 20 do not import each other in a cycle."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "skfed"


def _imported_modules(path):
    """Absolute names of the skfed modules ``path`` imports, anywhere in it
    (function-level imports too)."""
    package = ".".join(("skfed",) + path.relative_to(PACKAGE).parent.parts)
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            names.add(module)
            names.update(f"{module}.{a.name}" for a in node.names)
    return names


@pytest.mark.parametrize("a, b", [
    ("_tour.py", "_tour_cases.py"),
    ("crypto/_array.py", "crypto/_scheme.py"),  # keys reach arrays through _scheme
])
def test_no_import_cycle(a, b):
    def module(rel):
        return "skfed." + rel.removesuffix(".py").replace("/", ".")

    a_imports = _imported_modules(PACKAGE / a)
    b_imports = _imported_modules(PACKAGE / b)
    assert not (module(b) in a_imports and module(a) in b_imports), (a, b)
    assert module(b) in a_imports or module(a) in b_imports  # they are related
