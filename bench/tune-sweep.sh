#!/usr/bin/env bash
# One tuning key's values against each other on one device, interleaved:
# ROUNDS rounds, each running tabcl-bench FAMILY once per value in turn, so
# load from other processes falls on every value alike. Then prints, per
# case, the median and the least of each value's figure and their ratios to
# the first value's.
#
#   bash bench/tune-sweep.sh OUT BUILD FAMILY METRIC KEY=V1,V2,... [ROUNDS]
#
# BUILD: a build folder with tools/tabcl-bench; the device is TABCL_DEVICE
# (with OCL_ICD_VENDORS etc. as the caller sets them); TABCL_BENCH_ARGS is
# passed on (default --quick --reps 3). METRIC: the jsonl figure compared
# (device_ms, sort_ms, host_lookup_ms, cpu_ms, ...); lower is taken to be
# faster. Leaves OUT/KEY=V-rN.jsonl and OUT/sweep.md.
set -u
[ $# -ge 5 ] || { echo "usage: bash bench/tune-sweep.sh OUT BUILD FAMILY METRIC KEY=V1,V2,... [ROUNDS]" >&2; exit 2; }
OUT=$1 BUILD=$2 FAMILY=$3 METRIC=$4 SPEC=$5 ROUNDS=${6:-3}
KEY=${SPEC%%=*}
VALUES=${SPEC#*=}
mkdir -p "$OUT"
read -r -a ARGS <<<"${TABCL_BENCH_ARGS:---quick --reps 3}"
for r in $(seq 1 "$ROUNDS"); do
  for v in ${VALUES//,/ }; do
    f=$OUT/$KEY=$v-r$r.jsonl
    rm -f "$f"
    TABCL_TUNE="$KEY=$v" "$BUILD/tools/tabcl-bench" "${ARGS[@]}" --jsonl "$f" "$FAMILY" >/dev/null 2>>"$OUT/sweep.log" ||
      echo "round $r, $KEY=$v: tabcl-bench failed (see $OUT/sweep.log)" >&2
  done
done
python3 - "$OUT" "$KEY" "$VALUES" "$ROUNDS" "$METRIC" <<'PY' | tee "$OUT/sweep.md"
import json, statistics, sys
out, key, values, rounds, metric = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]), sys.argv[5]
fig = {}
for v in values:
    for r in range(1, rounds + 1):
        try:
            lines = open("%s/%s=%s-r%d.jsonl" % (out, key, v, r)).read().splitlines()
        except OSError:
            continue
        for line in lines:
            x = json.loads(line)
            if x["metric"] == metric:
                fig.setdefault(x["case"], {}).setdefault(v, []).append(float(x["value"]))
print("| case | " + " | ".join("%s=%s" % (key, v) for v in values) + " |")
print("|---|" + "---|" * len(values))
for case, by in fig.items():
    base = statistics.median(by[values[0]]) if values[0] in by else None
    least = min(by[values[0]]) if values[0] in by else None
    cells = []
    for v in values:
        if v not in by:
            cells.append("-")
            continue
        m, lo = statistics.median(by[v]), min(by[v])
        cells.append("%.3f" % m + ("" if v == values[0] or not base else " (%.2fx)" % (m / base)) +
                     ", least %.3f" % lo + ("" if v == values[0] or not least else " (%.2fx)" % (lo / least)))
    print("| %s | %s |" % (case, " | ".join(cells)))
print("\n%s: the median and the least of %d rounds (each a median of tabcl-bench's reps), in the unit "
      "of tabcl-bench's jsonl; (Nx): over the first value's. Under load from other processes the least "
      "is the steadier figure." % (metric, rounds))
PY
