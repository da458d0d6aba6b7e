import numpy as np
import pytest

from skfed.federation import CommunicationSummary, measure


class _Cipher:
    def __message_size__(self):
        return (0, 3, 768)


def test_measure_counts_scalars_arrays_and_ciphertexts():
    assert measure(None) == (0, 0, 0)
    assert measure(3) == (1, 0, 8)
    assert measure(2.5) == (1, 0, 8)
    assert measure(2**300) == (1, 0, 38)
    assert measure(np.zeros((3, 4))) == (12, 0, 96)
    assert measure(np.zeros(5, dtype=np.int32)) == (5, 0, 20)
    assert measure((np.zeros(2), 1, [_Cipher()])) == (3, 3, 16 + 8 + 768)
    assert measure({"a": 1.0}) == (1, 0, 9)


def test_summary_views_add_up():
    s = CommunicationSummary([
        ("a", "b", "x", 2, 10, 0, 80),
        ("b", "a", "x", 1, 0, 4, 1000),
        ("a", "c", "y", 1, 1, 0, 8),
    ])
    assert (s.total_messages, s.total_bytes, s.total_ciphertexts) == (4, 1088, 4)
    assert s.by_phase["x"] == {"messages": 3, "scalars": 10, "ciphertexts": 4,
                               "bytes": 1080}
    assert s.by_party["a"] == {"sent_messages": 3, "sent_bytes": 88,
                               "received_messages": 1, "received_bytes": 1000}
    both = s + s
    assert both.total_bytes == 2 * s.total_bytes
    assert len(both.records) == 3
    frame = s.to_frame()
    assert frame["bytes"].sum() == 1088
    assert "total" in s.table() and "a -> b" in s.table("link")


def test_summary_difference_is_the_later_messages():
    before = CommunicationSummary([("a", "b", "x", 2, 10, 0, 80)])
    later = CommunicationSummary([("a", "b", "x", 1, 5, 0, 40),
                                  ("b", "a", "y", 1, 0, 1, 300)])
    assert (before + later) - before == later
    assert (before + later) - (before + later) == CommunicationSummary()
    with pytest.raises(ValueError, match="earlier state"):
        before - (before + later)
    with pytest.raises(TypeError):
        before - 3


def test_summary_rejects_other_types():
    with pytest.raises(TypeError):
        CommunicationSummary() + 3
