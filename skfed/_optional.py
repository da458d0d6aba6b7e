"""Optional dependencies, imported by the feature that needs them.

A bare ``pip install skfed`` brings only the required packages (scikit-learn,
numpy, scipy, phe, gmpy2, threadpoolctl, cryptography), and every public
module imports with those alone. pandas, matplotlib and Ray are imported
inside the functions that use them, through :func:`import_optional`, as
scikit-learn does: a user who reaches such a feature without the package
gets an ImportError that names the feature and the command that installs it.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import importlib

__all__ = ["import_optional"]

#: the extra of pyproject.toml that installs each optional package
_EXTRA = {"pandas": "pandas", "matplotlib": "plot", "ray": "ray"}


def import_optional(module, feature):
    """Import and return ``module``, or say which feature needs it.

    Parameters
    ----------
    module : str
        A module of an optional package, e.g. ``"pandas"`` or
        ``"matplotlib.pyplot"``.

    feature : str
        What needs it, as the user calls it (``"skfed.alignment.align"``).

    Raises
    ------
    ImportError
        If the package is not installed: the message names ``feature``, the
        package and ``pip install``. A package that is installed but fails
        to import (one of its own dependencies missing) raises its own error.
    """
    package = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != package:
            raise
        extra = _EXTRA[package]
        raise ImportError(
            f"{feature} needs {package}, which is not installed (skfed does "
            f"not require it): pip install {package}, or pip install "
            f"'skfed[{extra}]'.") from exc
