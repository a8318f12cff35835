#!/bin/bash
# Where a graceful failover's time goes, with the bench ensemble already up
# (../shared/bench/zk/start-ensemble.sh):
#   - perf stat (software counters: task-clock, context switches) of the whole
#     driver + participants tree, 100 graceful failovers at N=2, per library;
#     the driver's own share is the same for every library;
#   - the in-process failover latency of libzkelect (bench/scale.c with 2
#     candidacies on 2 sessions), which has no participant tool nor pipe in it.
#
#   bench/profile.sh BUILD_DIR [OUTFILE]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:?usage: bench/profile.sh BUILD_DIR [OUTFILE]}" && pwd)
OUT=${2:-/dev/stdout}
SHARED=${ZKELECT_SHARED_BENCH:-$HERE/../../shared/bench}
TMP=$(mktemp -d /tmp/zkelect-profile-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export LD_LIBRARY_PATH=$BUILD/capi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$BUILD/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}

mkdir -p "$TMP/curator"
cp "$SHARED"/participants/curator/{CuratorParticipant.java,build.sh,run.sh} "$TMP/curator/"
chmod +x "$TMP"/curator/*.sh
"$TMP/curator/build.sh"
cc -O2 -o "$TMP/scale" "$HERE/scale.c" $(pkg-config --cflags --libs libzkelect) -lpthread

TRIALS=${TRIALS:-100}
drive() { # name impl-args...
  local name=$1; shift
  perf stat -e task-clock,context-switches,cpu-migrations -x, -o "$TMP/$name.perf" -- \
    /usr/bin/python3 "$SHARED/peer_bench.py" "$@" --name "$name" --tests graceful --n 2 \
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
  echo "# bench/profile.sh $(date -u +%FT%TZ) load=$(cut -d' ' -f1-3 /proc/loadavg)"
  drive libzkelect --impl-cmd "$BUILD/tools/zkelect candidate"
  drive kazoo --impl kazoo
  drive curator --impl-cmd "$TMP/curator/run.sh"
  echo "## in-process libzkelect: 2 candidacies on 2 sessions, resign -> next ELECTED (library event times)"
  "$TMP/scale" --candidacies 2 --sessions 2 --failovers "$TRIALS" 2>/dev/null | /usr/bin/python3 -c '
import json, statistics, sys
d = json.load(sys.stdin)
s = sorted(d["failover_ms"])
print("in-process failovers=%d median=%.2f ms p90=%.2f ms min=%.2f ms; requests per failover %s"
      % (len(s), statistics.median(s), s[int(0.9 * len(s)) - 1], s[0], sorted(set(d["failover_requests"]))))'
} > "$OUT"
