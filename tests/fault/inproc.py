"""Merging the in-process is_leader() samples of tests/fault/paused_leader.c.

Each process samples zkelect_is_leader() in a tight loop and reports every
change (FLIP), every stretch it was not scheduled while answering 1 (HOLE)
and the end of its loop (END), stamped with CLOCK_MONOTONIC around the calls.
All processes run on this machine, so their stamps share one clock and
time.monotonic_ns() of the test.

A "run" is a span [start, end] in which the process's calls answered 1 with
no unobserved stretch: start is taken just before the first call answering 1,
end just after the last one. Two runs of different processes that intersect
are two leaders at once, as seen by the processes themselves.
"""


def one_runs(lines, killed_mono=None):
    """[(start_ns, end_ns)] of one process from its split output lines.

    killed_mono: when the process was SIGKILLed, the monotonic time by which
    it was surely dead; a run still open then ends there."""
    runs = []
    cur = None
    for w in lines:
        if not w:
            continue
        if w[0] == "FLIP" and len(w) >= 5:
            v, first, prev = int(w[1]), int(w[3]), int(w[4])
            if v == 1:
                cur = first
            elif cur is not None:
                runs.append((cur, prev))
                cur = None
        elif w[0] == "HOLE" and cur is not None:
            runs.append((cur, int(w[1])))
            cur = int(w[2])
        elif w[0] == "END" and cur is not None:
            runs.append((cur, int(w[2])))
            cur = None
    if cur is not None:
        if killed_mono is None:
            raise AssertionError("a run of is_leader 1 has no end: the sampler neither "
                                 "reported END nor was killed")
        runs.append((cur, killed_mono))
    return runs


def run_overlaps(runs_by_name):
    """[((name, start, end), (name2, start2, end2))] of intersecting runs of
    different processes."""
    flat = sorted((a, b, n) for n, rs in runs_by_name.items() for a, b in rs)
    bad = []
    for i, (a, b, n) in enumerate(flat):
        for a2, b2, n2 in flat[i + 1:]:
            if a2 >= b:
                break
            if n2 != n:
                bad.append(((n, a, b), (n2, a2, b2)))
    return bad


def leader_events(lines):
    """[(type, reason)] of the ELECTED and DEPOSED events, in order."""
    out = []
    for w in lines:
        if len(w) >= 4 and w[0] == "EVENT" and w[1] in ("ELECTED", "DEPOSED"):
            reason = w[3].split("=", 1)[1] if w[3].startswith("reason=") else None
            out.append((w[1], reason))
    return out


def alternation_errors(events, may_end_leading):
    """What breaks "DEPOSED exactly once per ELECTED" in one process's
    sequence (empty if nothing). A process that stopped while leading (quit
    or killed) may end on an ELECTED: its sampler stops listening before the
    library's DEPOSED(closed)."""
    errs = []
    leading = False
    for k, (typ, reason) in enumerate(events):
        if typ == "ELECTED":
            if leading:
                errs.append(f"#{k}: ELECTED while leading")
            leading = True
        else:
            if not leading:
                errs.append(f"#{k}: DEPOSED({reason}) while not leading")
            leading = False
    if leading and not may_end_leading:
        errs.append("ends on an ELECTED without DEPOSED")
    return errs
