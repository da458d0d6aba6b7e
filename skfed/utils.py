"""Small utilities: finding the estimators the package provides."""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import importlib
import inspect
import pkgutil

from sklearn.base import BaseEstimator

import skfed

__all__ = ["all_estimators"]


def all_estimators():
    """Every public estimator class in skfed, as sorted ``(name, class)`` pairs.

    Private modules (names starting with ``_``) are searched too, since the
    estimators live in them; only classes re-exported by a public subpackage
    and not starting with ``_`` are returned.
    """
    found = {}
    for info in pkgutil.walk_packages(skfed.__path__, prefix="skfed."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts[1:]) or not info.ispkg:
            continue
        module = importlib.import_module(info.name)
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if (issubclass(obj, BaseEstimator) and not name.startswith("_")
                    and obj.__module__.startswith("skfed.")
                    and not inspect.isabstract(obj)):
                found[name] = obj
    return sorted(found.items())
