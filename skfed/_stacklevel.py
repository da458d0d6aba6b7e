"""Where a warning should point: the user's line, not a library's.

skfed warns from deep inside ``fit``, and ``fit`` is often called by
scikit-learn (a ``Pipeline``, ``cross_val_score``, ``GridSearchCV``, through
joblib's sequential loop). A fixed ``stacklevel`` then points into
scikit-learn's ``pipeline.py``, where the user can neither read the cause nor
filter the warning by location. :func:`user_stacklevel` walks out of the
frames of skfed, scikit-learn, joblib and the standard library instead, as
Python 3.12's ``skip_file_prefixes`` does, on every Python skfed supports.
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

import os
import sys
import sysconfig

import joblib
import sklearn

__all__ = ["user_stacklevel"]


def _directory(module_file):
    return os.path.dirname(os.path.abspath(module_file)) + os.sep


#: Frames in these directories are never "the user's line".
_LIBRARY_DIRS = (_directory(__file__), _directory(sklearn.__file__),
                 _directory(joblib.__file__))
#: The standard library (threads, runpy, concurrent.futures, ...), except
#: the site-packages inside it, where a user's own package may live.
_STDLIB_DIR = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
_SITE_DIRS = tuple({os.path.abspath(sysconfig.get_paths()[k]) + os.sep
                    for k in ("purelib", "platlib")})


def _is_library(filename):
    if filename.startswith("<frozen "):  # importlib, runpy
        return True
    path = os.path.abspath(filename)
    return path.startswith(_LIBRARY_DIRS) or (
        path.startswith(_STDLIB_DIR) and not path.startswith(_SITE_DIRS))


def user_stacklevel(fallback):
    """The ``stacklevel`` for :func:`warnings.warn` that reaches the user.

    Counted as :func:`warnings.warn` counts from the function that calls
    this one (1: that function's own line): the first frame outside skfed,
    scikit-learn, joblib and the standard library.

    Parameters
    ----------
    fallback : int
        Returned when every frame is a library's, as in a joblib worker
        process where the fit runs with no user code on the stack.
    """
    frame, level = sys._getframe(1), 1
    while frame is not None:
        if not _is_library(frame.f_code.co_filename):
            return level
        frame, level = frame.f_back, level + 1
    return fallback
