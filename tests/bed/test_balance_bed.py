"""bed/balance.py's arithmetic over spans (no ZooKeeper): overlaps() and
gaps(), on spans made up here."""

from bed.balance import gaps, overlaps


class P:
    def __init__(self, pid, spans):
        self.id, self.spans = pid, spans


def test_a_gap_falls_in_the_phase_it_ended_in_and_names_both_terms():
    # Election 0: a's term 1 to 100, b's term 2 from 150 (a gap of 50 that
    # began before the mark at 120), a's term 1 again from 700 after b's
    # 2 ended at 400 (300, in the second phase). Election 1: a within one
    # term, is_leader() 0 from 1000 to 1200 (the same term on both sides).
    a = P("a", {0: [[1, 0, 100], [3, 700, 800]], 1: [[5, 0, 1000], [5, 1200, 1300]]})
    b = P("b", {0: [[2, 150, 400]]})
    got = gaps([a, b], [("one", 120, 500), ("two", 500, 2000)])
    assert got["one"] == (50 / 1e6, 0, "a", "b", 1, 2)
    assert got["two"] == (300 / 1e6, 0, "b", "a", 2, 3)
    got = gaps([a, b], [("all", 0, 2000)])
    assert got["all"] == (300 / 1e6, 0, "b", "a", 2, 3)
    assert gaps([P("a", {1: [[5, 0, 1000], [5, 1200, 1300]]})], [("x", 0, 2000)])["x"] == \
        (200 / 1e6, 1, "a", "a", 5, 5)


def test_no_gap_when_terms_touch_or_a_phase_sees_none():
    a = P("a", {0: [[1, 0, 100]]})
    b = P("b", {0: [[2, 100, 200]]})
    assert gaps([a, b], [("x", 0, 1000), ("y", 1000, 2000)]) == {"x": None, "y": None}


def test_an_overlap_is_two_processes_at_once_only():
    a = P("a", {0: [[1, 0, 100], [3, 300, 400]]})
    b = P("b", {0: [[2, 100, 200]]})
    assert overlaps([a, b]) == [(0, ("a", 1, 0, 100), ("b", 2, 100, 200))]
    assert overlaps([a, P("b", {0: [[2, 101, 200]]})]) == []
