#!/usr/bin/env bash
# capture-amd64.sh STATE OUTDIR: core of a Go process (tests/corecases) with a thread stopped
# exactly in STATE, taken with gdb + gcore on this amd64 host. Writes into OUTDIR:
#   STATE.core            gcore core file (about 1 GB raw, mostly zeros: compress with zstd -19)
#   corecases[-cgo].amd64 the exact binary
#   STATE.gdb-bt.txt      gdb `info threads` + `thread apply all bt` (secondary native oracle)
#   STATE.gdb.json        stopped thread, breakpoint, per-thread Go view (m, g0, curg, g0 slot)
#   STATE.dlv.txt         Delve: threads (thread -> goroutine), goroutines with stacks (Go oracle)
#   STATE.meta.json       summary
# GO=/path/to/go selects another toolchain: GO=/path/to/go tools/coredump/capture-amd64.sh STATE OUTDIR
# BINARY=path uses that prebuilt corecases binary (e.g. an existing case's, so that the new case
# shares its blob: Go stamps the VCS state into each build).
# STATE=all captures every state.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -eq 2 ] || die "usage: $0 STATE|all OUTDIR"
STATE=$1
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
if [ "$STATE" = all ]; then
	rc=0
	for s in $STATES; do "$0" "$s" "$OUT" || rc=1; done
	exit $rc
fi
case " $STATES $EXTRA_STATES " in *" $STATE "*) ;; *) die "unknown state $STATE (one of: $STATES $EXTRA_STATES)";; esac
[ "$(uname -m)" = x86_64 ] || die "amd64 host required"

if [ "$STATE" = labels ]; then
	BIN=$(build_labels amd64 "$OUT") RUN_ARGS="-duration 0"
else
	# systemstack-nested runs the systemstack workload: its GC marks on g0 (markroot ->
	# systemstack) while the large allocations keep GC cycles coming.
	RUN_STATE=$STATE; [ "$STATE" = systemstack-nested ] && RUN_STATE=systemstack
	[ "${STATE#acgo-}" != "$STATE" ] && RUN_STATE=cgo  # asmcgocall's windows: the cgo caller
	[ "$STATE" = cgocallback-g0 ] && RUN_STATE=cgocallback
	[ "$STATE" = cgocallback-inner-g0 ] && RUN_STATE=cgocallback-nested
	if [ -n "${BINARY:-}" ]; then  # a prebuilt corecases binary (an existing case's: one blob)
		case $STATE in cgo|cgocallback*|acgo-*) BIN=$OUT/corecases-cgo.amd64 ;; *) BIN=$OUT/corecases.amd64 ;; esac
		cp "$BINARY" "$BIN" && chmod +x "$BIN"
	else
		BIN=$(build_corecases amd64 "$STATE" "$OUT")
	fi
	RUN_ARGS="-state $RUN_STATE"
fi
GOVER=$(go_version)

# Where to stop, per state.
MODE=break PICK="" BP="" BP_COND="" EXTRA_ARGS="" RUN_ENV="" KILL_SIG=""
case $STATE in
leaf)        BP="*$(printf '0x%x' $(( $(func_addr "$BIN" main.leaf) + 3 )))" ;;  # 2nd instruction of the frameless leaf
systemstack) BP="'runtime.(*mheap).alloc.func1'" ;;
systemstack-nested) BP="*$(direct_path_addr "$BIN")"; [ "$BP" != "*" ] || die "no noswitch path in runtime.systemstack" ;;
labels)      # the goroutine labelled alloc=big allocates 1 MiB objects: on g0 under systemstack,
             # while the others spin with their labels (8 on one, none on another)
             BP="'runtime.(*mheap).alloc.func1'" ;;
mcall-curg)  BP="'runtime.park_m'" ;;
dropg|gosched)
	fn=park_m; [ "$STATE" = gosched ] && fn=goschedImpl
	read -r l n <<<"$(dropg_lines "$fn")"; [ -n "${n:-}" ] || die "no dropg() in runtime.$fn"
	addr=$(addr_after_dropg "$BIN" "runtime.$fn" "$l" "$n")
	[ -n "$addr" ] || die "no code for proc.go:$n after dropg() (proc.go:$l) in runtime.$fn"
	BP="*$addr"; echo "capture: $STATE: runtime.$fn: dropg() at proc.go:$l, next statement proc.go:$n at $addr" >&2 ;;
morestack)   BP="'runtime.newstack'" ;;
cgo)         BP="cc_leaf" ;;
acgo-g0|acgo-gp)  # the window's first instruction, decoded from asmcgocall's code
	a=$(acgo_window_addr "$BIN" "${STATE#acgo-}"); [ -n "$a" ] || die "$STATE: asmcgocall's window not found in $BIN"
	BP="*$a" ;;
vdso)        BP="__vdso_clock_gettime" ;;
cgocallback) BP="'main.cbWork'" ;;
cgocallback-nested) BP="'runtime.(*mheap).alloc.func1'" ;;  # only the inner callback allocates spans
cgocallback-g0) a=$(cgocallback_g0_addr "$BIN"); [ -n "$a" ] || die "no runtime.cgocallback in $BIN"; BP="*$a" ;;
cgocallback-inner-g0)  # the inner callback's (called by the C stub goNestInner), not the outer's
	a=$(cgocallback_saved_addr "$BIN"); [ -n "$a" ] || die "no g0.sched.sp store in runtime.cgocallback in $BIN"
	BP="*$a" BP_COND='$_any_caller_matches("^goNestInner$", 4)' ;;
signal)      BP="'runtime.sighandler'" ;;
crash)       # GOTRACEBACK=crash + SIGABRT: Go relays SIGQUIT to every M; the thread that
             # finally crashes stops in dieFromSignal, every other one waits in its handler.
             BP="'runtime.dieFromSignal'" RUN_ENV="GOTRACEBACK=crash" KILL_SIG=SIGABRT ;;
idle)        MODE=attach PICK="runtime.mstart,runtime.stopm,runtime.futex" ;;
stale)       MODE=stale EXTRA_ARGS="-procs 4" ;;
stale-parked) MODE=stale-parked EXTRA_ARGS="-procs 2" RUN_ENV="GODEBUG=asyncpreemptoff=1" ;;
esac

PID=""
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null || true; [ -n "${FIFO_DIR:-}" ] && rm -rf "$FIFO_DIR"; }
trap cleanup EXIT
FIFO_DIR=$(mktemp -d)
rm -f "$OUT/$STATE".{core,gdb-bt.txt,gdb.json,gdb-error.txt,dlv.txt,meta.json}

# Start the program and wait for "ready".
# shellcheck disable=SC2086
env $RUN_ENV "$BIN" $RUN_ARGS $EXTRA_ARGS >"$FIFO_DIR/stdout" 2>"$FIFO_DIR/stderr" &
PID=$!
disown "$PID"  # no job-control "Killed" notice when we kill it
for _ in $(seq 100); do grep -q '^ready' "$FIFO_DIR/stdout" && break; sleep 0.05; done
grep -q '^ready' "$FIFO_DIR/stdout" || die "$STATE: program not ready: $(cat "$FIFO_DIR/stderr")"
sleep 0.2  # let the state settle (idle Ms park, workers spin up)

CAPTURE_STATE=$STATE CAPTURE_OUT=$OUT CAPTURE_MODE=$MODE CAPTURE_BP=$BP CAPTURE_BP_COND=$BP_COND CAPTURE_PICK=$PICK CAPTURE_PID=$PID \
	CAPTURE_KILL_SIG=$KILL_SIG \
	timeout 90 gdb -batch -nx -p "$PID" -x "$COREDUMP_DIR/gdb_capture.py" >"$FIFO_DIR/gdb.log" 2>&1 || true
kill -9 "$PID" 2>/dev/null || true
for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.02; done
PID_SAVED=$PID PID=""
if [ ! -s "$OUT/$STATE.gdb.json" ] || [ ! -s "$OUT/$STATE.core" ]; then
	cat "$OUT/$STATE.gdb-error.txt" 2>/dev/null >&2 || tail -20 "$FIFO_DIR/gdb.log" >&2
	die "$STATE: gdb capture failed"
fi

LWPS=$(python3 -c 'import json,sys; print(" ".join(str(t["lwp"]) for t in json.load(open(sys.argv[1]))["threads"]))' "$OUT/$STATE.gdb.json")
# shellcheck disable=SC2086
dlv_oracle "$BIN" "$OUT/$STATE.core" "$OUT/$STATE.dlv.txt" $LWPS

python3 "$COREDUMP_DIR/meta.py" --state "$STATE" --arch amd64 --go-version "$GOVER" --binary "$BIN" \
	--core "$OUT/$STATE.core" --pid "$PID_SAVED" --gdb-json "$OUT/$STATE.gdb.json" \
	--gdb-bt "$OUT/$STATE.gdb-bt.txt" --dlv "$OUT/$STATE.dlv.txt" --out "$OUT/$STATE.meta.json"
