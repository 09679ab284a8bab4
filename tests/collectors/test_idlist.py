"""Long id lists as ranges with their count."""
from __future__ import annotations

from collectors.idlist import id_ranges, summarize_ids


def test_consecutive_ids_are_one_range():
    assert summarize_ids(range(1, 6001)) == "6000 ids: 1-6000"
    assert summarize_ids([7]) == "1 id: 7"
    assert summarize_ids([4, 7, 8, 9, 12], "run") == "5 runs: 4, 7-9, 12"


def test_many_ranges_show_the_first_and_how_many_more():
    ids = list(range(1, 41, 2))  # 20 single ids
    text = summarize_ids(ids)
    assert text.startswith("20 ids: 1, 3, 5") and text.endswith("... (12 more range(s))")
    assert len(text) < 80


def test_ranges_keep_the_order_given():
    assert id_ranges([3, 4, 1, 2, 2]) == [(3, 4), (1, 2), (2, 2)]
