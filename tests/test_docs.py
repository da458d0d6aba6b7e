"""The documentation covers the package: API page, guide pages, examples.

These checks read the doc sources and the package; they do not run Sphinx
(the doc build is ``bash doc/build.sh``). Estimators are found with
:func:`skfed.utils.all_estimators`, so every check holds while estimators are
still being added: a missing page or example fails only for an estimator
that exists.
"""

import functools
import importlib
import pkgutil
import re
import runpy
import sys
from pathlib import Path

import pytest

import skfed
from skfed._docstrings import SHARED_PARAMETERS
from skfed.utils import all_estimators

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "doc"
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(DOC / "sphinxext"))

import skfed_docs  # noqa: E402

# The user-guide page (doc/user_guide/<page>.rst) and example prefix
# (examples/plot_<page>_*.py) of each estimator.
GUIDE_PAGE = {
    "FDSKLClassifier": "fdskl",
    "FDSKLRegressor": "fdskl",
    "AVFKAMRanker": "avfkam",
    "SecureBoostClassifier": "secureboost",
    "SecureBoostRegressor": "secureboost",
    "FederatedKernelKMeans": "kernel_kmeans",
    "HyFDCAClassifier": "hyfdca",
    **dict.fromkeys(["StandardScaler", "MinMaxScaler", "MaxAbsScaler",
                     "SimpleImputer", "OneHotEncoder", "KBinsDiscretizer"],
                    "preprocessing"),
}

# Names doc/api.rst may list before their module exists (the planned API).
PLANNED = {
    "skfed.kernel_methods.FDSKLClassifier",
    "skfed.kernel_methods.FDSKLRegressor",
    "skfed.kernel_methods.AVFKAMRanker",
    "skfed.ensemble.SecureBoostClassifier",
    "skfed.ensemble.SecureBoostRegressor",
    "skfed.cluster.FederatedKernelKMeans",
    "skfed.linear_model.HyFDCAClassifier",
    "skfed.alignment.align",
}


def _public_modules():
    names = ["skfed"]
    for info in pkgutil.walk_packages(skfed.__path__, prefix="skfed."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return names


@functools.lru_cache
def _api_entries():
    """Fully qualified names listed in autosummary blocks of doc/api.rst."""
    entries, module, in_autosummary = [], None, False
    for line in (DOC / "api.rst").read_text().splitlines():
        directive = re.match(r"^\.\. (\S+)::\s*(.*)$", line)
        if directive:
            in_autosummary = directive.group(1) == "autosummary"
            if directive.group(1) in ("currentmodule", "module"):
                module = directive.group(2).strip()
            continue
        if line and not line[0].isspace():
            in_autosummary = False
        stripped = line.strip()
        if in_autosummary and stripped and not stripped.startswith(":"):
            name = stripped.lstrip("~")
            entries.append(name if name.startswith("skfed.") else f"{module}.{name}")
    return tuple(entries)


def _resolve(qualname):
    """The object named ``qualname``, or raise if it does not exist."""
    parts = qualname.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(qualname)


def test_every_public_name_is_in_the_api_reference():
    documented = []
    for entry in _api_entries():
        try:
            documented.append(_resolve(entry))
        except (ImportError, AttributeError):
            pass
    missing = []
    for modname in _public_modules():
        module = importlib.import_module(modname)
        for name in getattr(module, "__all__", []):
            if name.startswith("__"):
                continue
            obj = getattr(module, name)
            # Re-exports (skfed.VerticalPartition, skfed.crypto.paillier's
            # keys, ...) are covered by the entry of the same object.
            if f"{modname}.{name}" not in _api_entries() and not any(
                    obj is d for d in documented):
                missing.append(f"{modname}.{name}")
    assert not missing, (
        f"Public names missing from doc/api.rst: {missing}. Add each to the "
        "autosummary block of its subpackage."
    )


def test_api_reference_lists_only_real_or_planned_names():
    unknown = []
    for entry in _api_entries():
        try:
            _resolve(entry)
        except (ImportError, AttributeError):
            if entry not in PLANNED:
                unknown.append(entry)
    assert not unknown, f"doc/api.rst lists names that do not exist: {unknown}"


def test_every_estimator_has_a_guide_page_and_an_example():
    toctree = (DOC / "user_guide" / "index.rst").read_text()
    problems = []
    for name, _ in all_estimators():
        page = GUIDE_PAGE.get(name)
        if page is None:
            problems.append(f"{name}: no user-guide page is assigned; add it "
                            "to GUIDE_PAGE in tests/test_docs.py")
            continue
        rst = DOC / "user_guide" / f"{page}.rst"
        if not rst.is_file():
            problems.append(f"{name}: doc/user_guide/{page}.rst is missing")
        elif name not in rst.read_text():
            problems.append(f"{name}: doc/user_guide/{page}.rst never names it")
        if not re.search(rf"^\s+{page}\s*$", toctree, re.M):
            problems.append(f"{name}: {page} is not in the user-guide toctree")
        # Any gallery example counts (plot_<page>_*.py by convention).
        examples = [e for e in sorted(EXAMPLES.glob("plot_*.py"))
                    if re.search(rf"\b{name}\b", e.read_text())]
        if not examples:
            problems.append(f"{name}: no examples/plot_*.py uses it (add "
                            f"examples/plot_{page}_<topic>.py)")
        elif not any("matplotlib" in e.read_text() for e in examples):
            problems.append(f"{name}: its examples draw no figure")
    assert not problems, "\n".join(problems)


def test_user_guide_toctree_lists_every_page():
    toctree = (DOC / "user_guide" / "index.rst").read_text()
    listed = set(re.findall(r"^   (\w+)\s*$", toctree, re.M))
    pages = {p.stem for p in (DOC / "user_guide").glob("*.rst")} - {"index"}
    assert pages <= listed, f"pages in no toctree: {sorted(pages - listed)}"
    for page in ("fdskl", "secureboost", "kernel_kmeans", "avfkam", "hyfdca",
                 "alignment", "getting_started", "partition", "runtime",
                 "security", "performance"):
        assert page in listed


def test_examples_have_a_gallery_title():
    for script in sorted(EXAMPLES.glob("plot_*.py")):
        assert re.match(r'^\s*"""\s*\n(=+\n)?[^\n]+\n=+\n', script.read_text()), (
            f"{script.name} must start with a docstring whose first line is a "
            "title underlined with '=' (sphinx-gallery needs it)")


@pytest.mark.filterwarnings("ignore:.*non-interactive.*:UserWarning")
def test_partition_example_runs(monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        runpy.run_path(str(EXAMPLES / "plot_partition_basics.py"),
                       run_name="__main__")
    finally:
        plt.close("all")


def test_estimator_docstrings_document_every_parameter():
    problems = []
    for name, cls in all_estimators():
        doc = cls.__doc__ or ""
        if "%(" in doc:
            problems.append(f"{name}: unsubstituted marker; decorate with "
                            "@fill_doc")
        for param in cls().get_params(deep=False):
            if not re.search(rf"^\s+{param}\s*:", doc, re.M):
                problems.append(f"{name}: parameter {param!r} is not documented")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("key", sorted(SHARED_PARAMETERS))
def test_shared_parameter_docs_are_numpydoc_entries(key):
    first, *rest = SHARED_PARAMETERS[key].strip("\n").splitlines()
    assert re.match(r"^\w+ : .+$", first), first
    assert rest and all(line.startswith("    ") for line in rest if line)


def test_api_filter_drops_only_missing_names():
    text = "\n".join([
        ".. currentmodule:: skfed.partition",
        "",
        ".. autosummary::",
        "   :toctree: generated/",
        "",
        "   VerticalPartition",
        "   NotYetWritten",
        "",
        ".. currentmodule:: skfed.not_a_module",
        "",
        ".. autosummary::",
        "   :toctree: generated/",
        "",
        "   Anything",
        "",
    ])
    out, skipped = skfed_docs.filter_api_source(text)
    assert skipped == ["skfed.partition.NotYetWritten",
                       "skfed.not_a_module.Anything"]
    assert "   VerticalPartition" in out
    assert "NotYetWritten" not in out.split(".. note::")[0]
    assert out.count(".. autosummary::") == 1
    assert "Not part of this build yet: ``skfed.not_a_module.Anything``" in out


def test_toctree_filter_skips_missing_and_adds_unlisted_pages(tmp_path):
    (tmp_path / "guide").mkdir()
    for page in ("index", "a", "extra"):
        (tmp_path / "guide" / f"{page}.rst").write_text("x\n")
    text = ".. toctree::\n   :maxdepth: 2\n\n   a\n   missing\n\nText.\n"
    out, skipped, extra = skfed_docs.filter_toctree_source(text, tmp_path,
                                                           "guide")
    assert skipped == ["guide/missing"] and extra == ["guide/extra"]
    assert "   a\n   extra\n" in out and "missing" not in out


def test_doc_build_needs_no_network(monkeypatch):
    monkeypatch.delenv("SKFED_DOC_ONLINE", raising=False)
    conf = runpy.run_path(str(DOC / "conf.py"))
    for name, (url, location) in conf["intersphinx_mapping"].items():
        assert location is not None and Path(location).is_file(), (
            f"intersphinx would fetch {name} from the network")
    assert conf["numpydoc_show_class_members"] is False


# numpydoc's aliases that name the Python inventory (numpydoc.xref.DEFAULT_LINKS)
_NUMPYDOC_PYTHON_LINKS = ("None", "True", "False", "bool", "boolean", "list",
                          "tuple", "str", "string", "dict", "float", "int",
                          "callable", "iterable", "sequence", "contextmanager",
                          "namedtuple", "generator")


def test_offline_build_renders_no_python_inventory_names(monkeypatch):
    # 47 of 117 API pages rendered "python:None": numpydoc's alias
    # ":data:`python:None`" prints its target when no inventory resolves it.
    monkeypatch.delenv("SKFED_DOC_ONLINE", raising=False)
    conf = runpy.run_path(str(DOC / "conf.py"))
    if "python" in conf["intersphinx_mapping"]:
        pytest.skip("the Python inventory is available: numpydoc links resolve")
    aliases = conf["numpydoc_xref_aliases"]
    try:
        from numpydoc.xref import DEFAULT_LINKS
        words = [w for w, link in DEFAULT_LINKS.items() if "python:" in link]
    except ImportError:
        words = _NUMPYDOC_PYTHON_LINKS
    for word in words:
        assert word in aliases and "python:" not in aliases[word], word


# Calls whose value is None (or never shown): fine as a cell's last line.
_QUIET_CALLS = {"show", "print", "tight_layout", "savefig", "close", "rmtree"}


def test_gallery_cells_draw_their_own_figures_and_print_no_reprs():
    # sphinx-gallery draws a cell's figures when the cell ends and prints
    # the value of its last expression: the SecureBoost pages showed an
    # empty subplot (filled in the next cell) and a stray
    # "<matplotlib.legend.Legend ...>" line.
    import ast

    problems = []
    for path in sorted(EXAMPLES.glob("plot_*.py")):
        cells = re.split(r"^# %%.*$", path.read_text(), flags=re.M)
        axes = {}  # name -> cell where plt.subplots made it
        for i, cell in enumerate(cells):
            tree = ast.parse(cell)
            last = tree.body[-1] if tree.body else None
            if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
                func = last.value.func
                name = getattr(func, "attr", getattr(func, "id", ""))
                if name not in _QUIET_CALLS:
                    problems.append(f"{path.name} cell {i} ends with {name}()")
            for node in ast.walk(tree):
                if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                        and getattr(node.value.func, "attr", "") == "subplots"):
                    axes.update({t.id: i for t in ast.walk(node.targets[0])
                                 if isinstance(t, ast.Name) and t.id != "fig"})
            for node in ast.walk(tree):
                if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                        and axes.get(node.id, i) < i):
                    problems.append(f"{path.name} cell {i} draws on {node.id} "
                                    f"of cell {axes[node.id]}")
    assert not problems, problems


def test_gallery_starts_with_the_partition_example():
    names = ["plot_alignment_x.py", "plot_partition_basics.py", "plot_fdskl_y.py"]
    order = sorted(names, key=skfed_docs.ExampleOrder("examples"))
    assert order == ["plot_partition_basics.py", "plot_alignment_x.py",
                     "plot_fdskl_y.py"]


def test_imports_in_the_guide_name_real_objects():
    # Snippets in the pages are not run by the build; at least every name
    # they import from skfed must exist (once its module does).
    problems = []
    pages = sorted(DOC.glob("*.rst")) + sorted((DOC / "user_guide").glob("*.rst"))
    for page in pages:
        text = page.read_text()
        for modname, names in re.findall(
                r"from (skfed[\w.]*) import \(?([\w, \n]+?)\)?$", text, re.M):
            try:
                module = importlib.import_module(modname)
            except ModuleNotFoundError:
                continue
            for name in re.split(r"[,\s]+", names.strip()):
                if name and not hasattr(module, name):
                    problems.append(f"{page.name}: {modname}.{name}")
    assert not problems, f"the guide imports names that do not exist: {problems}"


def test_math_renders_from_the_built_site_not_a_cdn(tmp_path, monkeypatch):
    # The pages loaded MathJax from a CDN, so an offline copy showed raw TeX
    # (91 formulas on the FDSKL page). The math extensions of conf.py, on a
    # one-page site:
    pytest.importorskip("sphinx")
    from sphinx.application import Sphinx

    monkeypatch.delenv("SKFED_DOC_ONLINE", raising=False)
    conf = runpy.run_path(str(DOC / "conf.py"))
    math = [e for e in conf["extensions"] if "math" in e]
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(f"extensions = {math!r}\n")
    (src / "index.rst").write_text("Gain\n====\n\n.. math::\n\n   G_L^2 / H_L\n")
    out = tmp_path / "html"
    Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html",
           status=None, warning=None, freshenv=True).build()
    page = (out / "index.html").read_text()
    scripts = re.findall(r'<script[^>]*src="([^"]*)"', page)
    mathjax = [s for s in scripts if "mathjax" in s.lower()]
    assert mathjax == ["_static/mathjax/tex-chtml.js"], scripts
    assert (out / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert (out / "_static" / "mathjax" / "output" / "chtml" / "fonts").is_dir()


def _code_lines(page):
    """The lines of every literal block of an .rst page, without the block's
    indentation (``::`` paragraphs and code-block directives)."""
    lines, out, i = page.read_text().splitlines(), [], 0
    while i < len(lines):
        line = lines[i]
        directive = re.match(r"\s*\.\. (code-block|code|sourcecode)::", line)
        literal = (line.rstrip().endswith("::")
                   and not line.lstrip().startswith(".. "))
        i += 1
        if not (directive or literal):
            continue
        base = len(line) - len(line.lstrip())
        while i < len(lines) and (not lines[i].strip()
                                  or re.match(r"\s*:\w[\w-]*:", lines[i])):
            i += 1
        if i == len(lines):
            break
        indent = len(lines[i]) - len(lines[i].lstrip())
        if indent <= base:
            continue
        while i < len(lines) and (not lines[i].strip() or len(lines[i])
                                  - len(lines[i].lstrip()) >= indent):
            out.append((i + 1, lines[i][indent:]))
            i += 1
    return out


@pytest.mark.parametrize("page", ["index.rst", "user_guide/getting_started.rst",
                                  "user_guide/secureboost.rst"])
def test_newcomer_snippets_fit_the_page_column(page):
    # The install line and the SecureBoost calls were cut at the right edge
    # of the article column (about 67 code characters beside both sidebars
    # of the theme at 1,200 px): a newcomer's first pages fit it.
    wide = [(n, text) for n, text in _code_lines(DOC / page) if len(text) > 66]
    assert not wide, wide


def test_getting_started_lists_every_required_dependency():
    # It listed scikit-learn, numpy, scipy, phe and gmpy2 only.
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    text = (DOC / "user_guide" / "getting_started.rst").read_text()
    install = text[text.index("Install\n"):text.index("The quick tour")]
    for requirement in project["dependencies"]:
        name = re.match(r"[\w.-]+", requirement).group(0)
        assert name in install, name
    assert "pandas is optional" in install
