"""Key policy: warn below 2048 bits, refuse below 1024 unless opted in."""

import sys
import warnings

import numpy as np
import pytest

import skfed
from skfed.crypto import InsecureKeyWarning, check_key_size, generate_keypair


def test_small_keys_warn_naming_their_size():
    with pytest.warns(InsecureKeyWarning, match="A 1024-bit Paillier key"):
        assert check_key_size(1024) == 1024
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_key_size(2048) == 2048  # silent
        assert check_key_size(3072) == 3072


def test_keys_below_1024_bits_need_the_opt_in(monkeypatch):
    monkeypatch.delenv("SKFED_ALLOW_INSECURE_KEYS")
    assert skfed.get_config()["allow_insecure_keys"] is False
    with pytest.raises(ValueError, match="key_size=512 is refused"):
        generate_keypair(key_size=512)
    with skfed.config_context(allow_insecure_keys=True):
        with pytest.warns(InsecureKeyWarning, match="512-bit"):
            public_key, private_key = generate_keypair(key_size=512)
    assert private_key.decrypt(public_key.encrypt(np.array([1.5])))[0] == 1.5
    # The environment variable opts in a whole process; an explicit False in
    # this thread still wins over it.
    monkeypatch.setenv("SKFED_ALLOW_INSECURE_KEYS", "1")
    assert skfed.get_config()["allow_insecure_keys"] is True
    with skfed.config_context(allow_insecure_keys=False):
        with pytest.raises(ValueError, match="refused"):
            check_key_size(768)


def test_plaintext_keys_are_not_checked():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with skfed.config_context(allow_insecure_keys=False):
            generate_keypair(key_size=128, plaintext=True)


def test_an_estimator_generating_keys_in_a_party_thread_obeys_the_policy():
    # SecureBoost's active party makes its key on its own thread: the
    # caller's configuration (not only the environment) reaches it.
    from skfed.ensemble import SecureBoostClassifier

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 4)), np.arange(30) % 2
    clf = SecureBoostClassifier(n_estimators=1, max_depth=1, key_size=512)
    with skfed.config_context(allow_insecure_keys=False):
        with pytest.raises(Exception, match="key_size=512 is refused"):
            clf.fit(X, y)
    with pytest.warns(InsecureKeyWarning, match="512-bit"):
        clf.fit(X, y)


def test_bad_key_sizes_are_refused():
    with pytest.raises(TypeError):
        check_key_size(2048.0)
    with pytest.raises(ValueError, match="allow_insecure_keys"):
        skfed.set_config(allow_insecure_keys="yes")


@pytest.mark.parametrize("make", ["secureboost", "hyfdca"])
def test_estimators_warn_once_at_the_line_that_called_fit(make):
    # The warning used to point into skfed's own files (the party thread
    # that makes the key), where a user cannot silence it by location.
    from skfed.ensemble import SecureBoostClassifier
    from skfed.linear_model import HyFDCAClassifier

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 4)), np.arange(40) % 2
    clf = (SecureBoostClassifier(n_estimators=1, max_depth=1, key_size=1024)
           if make == "secureboost" else
           HyFDCAClassifier([[0, 1], [2, 3]], key_size=1024, max_iter=1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y)
    keys = [w for w in caught if issubclass(w.category, InsecureKeyWarning)]
    assert len(keys) == 1
    assert keys[0].filename == __file__


@pytest.mark.parametrize("wrap", ["bare", "pipeline", "cross_val_score"])
def test_the_key_warning_points_at_the_users_line_through_sklearn(wrap):
    # Inside a Pipeline it pointed at sklearn's pipeline.py (a fixed
    # stacklevel counts from skfed's fit, whose caller was sklearn).
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skfed.ensemble import SecureBoostClassifier

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 4)), np.arange(40) % 2
    clf = SecureBoostClassifier(n_estimators=1, max_depth=1, key_size=1024)
    model = clf if wrap == "bare" else make_pipeline(StandardScaler(), clf)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if wrap == "cross_val_score":
            line = sys._getframe().f_lineno + 1
            cross_val_score(model, X, y, cv=2)
        else:
            line = sys._getframe().f_lineno + 1
            model.fit(X, y)
    keys = [w for w in caught if issubclass(w.category, InsecureKeyWarning)]
    assert keys, caught
    assert {(w.filename, w.lineno) for w in keys} == {(__file__, line)}


_GRID_SEARCH = """
import sys, warnings
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV
from skfed.crypto import InsecureKeyWarning
from skfed.ensemble import SecureBoostClassifier

X, y = make_classification(n_samples=48, n_features=4, random_state=0)
search = GridSearchCV(SecureBoostClassifier(n_estimators=1, max_depth=1,
                                            key_size=1024, random_state=0),
                      {"learning_rate": [0.1, 0.2, 0.3]}, cv=3, n_jobs=2)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("default")  # Python's default for a UserWarning
    search.fit(X, y)
print("caller", sum(issubclass(w.category, InsecureKeyWarning) for w in caught))
sys.stderr.write("--- ignored ---\\n")
sys.stderr.flush()
warnings.filterwarnings("ignore", category=InsecureKeyWarning)
search.fit(X, y)
"""


@pytest.mark.slow
def test_grid_search_with_workers_warns_once_per_process():
    # 9 fits in 2 joblib workers, then the refit in the caller: sklearn
    # re-installs the caller's filters around every task, which made each
    # worker print the key warning for every fit (9 lines, plus the refit's).
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _GRID_SEARCH],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    shown, ignored = run.stderr.split("--- ignored ---")
    in_workers = shown.count("InsecureKeyWarning: A 1024-bit Paillier key")
    assert 1 <= in_workers <= 2  # once per worker process at most
    assert "caller 1" in run.stdout  # the refit, in the caller's process
    # A filter set by the caller reaches the workers (sklearn passes the
    # filters on): nothing is shown.
    assert "InsecureKeyWarning" not in ignored


def test_in_a_worker_the_filters_still_decide(monkeypatch):
    # As in a joblib worker: a child process whose filters are re-installed
    # around every task (which resets Python's memory of shown warnings).
    import multiprocessing

    from skfed.crypto import _key_policy

    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())
    monkeypatch.setattr(_key_policy, "_shown_in_worker", set())

    def tasks(action):
        shown = 0
        for _ in range(3):
            with warnings.catch_warnings(record=True) as caught:
                warnings.resetwarnings()
                warnings.simplefilter(action, InsecureKeyWarning)
                check_key_size(1024)
            shown += len(caught)
        return shown

    assert tasks("default") == 1  # once per line, as Python promises
    assert tasks("always") == 3
    assert tasks("ignore") == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsecureKeyWarning)
        for _ in range(2):  # every fit fails, not only the first
            with pytest.raises(InsecureKeyWarning):
                check_key_size(1024)
