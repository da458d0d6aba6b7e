"""Keep the skfed site buildable while the package grows.

Estimator subpackages and their user-guide pages are written in parallel with
the site. The documentation lists them all by their final names, and this
extension makes every intermediate state build cleanly with warnings as
errors:

- ``api.rst``: autosummary entries whose module does not exist yet, or whose
  name that module does not define yet, are left out (and a note says so);
  stub pages are generated for the remaining entries only. A module that
  exists but fails to import is *kept*, so its error fails the build.
  ``tests/test_docs.py`` checks that api.rst names nothing that was not
  planned, and that every public name is listed.
- In the type of a numpydoc parameter or attribute, a name ending in ``_``
  (scikit-learn's ``ndarray of shape (n_iter_,)``) is escaped, since reST
  would read it as a hyperlink reference.
- ``:doc:`` links to a planned algorithm page that does not exist yet render
  as plain text.
- When the gallery is not executed (``-D plot_gallery=0``, the fast CI
  build), a guide page's figure taken from an example
  (``auto_examples/images/sphx_glr_*.png``) would not exist; a placeholder
  image is put in its place. In a full build a missing figure still fails.
- ``user_guide/index.rst``: toctree entries whose page does not exist yet are
  left out, and any other page in ``user_guide/`` is appended, so no page is
  ever orphaned.

Nothing is skipped silently: the skipped names are printed as build messages.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import importlib
import importlib.util
import re
import shutil
from pathlib import Path


class ExampleOrder:
    """Gallery order: the foundation example first, then by file name.

    Used as sphinx-gallery's ``within_subsection_order`` (by its qualified
    name, so the configuration stays picklable).
    """

    FIRST = ("plot_partition_basics.py",)

    def __init__(self, src_dir=None):
        self.src_dir = src_dir

    def __call__(self, filename):
        name = Path(filename).name
        return (0 if name in self.FIRST else 1, name)


def _logger():
    # Imported here so the filters above can be tested without Sphinx.
    from sphinx.util import logging

    return logging.getLogger(__name__)

API_DOC = "api"
STUB_SOURCE = "_api_for_stubs.rst"
USER_GUIDE_INDEX = "user_guide/index"
# Pages written by other people in parallel with the site; a :doc: link to
# one that does not exist yet renders as plain text instead of failing.
PLANNED_PAGES = {f"user_guide/{name}" for name in (
    "fdskl", "secureboost", "kernel_kmeans", "avfkam", "hyfdca", "alignment")}

_DIRECTIVE = re.compile(r"^(\s*)\.\. (\S+)::\s*(.*)$")


def module_available(modname):
    """True if the module exists (whether or not it imports cleanly)."""
    try:
        return importlib.util.find_spec(modname) is not None
    except ModuleNotFoundError:
        return False


def name_available(modname, name):
    """False only for a module or name that does not exist (yet).

    A module that exists but raises on import counts as available, so that
    autosummary reports the real error.
    """
    if not module_available(modname):
        return False
    try:
        module = importlib.import_module(modname)
    except Exception:
        return True
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def filter_api_source(text):
    """Drop the api.rst autosummary entries that do not exist yet.

    Returns ``(new_text, skipped)`` where ``skipped`` lists the dropped
    fully qualified names.
    """
    lines = text.splitlines()
    out, skipped = [], []
    module = None
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _DIRECTIVE.match(line)
        if match and match.group(2) in ("currentmodule", "module"):
            module = match.group(3).strip()
        if match and match.group(2) == "automodule":
            block, i = _take_block(lines, i)
            if module_available(match.group(3).strip()):
                out.extend(block)
            continue
        if match and match.group(2) == "autosummary":
            block, i = _take_block(lines, i)
            kept, dropped = _filter_autosummary(block, module)
            skipped.extend(dropped)
            if kept is None:
                indent = match.group(1)
                out.append(f"{indent}.. note::")
                out.append("")
                out.append(f"{indent}   Not part of this build yet: "
                           + ", ".join(f"``{n}``" for n in dropped) + ".")
                out.append("")
            else:
                out.extend(kept)
            continue
        out.append(line)
        i += 1
    return "\n".join(out) + "\n", skipped


def _take_block(lines, start):
    """A directive line and its indented body; returns (block, next index)."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    block = [lines[start]]
    i = start + 1
    while i < len(lines) and (not lines[i].strip()
                              or len(lines[i]) - len(lines[i].lstrip()) > indent):
        block.append(lines[i])
        i += 1
    return block, i


def _filter_autosummary(block, module):
    header, entries, dropped = [block[0]], [], []
    for line in block[1:]:
        stripped = line.strip()
        if not stripped or stripped.startswith(":"):
            (header if not entries else entries).append(line)
            continue
        name = stripped.lstrip("~")
        if name.startswith("skfed."):
            modname, _, attr = name.rpartition(".")
            # "skfed.partition.VerticalPartition" style entries
            while modname and not module_available(modname):
                modname, _, head = modname.rpartition(".")
                attr = f"{head}.{attr}"
            full = name
        else:
            modname, attr, full = module, name, f"{module}.{name}"
        if modname and name_available(modname, attr):
            entries.append(line)
        else:
            dropped.append(full)
    if not any(e.strip() for e in entries):
        return None, dropped
    return header + entries, dropped


def filter_toctree_source(text, srcdir, docdir):
    """Drop toctree entries without a page; append pages no toctree lists.

    Only the first toctree of the document gets the extra pages.
    """
    lines = text.splitlines()
    existing = {p.with_suffix("").relative_to(srcdir).as_posix()
                for p in (srcdir / docdir).glob("*.rst")}
    listed, skipped, out = set(), [], []
    first_toctree_end = None
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        if not (match and match.group(2) == "toctree"):
            out.append(lines[i])
            i += 1
            continue
        block, i = _take_block(lines, i)
        body_indent = None
        for line in block:
            stripped = line.strip()
            if line is block[0] or not stripped or stripped.startswith(":"):
                out.append(line)
                continue
            body_indent = line[: len(line) - len(line.lstrip())]
            target = re.sub(r"^.*<(.+)>$", r"\1", stripped)
            docname = (target.lstrip("/") if target.startswith("/")
                       else f"{docdir}/{target}")
            if docname in existing:
                listed.add(docname)
                out.append(line)
            else:
                skipped.append(docname)
        if first_toctree_end is None:
            while out and not out[-1].strip():
                out.pop()
            first_toctree_end = (len(out), body_indent or "   ")
            out.append("")
    extra = sorted(existing - listed - {f"{docdir}/index"})
    if first_toctree_end is not None and extra:
        at, indent = first_toctree_end
        out[at:at] = [f"{indent}{d.split('/', 1)[1]}" for d in extra]
    return "\n".join(out) + "\n", skipped, extra


def _drop_stale_examples(srcdir):
    """Remove gallery pages of examples that were deleted or renamed.

    sphinx-gallery leaves them behind, and they would be orphans.
    """
    gallery = srcdir / "auto_examples"
    stale = False
    for page in gallery.glob("plot_*.rst"):
        if not (srcdir.parent / "examples" / f"{page.stem}.py").is_file():
            for leftover in gallery.glob(f"{page.stem}.*"):
                leftover.unlink()
            _logger().info("skfed_docs: removed the stale page %s", page.name)
            stale = True
    if stale:  # the timing pages list them too (rewritten by executed builds)
        for timings in (srcdir / "sg_execution_times.rst",
                        gallery / "sg_execution_times.rst"):
            timings.unlink(missing_ok=True)


def _on_builder_inited(app):
    srcdir = Path(app.srcdir)
    _drop_stale_examples(srcdir)
    if _gallery_executed(app):
        _drop_placeholders(app)
    api = srcdir / f"{API_DOC}.rst"
    if not api.is_file():
        return
    text, skipped = filter_api_source(api.read_text(encoding="utf-8"))
    if skipped:
        _logger().info("skfed_docs: not in this build yet: %s", ", ".join(skipped))
    stub_source = srcdir / STUB_SOURCE
    if not stub_source.is_file() or stub_source.read_text(encoding="utf-8") != text:
        stub_source.write_text(text, encoding="utf-8")
    # autosummary reads this copy (connected before autosummary's own handler).
    app.config.autosummary_generate = [STUB_SOURCE]


PLACEHOLDER_LIST = "skfed_placeholders.txt"


def _drop_placeholders(app):
    """Before an executed build: remove placeholders, re-run their examples.

    sphinx-gallery skips an example whose source did not change since its
    last run, which would leave a placeholder in place of its figure.
    """
    gallery = Path(app.srcdir) / "auto_examples"
    listing = gallery / "images" / PLACEHOLDER_LIST
    if not listing.is_file():
        return
    for name in set(listing.read_text(encoding="utf-8").split()):
        (gallery / "images" / name).unlink(missing_ok=True)
        example = re.sub(r"^sphx_glr_(.+)_\d{3}\.png$", r"\1", name)
        (gallery / f"{example}.py.md5").unlink(missing_ok=True)
    listing.unlink()


_GALLERY_IMAGE = re.compile(r"auto_examples/images/(sphx_glr_[\w.-]+?\.png)")


def _gallery_executed(app):
    """Whether sphinx-gallery runs the examples (``-D plot_gallery=0``)."""
    value = getattr(app.config, "plot_gallery", True)
    if isinstance(value, str):
        return value.strip().lower() not in ("0", "false", "no", "")
    return bool(value)


def _placeholder_figures(app, text):
    """Put sphinx-gallery's "no image" picture where a figure is missing."""
    if _gallery_executed(app):
        return
    images = Path(app.srcdir) / "auto_examples" / "images"
    for name in set(_GALLERY_IMAGE.findall(text)):
        target = images / name
        if not target.exists():
            import sphinx_gallery

            placeholder = Path(sphinx_gallery.__file__).parent / "_static" / \
                "no_image.png"
            images.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(placeholder, target)
            with open(images / PLACEHOLDER_LIST, "a", encoding="utf-8") as f:
                f.write(name + "\n")
            _logger().info("skfed_docs: placeholder for %s (gallery not run)", name)


def _on_source_read(app, docname, source):
    srcdir = Path(app.srcdir)
    _placeholder_figures(app, source[0])
    if docname == API_DOC:
        source[0], _ = filter_api_source(source[0])
    elif docname == USER_GUIDE_INDEX:
        source[0], skipped, extra = filter_toctree_source(
            source[0], srcdir, docname.rsplit("/", 1)[0])
        if skipped:
            _logger().info("skfed_docs: pages not written yet: %s", ", ".join(skipped))
        if extra:
            _logger().info("skfed_docs: pages added to the toctree: %s",
                        ", ".join(extra))


_PARAM_LINE = re.compile(r"^(\s*[\w*][\w*, ]* : )(.+)$")
_TRAILING_UNDERSCORE = re.compile(r"\b([A-Za-z]\w*?)_(?=[\s,)\]+*/-]|$)")


def escape_type_underscores(lines):
    """Escape ``name_`` in the type part of ``name : type`` lines, in place."""
    for i, line in enumerate(lines):
        match = _PARAM_LINE.match(line)
        if match:
            lines[i] = match.group(1) + _TRAILING_UNDERSCORE.sub(
                r"\1\\_", match.group(2))


def _on_process_docstring(app, what, name, obj, options, lines):
    escape_type_underscores(lines)


def _on_missing_reference(app, env, node, contnode):
    if node.get("reftype") != "doc":
        return None
    target = node.get("reftarget", "")
    base = node.get("refdoc", "").rpartition("/")[0]
    docname = target.lstrip("/") if target.startswith("/") else \
        "/".join(p for p in (base, target) if p)
    if docname in PLANNED_PAGES:
        _logger().info("skfed_docs: link to %s, not written yet", docname)
        return contnode
    return None


def setup(app):
    app.connect("builder-inited", _on_builder_inited, priority=400)
    app.connect("missing-reference", _on_missing_reference)
    # before numpydoc (priority 500) turns the types into cross-references
    app.connect("autodoc-process-docstring", _on_process_docstring, priority=400)
    app.connect("source-read", _on_source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True,
            "version": "1.0"}
