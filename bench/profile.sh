#!/bin/bash
# Where a graceful failover's time goes, against a running ensemble whose
# connect string is in $CONNECT, e.g. one of the test bed's with the bench's
# tick:  python3 tests/bed/zkbed.py start --dir /tmp/zkprof --tick-ms 500
#        (its last line is the connect string; stop it with `stop --dir`)
#   - perf stat (software counters: task-clock, context switches) of the whole
#     driver + participants tree, 100 graceful failovers at N=2, per library;
#     the driver's own share is the same for every library;
#   - the in-process failover latency of libzkelect (bench/scale.c with 2
#     candidacies on 2 sessions), which has no participant tool nor pipe in it;
#   - bench/failover_timeline.py: each failover decomposed from the ZooKeeper C
#     client's debug log (RESIGNED -> notification -> requests -> answers ->
#     LEADER), the read / write floor, the same failovers without the log and
#     with kazoo, client CPU per failover, and instructions per failover under
#     callgrind (per object, per role, top functions).
#
#   CONNECT=HOSTS bench/profile.sh BUILD_DIR [OUTFILE]
# PARTS (default "perf,scale,timeline") picks sections; TRIALS (100) the perf
# failovers; TIMELINE_ARGS extra options for failover_timeline.py (default:
# 40 failovers per run, callgrind over 30).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:?usage: bench/profile.sh BUILD_DIR [OUTFILE]}" && pwd)
OUT=${2:-/dev/stdout}
CONNECT=${CONNECT:?set CONNECT to the connect string of a running ensemble}
TMP=$(mktemp -d /tmp/zkelect-profile-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export LD_LIBRARY_PATH=$BUILD/capi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$BUILD/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
# the test bed (the package `bed`): the participant-protocol driver and the
# ensemble helpers
export PYTHONPATH=$HERE/../tests${PYTHONPATH:+:$PYTHONPATH}

PARTS=${PARTS:-perf,scale,timeline}
has() { case ",$PARTS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
if has perf; then
  "$HERE/participants/curator/build.sh" "$TMP/curator" >&2
  export CURATOR_CLASSES=$TMP/curator
fi

TRIALS=${TRIALS:-100}
drive() { # name impl-args...
  local name=$1; shift
  perf stat -e task-clock,context-switches,cpu-migrations -x, -o "$TMP/$name.perf" -- \
    /usr/bin/python3 "$HERE/election_bench.py" "$@" --name "$name" --connect "$CONNECT" --tests graceful --n 2 \
    --per-proc 1 --trials "$TRIALS" --warmup 5 --gap 0.02 --json "$TMP/$name.json" \
    --log-dir "$TMP/logs" >/dev/null
  /usr/bin/python3 - "$name" "$TMP/$name.perf" "$TMP/$name.json" <<'EOF'
import json, sys
name, perf, js = sys.argv[1:]
c = {}
for line in open(perf):
    w = line.strip().split(",")
    if len(w) > 2 and w[0] and not line.startswith("#"):
        try:
            c[w[2]] = float(w[0])
        except ValueError:
            pass
g = json.load(open(js))["results"]["graceful"][0]
n = len(g["samples_ms"]) + g["warmup"]
print("%-10s failovers=%d median=%.2f ms p90=%.2f ms | whole tree: task-clock %.0f ms, "
      "context switches %d, migrations %d"
      % (name, n, g["failover_ms"]["median"], g["failover_ms"]["p90"], c.get("task-clock", 0),
         c.get("context-switches", 0), c.get("cpu-migrations", 0)))
EOF
}
{
  echo "# bench/profile.sh $(date -u +%FT%TZ)"
  echo
  cat <<'EOF'
Where a graceful failover's time goes (issue 5: "a profile of where the time
goes" for the targets not met). A graceful failover: the leader resigns
(deletes its znode); the next candidate must become leader. On the bench
ensemble (3 servers on loopback, tickTime 500 ms), with the participant
protocol of docs/design.md:

- perf stat of the whole benchmark tree (software counters; hardware counters
  are not available on this machine) and the in-process failover latency, as
  before;
- bench/failover_timeline.py: `zkelect candidate` participants, one per
  process, with the ZooKeeper C client's debug log (every request queued,
  every answer and watch event received and handed over), its lines stamped in
  ns by an LD_PRELOAD shim (the log's own stamps are whole ms, too coarse);
  the leader is resigned in rotation and each failover is cut into segments
  from the old leader's RESIGNED to the new leader's LEADER. Also: the read /
  write floor of the same ensemble measured by the script, the same failovers
  without the debug log and with kazoo (client CPU per failover from
  /proc/PID/task/*/schedstat), and one candidate under valgrind's callgrind
  (instructions per failover, per object, per role, top functions). Times are
  from a shared 2-core machine with other tests running: compare within a
  run, prefer ratios, counts and instruction counts.
EOF
  echo
  echo "Commit \`$(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo '?')\`, build \`$BUILD\`," \
       "$(nproc) CPUs, load average at start $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  if has perf; then
    echo "## perf stat: whole driver + participants tree, $TRIALS graceful failovers at N=2 (election_bench.py)"
    echo
    echo '```'
    drive libzkelect --impl-cmd "$BUILD/tools/zkelect candidate"
    drive kazoo --impl-cmd "/usr/bin/python3 $HERE/participants/kazoo/kazoo_participant.py"
    drive curator --impl-cmd "$HERE/participants/curator/run.sh"
    echo '```'
    echo
  fi
  if has scale; then
    echo "## In-process libzkelect: 2 candidacies on 2 sessions, resign -> next ELECTED (library event times)"
    echo
    echo '```'
    "$BUILD/bench/zkelect-bench-scale" --connect "$CONNECT" --candidacies 2 --sessions 2 --failovers "$TRIALS" 2>/dev/null | /usr/bin/python3 -c '
import json, statistics, sys
d = json.load(sys.stdin)
s = sorted(d["failover_ms"])
print("in-process failovers=%d median=%.2f ms p90=%.2f ms min=%.2f ms; requests per failover %s"
      % (len(s), statistics.median(s), s[int(0.9 * len(s)) - 1], s[0], sorted(set(d["failover_requests"]))))'
    echo '```'
    echo
  fi
  if has timeline; then
    echo "## Failover timeline, floor, client CPU and callgrind (bench/failover_timeline.py)"
    echo
    # shellcheck disable=SC2086
    /usr/bin/python3 "$HERE/failover_timeline.py" --binary "$BUILD/tools/zkelect" \
      --connect "$CONNECT" --kazoo "$HERE/participants/kazoo/kazoo_participant.py" \
      ${TIMELINE_ARGS:---failovers 40 --callgrind 30 --callgrind-roles 15}
    echo
  fi
  echo "_Load average at end: $(cut -d' ' -f1-3 /proc/loadavg)._"
} > "$OUT"
