"""Sphinx configuration of the skfed documentation.

Build with ``bash doc/build.sh`` (the whole site, gallery executed) or
``bash doc/build.sh --no-plot`` (the fast CI variant: the gallery pages are
made from the scripts without running them). Both turn warnings into errors.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import os
import sys
from pathlib import Path

import skfed

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "sphinxext"))

# -- Project -----------------------------------------------------------------

project = "skfed"
author = "The skfed developers"
copyright = "The skfed developers, BSD-3-Clause"
release = skfed.__version__
version = ".".join(release.split(".")[:2])

# -- General -----------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    # MathJax itself, shipped inside the package and copied into
    # _build/html/_static/mathjax: the pages render their math offline,
    # with no CDN (sphinx.ext.mathjax alone loads it from jsdelivr).
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    # Local: keeps the toctree and the API page valid while estimator pages
    # and subpackages are still being written (see sphinxext/skfed_docs.py).
    "skfed_docs",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "_intersphinx", "sphinxext", "Thumbs.db",
                    ".DS_Store", "_api_for_stubs.rst"]
root_doc = "index"
default_role = "literal"
pygments_style = "sphinx"

# -- autodoc / autosummary -----------------------------------------------------

# The skfed_docs extension points autosummary at a copy of api.rst restricted
# to the subpackages that exist (so a module still being written is no
# failure); it sets ``autosummary_generate`` itself.
autosummary_generate = False
autosummary_imported_members = False
autodoc_default_options = {"members": False, "inherited-members": False}
autodoc_typehints = "none"

# -- numpydoc ----------------------------------------------------------------

# Class pages list methods through the autosummary template (own methods
# only); numpydoc's member tables would repeat every inherited sklearn method.
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
# Parameter types are parsed and their names become cross-references, as in
# scikit-learn's docs: ``ndarray of shape (n_iter_,)`` then renders instead of
# failing on the reST hyperlink ``n_iter_``. Names that resolve nowhere (no
# intersphinx inventory offline) render as plain code, without a warning.
numpydoc_xref_param_type = True
numpydoc_xref_aliases = {
    "ndarray": "numpy.ndarray",
    "dtype": "numpy.dtype",
    "RandomState": "numpy.random.RandomState",
    "Generator": "numpy.random.Generator",
    "DataFrame": "pandas.DataFrame",
    "Pipeline": "sklearn.pipeline.Pipeline",
    "VerticalPartition": "skfed.partition.VerticalPartition",
    "HorizontalPartition": "skfed.partition.HorizontalPartition",
    "HybridPartition": "skfed.partition.HybridPartition",
    "CommunicationSummary": "skfed.federation.CommunicationSummary",
    "Federation": "skfed.federation.Federation",
    "PartyState": "skfed.federation.PartyState",
    "PartyFuture": "skfed.federation.PartyFuture",
    "EncryptedArray": "skfed.crypto.EncryptedArray",
    "PaillierPublicKey": "skfed.crypto.PaillierPublicKey",
    "PaillierPrivateKey": "skfed.crypto.PaillierPrivateKey",
    "PackedEncoder": "skfed.crypto.PackedEncoder",
}
numpydoc_xref_ignore = {
    "type", "optional", "default", "of", "or", "and", "shape", "instance",
    "array-like", "array", "like", "sparse", "matrix", "callable", "function",
    "object", "positive", "negative", "greater", "than", "to", "equal", "the",
    "same", "as", "any", "non-negative", "each", "per", "a", "an", "in", "by",
    "from", "with", "list", "lists", "tuple", "tuples", "dict", "mapping",
    "sequence", "iterable", "value", "values", "scalar", "estimator", "int",
    "float", "str", "bool", "None", "True", "False", "bytes", "number",
    "numbers", "integer", "integers", "string", "strings", "kernel", "loss",
    "tree", "trees", "name", "names", "column", "columns", "group", "groups",
}

# No docstring style checks in the build: the test suite and review do that.
# Only real reST errors (broken markup, unknown roles, bad references) fail it.
numpydoc_validation_checks = set()

# -- intersphinx (offline by default) ---------------------------------------

# The build must not need the network (CI reaches only package registries).
# A project is linked when its inventory is available locally:
#   doc/_intersphinx/<name>-objects.inv   (fetched once with
#                                          `bash doc/build.sh --fetch-inventories`)
# With SKFED_DOC_ONLINE=1 the inventories are read from the web instead.
# Without either, references to scikit-learn, numpy or scipy objects render as
# plain code (no link, no warning) and the build is otherwise identical.
_INTERSPHINX_TARGETS = {
    "python": "https://docs.python.org/3/",
    "sklearn": "https://scikit-learn.org/stable/",
    "numpy": "https://numpy.org/doc/stable/",
    "scipy": "https://docs.scipy.org/doc/scipy/",
    "pandas": "https://pandas.pydata.org/docs/",
    "matplotlib": "https://matplotlib.org/stable/",
}
_ONLINE = os.environ.get("SKFED_DOC_ONLINE", "") not in ("", "0")
intersphinx_mapping = {}
for _name, _url in _INTERSPHINX_TARGETS.items():
    _local = HERE / "_intersphinx" / f"{_name}-objects.inv"
    if _local.is_file():
        intersphinx_mapping[_name] = (_url, str(_local))
    elif _ONLINE:
        intersphinx_mapping[_name] = (_url, None)
intersphinx_timeout = 10

# numpydoc links some type words with :ref: or :term: roles into the Python
# and numpy docs; those roles warn when unresolved, so without the
# inventories the words become ordinary (silently unresolved) object names.
# numpydoc's own aliases name the inventory (":data:`python:None`"), which
# renders as the literal text "python:None" when that inventory is absent:
# every Python word numpydoc links is mapped to its plain name instead.
_PYTHON_WORDS = ("None", "True", "False", "list", "tuple", "str", "string",
                 "dict", "float", "int", "callable", "contextmanager",
                 "namedtuple")
if "python" not in intersphinx_mapping:
    numpydoc_xref_aliases.update({word: word for word in _PYTHON_WORDS})
    numpydoc_xref_aliases.update({"string": "str"})
    numpydoc_xref_ignore.update(_PYTHON_WORDS)
    numpydoc_xref_aliases.update({
        "bool": "bool", "boolean": "bool",
        "iterable": "collections.abc.Iterable",
        "sequence": "collections.abc.Sequence",
        "generator": "collections.abc.Generator",
    })
if "numpy" not in intersphinx_mapping:
    numpydoc_xref_aliases.update({
        "array-like": "numpy.typing.ArrayLike",
        "array_like": "numpy.typing.ArrayLike",
        "scalar": "numpy.generic",
    })

# -- sphinx-gallery ----------------------------------------------------------

sphinx_gallery_conf = {
    "examples_dirs": ["../examples"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "doc_module": ("skfed",),
    "reference_url": {"skfed": None},
    "backreferences_dir": "generated/backreferences",
    "inspect_global_variables": False,
    # plot_partition_basics.py first (it needs no estimator), then by name
    "within_subsection_order": "skfed_docs.ExampleOrder",
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "default_thumb_file": None,
    # A failing example fails the build (the final summary is an error);
    # `-D plot_gallery=0` skips running them.
    "only_warn_on_example_error": False,
    "abort_on_example_error": False,
    "show_memory": False,
    "write_computation_times": True,
}

# -- HTML --------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"skfed {release}"
html_static_path = []
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"index": []}
html_show_sourcelink = True
html_copy_source = True
