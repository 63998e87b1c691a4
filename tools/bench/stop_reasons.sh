#!/usr/bin/env bash
# How the stacks of the live demo workloads end, per Go version and mode: the share of each
# stop reason in `switchback record --stats`, for this build and (BEFORE=path to another
# switchback, e.g. main's) for a second build recording the same process at the same time, so
# that before/after figures come from the same run.
#
# Usage: tools/bench/stop_reasons.sh [BUILD_DIR]          (root; default BUILD_DIR=build)
# Environment: VERSIONS (default "1.19 1.23 1.27"; 1.21+ from tools/fetch-go.sh),
#   MODES (default "alloc recurse": the demo's -mode; cgo-callbacks: democgo -callbacks, C code
#   calling back into Go), SECONDS_PER_RUN (default 10), FREQ (default 499),
#   RUNS (default 1), BEFORE (another switchback binary, optional), OUT=FILE (JSON lines).
# Prints one line per (version, mode, run, build): samples and every stop reason but root
# with its count and share, then the medians over the runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build}
SWITCHBACK=${SWITCHBACK:-$BUILD_DIR/tools/switchback}
VERSIONS=${VERSIONS:-"1.19 1.23 1.27"}
MODES=${MODES:-"alloc recurse"}
SECS=${SECONDS_PER_RUN:-10}
FREQ=${FREQ:-499}
RUNS=${RUNS:-1}

die() { echo "stop_reasons: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (BPF)"
[[ -x $SWITCHBACK ]] || die "no switchback at $SWITCHBACK (ninja -C $BUILD_DIR switchback)"
[[ -z ${BEFORE:-} || -x $BEFORE ]] || die "BEFORE=$BEFORE is not executable"

SCRATCH=$(mktemp -d /tmp/sb-stops.XXXXXX)
BG=()
cleanup() {
  local p
  for p in "${BG[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

go_for() {
  if [[ $1 == 1.19 ]]; then echo go; return; fi
  local line
  line=$(tools/fetch-go.sh "$1") || die "tools/fetch-go.sh $1 failed"
  echo "${line#* }/bin/go"
}

summarize() {  # STATS_JSON LABEL
  python3 - "$1" "$2" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
n = j.get("samples", 0)
stops = {k: v for k, v in j.get("stop_reasons", {}).items() if k != "root" and v}
row = {"label": sys.argv[2], "samples": n, "verified_insns": j.get("bpf", {}).get("verified_insns"),
       "stops": stops, "share_pct": {k: round(100.0 * v / n, 3) if n else None for k, v in stops.items()}}
print(json.dumps(row))
EOF
}

results="$SCRATCH/results.jsonl"
: >"$results"
for v in $VERSIONS; do
  go=$(go_for "$v")
  demo="$SCRATCH/demo-$v"
  (cd testdata/workloads/demo && env GOTOOLCHAIN=local GOFLAGS= CGO_ENABLED=0 "$go" build -o "$demo" .) \
    || die "go$v build failed"
  if [[ " $MODES " == *" cgo-callbacks "* ]]; then
    (cd testdata/workloads/democgo && env GOTOOLCHAIN=local GOFLAGS= CGO_ENABLED=1 "$go" build \
      -o "$SCRATCH/democgo-$v" .) || die "go$v democgo build failed"
  fi
  for mode in $MODES; do
    for run in $(seq 1 "$RUNS"); do
      if [[ $mode == cgo-callbacks ]]; then
        "$SCRATCH/democgo-$v" -callbacks -duration=0 >/dev/null 2>&1 &
      else
        "$demo" -mode="$mode" -duration=0 >/dev/null 2>&1 &
      fi
      pid=$!
      BG+=("$pid")
      sleep 1
      rec=()
      "$SWITCHBACK" record -p "$pid" -d "$SECS" -F "$FREQ" -q -o "$SCRATCH/after.pb.gz" \
        --stats "$SCRATCH/after.json" &
      rec+=($!)
      if [[ -n ${BEFORE:-} ]]; then
        "$BEFORE" record -p "$pid" -d "$SECS" -F "$FREQ" -q -o "$SCRATCH/before.pb.gz" \
          --stats "$SCRATCH/before.json" &
        rec+=($!)
      fi
      for r in "${rec[@]}"; do wait "$r" || die "record failed (go$v $mode)"; done
      kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      summarize "$SCRATCH/after.json" "go$v $mode run$run this" | tee -a "$results"
      [[ -z ${BEFORE:-} ]] || summarize "$SCRATCH/before.json" "go$v $mode run$run before" | tee -a "$results"
    done
  done
done
[[ -z ${OUT:-} ]] || cp "$results" "$OUT"
python3 - "$results" <<'EOF'
import json, statistics, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
groups = collections.defaultdict(list)
for r in rows:
    v, mode, _, build = r["label"].split()
    groups[(v, mode, build)].append(r)
print("medians over runs (share of samples, %):")
for (v, mode, build), rs in sorted(groups.items()):
    reasons = sorted({k for r in rs for k in r["stops"]})
    med = {k: statistics.median([r["share_pct"].get(k, 0.0) or 0.0 for r in rs]) for k in reasons}
    whole = statistics.median([100.0 * (r["samples"] - sum(v for k, v in r["stops"].items()
                                                            if k not in ("goroutine_exited", "goroutine_left"))) / max(r["samples"], 1)
                               for r in rs])
    print(f"  {v} {mode:8s} {build:6s} samples {statistics.median([r['samples'] for r in rs]):7.0f}  "
          f"whole {whole:.2f}%  " + ", ".join(f"{k} {x:.2f}" for k, x in med.items()))
EOF
