"""Warnings point at the user's line, out of skfed, sklearn and joblib frames."""

import os
import sys
import sysconfig
import threading
import warnings

import joblib
import sklearn

import skfed
from skfed._stacklevel import _is_library, user_stacklevel


def test_library_and_user_files():
    for module in (skfed, sklearn, joblib, threading):
        assert _is_library(module.__file__), module
    assert _is_library("<frozen runpy>")
    assert not _is_library(__file__)
    assert not _is_library("<doctest skfed.crypto.check_key_size[1]>")
    # a user's package installed next to scikit-learn is not a library
    site = sysconfig.get_paths()["purelib"]
    assert not _is_library(os.path.join(site, "my_bank_model", "train.py"))


def _in_sklearn(source, name):
    """A function whose code claims to live in scikit-learn's directory."""
    namespace = {"user_stacklevel": user_stacklevel, "warnings": warnings}
    path = os.path.join(os.path.dirname(sklearn.__file__), "_fake_caller.py")
    exec(compile(source, path, "exec"), namespace)
    return namespace[name]


def test_the_first_frame_outside_the_libraries():
    warn = _in_sklearn(
        "def warn():\n"
        "    warnings.warn('here', UserWarning,\n"
        "                  stacklevel=user_stacklevel(fallback=1))\n", "warn")
    call = _in_sklearn("def call(f):\n    f()\n", "call")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        call(warn)
    assert (caught[0].filename, caught[0].lineno) == (__file__, line)


def test_the_fallback_when_no_user_frame_is_on_the_stack():
    # As in a joblib worker process: a thread whose frames are all the
    # libraries' (threading, then "scikit-learn").
    levels = []
    record = _in_sklearn("def record(out):\n"
                         "    out.append(user_stacklevel(fallback=7))\n",
                         "record")
    thread = threading.Thread(target=record, args=(levels,))
    thread.start()
    thread.join()
    assert levels == [7]
