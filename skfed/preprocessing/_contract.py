"""The privacy contracts of the federated transformers.

Roles: ``"party"`` (every holder of rows: ``user*`` on a horizontal split,
``client*`` on a hybrid one) and ``"server"``. A vertical split sends no
message, so every one of these contracts holds trivially there. Each secure
sum contributes its pair-seed and upload rules
(:func:`~skfed.privacy.secure_sum_rules`: masked uploads, uniform in the
ring) and, where the server sends something with it, its request rule.
Everything the server sends back is a fitted statistic, declared public: it
is what every holder needs to transform its rows (the security page of the
user guide says, transformer by transformer, what these statistics reveal).

Sizes: ``features`` (the columns), ``rows``, and the sizes a fit records
(``est._privacy_sizes``): ``intervals`` (histogram intervals of a search
round), ``histogram`` (values of a histogram upload), ``slots`` (slots of a
value-count round), ``opened`` (values opened in one round), ``words``
(40-bit words per opened value), ``given`` (categories given by the
user) and ``edges`` (bin edges sent).
"""

# Authors: The skfed developers
# SPDX-License-Identifier: BSD-3-Clause

from .._privacy_core import Contract, Public, RandomIds, Rule, secure_sum_rules

__all__ = ["contract_for", "SIZE_NAMES"]

#: the sizes a fit records for its contract (0 when a protocol did not run)
SIZE_NAMES = ("intervals", "histogram", "slots", "opened", "words", "given",
              "edges")

_PARTY, _SERVER = "party", "server"
_OUTPUT = ("columns", "rows")  # what a declared output may resemble


def _summed(phase, max_size, what):
    """The seed and upload rules of one secure sum."""
    keys, upload = secure_sum_rules(phase, _PARTY, _SERVER, max_size)
    upload.note = f"{what}: masked, only the total decodes"
    return [keys, upload]


def _request(phase, *elements, note=""):
    return Rule(f"{phase}/request", _SERVER, _PARTY, tuple(elements), note=note)


def _fitted(phase, *elements, note="the fitted statistics, for transform"):
    return Rule(phase, _SERVER, _PARTY, tuple(elements), note=note)


def _public(note, dtype="f", max_size="features", **kwargs):
    return Public(note, dtype=dtype, max_size=max_size, **kwargs)


def _moments(phase):
    """:func:`~._protocol.fit_moments` under ``phase``."""
    weights = _public("the weight (count) of each column's values")
    means = _public("the column means")
    variances = _public("the column variances")
    return [
        *_summed(f"{phase}: count", "8 * features",
                 "[sum w] per column (8 exact limbs each)"),
        *_summed(f"{phase}: mean", "16 * features",
                 "[sum w, sum w x] per column (8 exact limbs each)"),
        _request(f"{phase}: variance", means,
                 note="the second pass is centred on the fitted means"),
        *_summed(f"{phase}: variance", "16 * features",
                 "[sum w (x - mean)^2, sum w (x - mean)] per column"),
        _fitted(f"{phase}: fitted", weights),
        _fitted(f"{phase}: fitted", weights, means),
        _fitted(f"{phase}: fitted", weights, means, variances),
    ]


def _row_count(phase="count"):
    return _summed(phase, 8, "the holder's row count (8 exact limbs)")


def _extremes(phase="extremes"):
    """:func:`~._protocol.fit_extremes`: sixteen secure ORs."""
    return [
        _request(phase,
                 _public("the bits of the extremes found so far (sort keys)",
                         dtype="u", max_size="2 * features"),
                 _public("this round's bit position", dtype="i", max_size=1),
                 note="the fitted extremes, four bits per round"),
        *_summed(phase, "32 * features",
                 "16 secure-OR flags per extreme (a uniform element if set)"),
        _fitted(f"{phase}: fitted", _public("the column minima"),
                _public("the column maxima")),
    ]


def _search(phase, weighted=False):
    """A histogram search (:func:`~._protocol.fit_order_values`)."""
    return [
        _request(phase,
                 _public("the column of each interval", dtype="i",
                         max_size="intervals"),
                 _public("each interval's lowest sort key", dtype="u",
                         max_size="intervals"),
                 _public("each interval's highest sort key", dtype="u",
                         max_size="intervals"),
                 _public("sub-ranges per interval", dtype="i", max_size=1),
                 note="the key intervals known to hold the order statistics"),
        *_summed(phase, "histogram",
                 "the holder's " + ("weights" if weighted else "counts")
                 + " per key sub-range"),
    ]


def _value_counts(phase):
    """:func:`~._protocol.fit_value_counts`: keyed slots, then openings."""
    # column and slot indices, byte lengths: small integers that a table of
    # small integer codes can contain as a row by coincidence (the checker
    # found [0, 1] as a private row); they are indices, not data
    opened = dict(dtype="i", max_size="opened", exempt=_OUTPUT)
    return [
        Rule(f"{phase}: key", _PARTY, _PARTY,
             (RandomIds("the holders' slot key, from the first holder's "
                        "CSPRNG", dtype="u", max_size=16),),
             note="never sent to the server: it cannot compute a slot"),
        *_summed(f"{phase}: sizes", "features",
                 "the holder's number of distinct values per column"),
        _request(f"{phase}: slots",
                 _public("the round (a fresh hash per round)", dtype="i",
                         max_size=1),
                 _public("slots per column", dtype="i")),
        *_summed(f"{phase}: slots", "4 * slots",
                 "(rows, h, h t, h t^2) per keyed slot"),
        _request(f"{phase}: lengths", _public("opened columns", **opened),
                 _public("opened slots", **opened)),
        *_summed(f"{phase}: lengths", "opened",
                 "h times the byte length of the value in each opened slot"),
        _request(f"{phase}: values", _public("opened columns", **opened),
                 _public("opened slots", **opened),
                 _public("words per value", dtype="i", max_size=1)),
        *_summed(f"{phase}: values", "opened * words",
                 "h times the 40-bit words of the value in each opened slot"),
        _fitted(f"{phase}: fitted", _public("opened columns", **opened),
                _public("opened slots", **opened),
                _public("byte lengths of the opened values", **opened),
                _public("the opened values, in 40-bit words", dtype="u",
                        max_size="opened * words", exempt=_OUTPUT),
                note="the opened values are the fitted categories (a column "
                     "of distinct values is its own set of categories)"),
    ]


def _flags(phase):
    """:func:`~._protocol.fit_any`: one secure OR per column."""
    return [*_summed(phase, "features", "one secure-OR flag per column"),
            _fitted(f"{phase}: fitted", _public("one flag per column",
                                                dtype="b"))]


def _standard_scaler(est):
    return _moments("moments")


def _min_max_scaler(est):
    return _row_count() + _extremes()


def _simple_imputer(est):
    rules = (_moments("mean") + _moments("median") + _search("median: search")
             + [_fitted("median: fitted", _public("the column medians"))]
             + _value_counts("mode") + _flags("flags"))
    return rules + _flags("indicator")


def _one_hot_encoder(est):
    return _value_counts("categories") + _summed(
        "counts", "given", "the holder's row count of each given category")


def _kbins_discretizer(est):
    return (_row_count() + _extremes() + _moments("total weight")
            + _search("quantiles", weighted=True)
            + [_fitted("bins: fitted",
                       _public("every column's edges, end to end",
                               max_size="edges"),
                       _public("edges per column", dtype="i"))])


_BUILDERS = {
    "StandardScaler": _standard_scaler,
    "MinMaxScaler": _min_max_scaler,
    "MaxAbsScaler": _min_max_scaler,
    "SimpleImputer": _simple_imputer,
    "OneHotEncoder": _one_hot_encoder,
    "KBinsDiscretizer": _kbins_discretizer,
}


def contract_for(est):
    """The contract of a federated transformer (by its class)."""
    name = type(est).__name__
    return Contract(f"{name} (federated preprocessing)", _BUILDERS[name](est))
