"""skfed works after a bare ``pip install .``: no extra is needed to import it.

The subprocesses below run with every package that the required
dependencies do not bring made unimportable (pandas, matplotlib, Ray,
hypothesis, sphinx, pytest, ...): exactly what a newcomer's fresh virtual
environment holds after the README's first command. ``.ci/run`` also runs
that command itself, in a fresh virtual environment.
"""

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]

# Imported at startup through PYTHONPATH: a finder in front of every other
# that says "no such module" for the blocked names, as a bare install would.
_BLOCKER = """
import os
import sys

_BLOCKED = frozenset(os.environ["SKFED_TEST_BLOCKED"].split(","))


class _NotInstalled:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: "
                                      "not a required dependency)", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled)
"""


def _required_closure():
    """The distributions a bare ``pip install skfed`` brings, transitively."""
    seen, todo = set(), ["skfed"]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def _blocked_modules():
    """Top-level modules installed here that a bare install would not have."""
    required = _required_closure()
    return sorted(
        module for module, dists in
        importlib.metadata.packages_distributions().items()
        if module not in sys.stdlib_module_names
        and not any(canonicalize_name(d) in required for d in dists))


@pytest.fixture(scope="module")
def bare_env(tmp_path_factory):
    blocked = _blocked_modules()
    # The extras' packages (those that are installed here) are among them.
    for extra in ("pandas", "matplotlib", "ray", "hypothesis", "sphinx",
                  "pytest"):
        try:
            importlib.metadata.distribution(extra)
        except importlib.metadata.PackageNotFoundError:
            continue
        assert extra in blocked, extra
    site = tmp_path_factory.mktemp("bare_site")
    (site / "sitecustomize.py").write_text(_BLOCKER)
    env = dict(os.environ, SKFED_TEST_BLOCKED=",".join(blocked),
               PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    return env


def _run(env, code, timeout=240):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=timeout)


def test_blocker_blocks(bare_env):
    result = _run(bare_env, "import pandas")
    assert result.returncode != 0
    assert "ModuleNotFoundError" in result.stderr


def test_every_public_module_imports(bare_env):
    result = _run(bare_env, """
        import importlib, pkgutil
        import skfed

        names = ["skfed"] + [
            info.name for info in pkgutil.walk_packages(skfed.__path__,
                                                        prefix="skfed.")
            if not any(p.startswith("_") for p in info.name.split(".")[1:])
            and info.name != "skfed.conftest"]
        for name in names:
            importlib.import_module(name)
        print(len(names))
    """)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) >= 10


def test_every_estimator_fits_and_predicts(bare_env):
    # The common checks' cheap settings (tests/_instances.py), a small table.
    result = _run(bare_env, """
        import numpy as np
        from sklearn.datasets import make_classification

        from skfed.utils import all_estimators
        from tests._instances import CHECK_PARAMS

        X, y = make_classification(n_samples=80, n_features=6, random_state=0)
        fitted = []
        for name, cls in all_estimators():
            model = cls(**CHECK_PARAMS.get(name, {}))
            model.fit(X) if name == "FederatedKernelKMeans" else model.fit(X, y)
            if hasattr(model, "predict"):
                assert model.predict(X).shape == (80,)
            else:  # a transformer: transform is local, its fit federated
                assert model.transform(X).shape[0] == 80
            assert model.communication_.total_messages > 0
            fitted.append(name)
        print(" ".join(fitted))
    """)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.split()) >= 13, result.stdout


def test_quick_tour_runs(bare_env):
    result = _run(bare_env, """
        import sys
        from skfed._tour import main
        sys.exit(main(["--quick", "--estimator", "secureboost"]))
    """)
    assert result.returncode == 0, result.stderr
    assert "SecureBoostClassifier" in result.stdout


def test_optional_features_name_their_package_when_it_is_missing(bare_env):
    result = _run(bare_env, """
        import numpy as np
        from sklearn.datasets import make_classification

        from skfed import config_context
        from skfed.alignment import align
        from skfed.ensemble import SecureBoostClassifier
        from skfed.federation import PartyData
        from skfed.privacy import audit

        X, y = make_classification(n_samples=60, n_features=4, random_state=0)
        model = SecureBoostClassifier(n_estimators=2, encryption=None,
                                      random_state=0)
        fitted = SecureBoostClassifier(**model.get_params()).fit(X, y)

        def fit_on_ray():
            with config_context(backend="ray"):
                model.fit(X, y)

        calls = {
            "align": lambda: align([{"id": [1]}, {"id": [1]}]),
            "PartyData": lambda: model.fit(
                PartyData({"a": "a.csv", "b": "b.csv"}), "y"),
            "to_frame": lambda: fitted.communication_.to_frame(),
            "audit": lambda: audit(model, X, y),
            "plot": lambda: fitted.communication_.plot(),
            "ray": fit_on_ray,
        }
        for name, call in calls.items():
            try:
                call()
            except Exception as exc:  # PartyData: a PartyError naming the party
                print(name, "|", exc)
            else:
                raise SystemExit(name + ": no error")
    """)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" | ") for line in result.stdout.splitlines())
    for name, feature, package, extra in [
            ("align", "skfed.alignment.align", "pandas", "pandas"),
            ("PartyData", "Reading a PartyData table", "pandas", "pandas"),
            ("to_frame", "CommunicationSummary.to_frame", "pandas", "pandas"),
            ("audit", "skfed.privacy.audit", "pandas", "pandas"),
            ("plot", "CommunicationSummary.plot", "matplotlib", "plot"),
            ("ray", "'ray' backend", "ray", "ray")]:
        assert feature in lines[name], lines[name]
        assert f"pip install {package}" in lines[name], lines[name]
        assert f"skfed[{extra}]" in lines[name], lines[name]


def test_import_optional_names_the_feature_and_keeps_other_errors(
        monkeypatch, tmp_path):
    from skfed._optional import import_optional

    monkeypatch.setitem(sys.modules, "pandas", None)  # not installed
    with pytest.raises(ImportError, match=r"^my feature needs pandas.*"
                       r"pip install pandas, or pip install 'skfed\[pandas\]'"):
        import_optional("pandas", "my feature")
    # installed, but one of its own dependencies is missing: its own error
    (tmp_path / "broken_optional_pkg.py").write_text(
        "import no_such_dependency_of_it\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_of_it"):
        import_optional("broken_optional_pkg", "a feature")
