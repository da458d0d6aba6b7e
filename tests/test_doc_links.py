"""The HTML repr of skfed estimators links to their API pages, once the
documentation is published (skfed.base.DOC_BASE_URL), and nowhere before."""

import importlib
import re
from pathlib import Path

import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import skfed.base
from skfed.utils import all_estimators

API = (Path(__file__).parents[1] / "doc" / "api.rst").read_text()


def _documented(module, name):
    """Whether api.rst lists ``name`` under ``.. currentmodule:: module``."""
    sections = re.split(r"\.\. currentmodule:: (\S+)", API)
    return any(mod == module and re.search(rf"^\s+{name}\s*$", body, re.M)
               for mod, body in zip(sections[1::2], sections[2::2]))


PUBLISHED = "https://docs.example.org/skfed/"


@pytest.fixture
def published(monkeypatch):
    monkeypatch.setattr(skfed.base, "DOC_BASE_URL", PUBLISHED)
    return PUBLISHED


@pytest.mark.parametrize("name, cls", all_estimators())
def test_no_link_while_no_documentation_is_published(name, cls):
    # The links used to point at a readthedocs site that does not exist.
    assert skfed.base.DOC_BASE_URL is None
    assert cls()._get_doc_link() == ""
    assert "generated/skfed" not in cls()._repr_html_()


@pytest.mark.parametrize("name, cls", all_estimators())
def test_doc_link_points_at_the_generated_api_page(name, cls, published):
    DOC_BASE_URL = published
    link = cls()._get_doc_link()
    match = re.fullmatch(re.escape(DOC_BASE_URL)
                         + r"generated/([\w.]+)\.(\w+)\.html", link)
    assert match, link
    module, page_name = match.groups()
    assert page_name == name
    assert getattr(importlib.import_module(module), name) is cls
    assert _documented(module, name), f"{module}.{name} not in doc/api.rst"
    assert f'href="{link}"' in cls()._repr_html_()


def test_sklearn_steps_keep_their_own_links(published):
    DOC_BASE_URL = published
    name, cls = all_estimators()[0]
    html = make_pipeline(StandardScaler(), cls())._repr_html_()
    assert "scikit-learn.org" in html and DOC_BASE_URL in html
