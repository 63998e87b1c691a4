#!/usr/bin/env bash
# capture-arm64.sh STATE OUTDIR [COUNT]: harvest a linux/arm64 core of the corecases program with
# some thread in STATE. Cross-builds with GOARCH=arm64 (cgo: CC=aarch64-linux-gnu-gcc), runs it
# under qemu-aarch64 in a temp dir, lets it reach the state, and sends SIGABRT with tgkill to a
# sleeping thread. The program runs with -sigdfl (SIGABRT reset to SIG_DFL), so qemu writes the
# guest core qemu_*.core without Go's crash handler running (Go's handler, even with
# GOTRACEBACK=single, stops the world, prints and exits 2 without a core; see
# tools/coredump/README.md). Repeats up to COUNT times (default 20) and keeps the first core where
# classify.py finds a thread in STATE.
# Writes into OUTDIR: STATE.core, corecases[-cgo].arm64, STATE.classify.json (per-thread pcs,
# FP-walked frames, Go view), STATE.dlv.txt (Delve), STATE.meta.json.
# GO=/path/to/go selects another toolchain. STATE=all captures every state.
#
# BREAK=SYMBOL (default for STATE=asyncpreempt): deterministic instead of random. qemu-aarch64
# runs with its gdbstub (-g PORT), gdb-multiarch (gdb_qemu_break.py) sets a breakpoint at SYMBOL
# once main.main runs, passes over the hits before `ready` and SKIP more (default random 0-9),
# then resumes the stopped thread with SIGABRT: SIG_DFL (-sigdfl), so qemu writes the guest core
# with that thread exactly at the breakpoint. classify.py then only accepts the signalled thread
# (--signalled) and the rule becomes SYMBOL@0 plus the state's Go-view conditions. Writes
# STATE.gdbstub.json (breakpoint, hits) too. E.g. BREAK='runtime.(*mheap).alloc.func1' for
# systemstack. GOMAXPROCS is 1 (BREAK_PROCS): qemu 7.2's gdbstub races when threads report at once.
# asyncpreempt (arm64 only, needs BREAK) runs the program's crash state (a spinning
# frameless leaf on every P, asynchronously preempted by sysmon every 10 ms) and stops in
# runtime.asyncPreempt2.
# BINARY=path uses that prebuilt corecases binary instead of building one (e.g. the one an
# existing case's blob holds, so that the new case shares the blob; Go stamps VCS state into it).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || die "usage: $0 STATE|all OUTDIR [COUNT]"
STATE=$1 COUNT=${3:-20}
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
if [ "$STATE" = all ]; then
	rc=0
	for s in $STATES; do "$0" "$s" "$OUT" "$COUNT" || rc=1; done
	exit $rc
fi
case " $STATES asyncpreempt $ARM64_EXTRA_STATES " in *" $STATE "*) ;; *) die "unknown state $STATE (one of: $STATES asyncpreempt $ARM64_EXTRA_STATES)";; esac
command -v qemu-aarch64 >/dev/null || die "qemu-aarch64 not installed"

PROG_STATE=$STATE  # the program's -state
case $STATE in
asyncpreempt) PROG_STATE=crash BREAK=${BREAK:-runtime.asyncPreempt2} ;;
gogo-g0|gogo-gp) PROG_STATE=dropg GOGO_WINDOW=1 ;;  # channel handoffs: gogo at each, after park_m
sstack-g0|sstack-gp) PROG_STATE=systemstack SSTACK_WINDOW=1 ;;  # large allocations: systemstack at each
acgo-g0|acgo-gp) PROG_STATE=cgo SSTACK_WINDOW=runtime.asmcgocall ;;  # C calls: asmcgocall at each
cgocallback-nested) BREAK=${BREAK:-runtime.(*mheap).alloc.func1} ;;  # the inner callback's allocation
# in cgocallback on g0, past its prologue; the nested workload, whose callbacks all come from
# one goroutine's thread: with the C-created thread of `cgocallback` also hitting the breakpoint,
# qemu 7.2's gdbstub made gdb fail ("Recursive internal problem")
cgocallback-g0) PROG_STATE=cgocallback-nested CB_G0=1 ;;
# the inner callback's cgocallback right after it stored its SP as m.g0.sched.sp (called by the C
# stub goNestInner: gdb's condition)
cgocallback-inner-g0) PROG_STATE=cgocallback-nested CB_G0=saved BREAK_COND='$_any_caller_matches("^goNestInner$", 4)' ;;
esac
BREAK=${BREAK:-}
if [ -n "${BINARY:-}" ]; then
	case $STATE in cgo|cgocallback*|acgo-*) BIN=$OUT/corecases-cgo.arm64 ;; *) BIN=$OUT/corecases.arm64 ;; esac
	cp "$BINARY" "$BIN" && chmod +x "$BIN"
else
	BIN=$(build_corecases arm64 "$STATE" "$OUT")
fi
GOVER=$(go_version)
if [ -n "${GOGO_WINDOW:-}" ] && [ -z "$BREAK" ]; then  # the window's first instruction, from the code
	a=$(gogo_window_addr "$BIN" "${STATE#gogo-}")
	[ -n "$a" ] || die "$STATE: gogo's window not found in $BIN"
	BREAK="*$a"
fi
if [ -n "${CB_G0:-}" ] && [ -z "$BREAK" ]; then
	if [ "$CB_G0" = saved ]; then a=$(cgocallback_saved_addr "$BIN"); else a=$(cgocallback_g0_addr "$BIN"); fi
	[ -n "$a" ] || die "$STATE: the point in runtime.cgocallback not found in $BIN"
	BREAK="*$a"
fi
if [ -n "${SSTACK_WINDOW:-}" ] && [ -z "$BREAK" ]; then
	fn=runtime.systemstack; [ "$SSTACK_WINDOW" = 1 ] || fn=$SSTACK_WINDOW
	a=$(sstack_window_addr "$BIN" "${STATE#*-}" "$fn")
	[ -n "$a" ] || die "$STATE: $fn's window not found in $BIN"
	BREAK="*$a"
fi
if [ -n "$BREAK" ]; then command -v gdb-multiarch >/dev/null || die "BREAK needs gdb-multiarch"; fi
QEMU_ARGS=() EXTRA_ARGS=() SETTLE=0.3 RUN_ENV=() SIGDFL=(-sigdfl)
case $STATE in cgo|cgocallback*|acgo-*) QEMU_ARGS=(-L /usr/aarch64-linux-gnu) ;; esac

# classify.py rules (see its docstring): conditions on one thread's FP-walked frames / Go view.
case $STATE in
leaf)        RULE="main.leaf@0" ;;
systemstack) RULE="runtime.(*mheap).alloc.func1|runtime.systemstack,sp=g0,curg" ;;  # 2nd: any systemstack switch with a user g under it
mcall-curg|dropg)
	read -r l n <<<"$(dropg_lines park_m)"
	A0=$(func_addr "$BIN" runtime.park_m) A1=$(addr_after_dropg "$BIN" runtime.park_m "$l" "$n")
	[ -n "$A1" ] || die "no code after dropg() in runtime.park_m"
	# mcall-curg: in park_m before its dropg (m.curg still set: anywhere in park_m or below it)
	if [ "$STATE" = mcall-curg ]; then RULE="runtime.park_m@${A0#0x}-${A1#0x},curg,sp=g0|runtime.park_m,curg,sp=g0"
	else RULE="runtime.park_m@${A1#0x}-ffffffff,nocurg,sp=g0,!runtime.schedule|runtime.park_m,nocurg,sp=g0,!runtime.stopm"; fi ;;
gosched)     RULE="runtime.gosched_m,nocurg,sp=g0|runtime.gosched_m,sp=g0" ;;
morestack)   RULE="runtime.newstack" ;;
cgo)         RULE="cc_leaf|cc_middle|cc_spin" ;;
cgocallback) RULE="main.cbWork" ;;
vdso)        RULE="runtime.nanotime1@0|runtime.walltime@0|runtime.nanotime1.abi0@0|runtime.walltime.abi0@0|runtime.vdsoCall@0" ;;
signal)      RULE="sp=gsignal|runtime.sighandler|runtime.sigtrampgo" ;;
crash)       # Go's own handler this time (no -sigdfl): it relays SIGQUIT to every M and aborts.
             RULE="sp=gsignal" RUN_ENV=(GOTRACEBACK=crash) SIGDFL=() ;;
idle)        RULE="runtime.stopm,runtime.mstart,!runtime.park_m|runtime.stopm,runtime.mstart.abi0,!runtime.park_m" ; SETTLE=1 ;;
stale)       RULE="stale"; EXTRA_ARGS=(-procs 4) ;;
stale-parked) RULE="stale-parked"; EXTRA_ARGS=(-procs 2); RUN_ENV=(GODEBUG=asyncpreemptoff=1) ;;
asyncpreempt) RULE="" ;;
esac
if [ -n "$BREAK" ]; then
	# The signalled thread stopped at the breakpoint: its pc is in BREAK (gdb sets it after the
	# prologue), plus what the state is about.
	case $STATE in
	systemstack|cgocallback-nested) RULE="$BREAK@0,sp=g0,curg" ;;  # on g0 with a user goroutine under it
	asyncpreempt) RULE="$BREAK@0,sp=curg" ;;       # on the preempted goroutine's own stack
	*)            RULE="$BREAK@0" ;;
	esac
	case $BREAK in \**) RULE="" ;; esac             # *ADDRESS: no name to check
	[ -n "$RULE" ] || RULE="sp=g0|sp=curg|sp=gsignal|sp=other"
	if [ "$STATE" = crash ]; then die "crash runs Go's handler: no BREAK"; fi
	# qemu 7.2's user-mode gdbstub is not safe for two threads reporting at once (a breakpoint hit
	# or a signal, which it also reports, on another thread while one is stopped): seen hanging
	# gdb, and the SIGABRT going to another thread. One P (BREAK_PROCS) keeps Go code, breakpoint
	# hits and preemption signals on one thread at a time.
	EXTRA_ARGS=(-procs "${BREAK_PROCS:-1}")
fi

# The inner callback's: gdb's condition is not always right on arm64 (Go 1.27: the outer one
# stopped); the frame-record chain must show the inner C caller.
[ "$STATE" = cgocallback-inner-g0 ] && RULE="cc_nest_inner,sp=g0"
RULE=${RULE_OVERRIDE:-$RULE}  # e.g. RULE_OVERRIDE='runtime.newstack,!runtime.copystack'
QP="" TMP=""
cleanup() {
	if [ -n "$QP" ]; then kill -9 "$QP" 2>/dev/null || true; fi
	if [ -n "$TMP" ]; then rm -rf "$TMP"; fi
}
trap cleanup EXIT
rm -f "$OUT/$STATE".{core,classify.json,dlv.txt,meta.json,gdbstub.json}
CLASSIFY_ARGS=()
if [ -n "$BREAK" ]; then CLASSIFY_ARGS=(--signalled); fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

found=0
for i in $(seq "$COUNT"); do
	TMP=$(mktemp -d)
	GDBSTUB=()
	if [ -n "$BREAK" ]; then PORT=$(free_port); GDBSTUB=(-g "$PORT"); fi
	# bash -c: set the core limit, keep qemu's own host core tiny (coredump_filter 0: the guest
	# core is written by qemu itself), then exec so that $! is qemu.
	bash -c 'cd "$1" && ulimit -c unlimited && echo 0 >/proc/self/coredump_filter && shift && exec "$@"' _ \
		"$TMP" env "${RUN_ENV[@]}" qemu-aarch64 "${GDBSTUB[@]}" "${QEMU_ARGS[@]}" "$BIN" -state "$PROG_STATE" "${SIGDFL[@]}" "${EXTRA_ARGS[@]}" \
		>"$TMP/stdout" 2>"$TMP/stderr" &
	QP=$!
	disown "$QP"
	SIGTID=""
	if [ -n "$BREAK" ]; then
		# qemu waits for gdb before the guest's first instruction; the driver continues, stops at
		# BREAK after `ready` and resumes that thread with SIGABRT (qemu then writes the core).
		for _ in $(seq 100); do ss -ltn 2>/dev/null | grep -q "127.0.0.1:$PORT " && break; sleep 0.05; done
		gb=$BREAK; case $gb in \**) ;; *) gb="'$gb'" ;; esac
		CAPTURE_BINARY=$BIN CAPTURE_PORT=$PORT CAPTURE_BP=$gb CAPTURE_BP_COND=${BREAK_COND:-} CAPTURE_READY=$TMP/stdout \
			CAPTURE_SKIP=${SKIP:-$((RANDOM % 10))} CAPTURE_JSON=$TMP/gdbstub.json \
			timeout 300 gdb-multiarch -nx -batch -x "$COREDUMP_DIR/gdb_qemu_break.py" \
			>"$TMP/gdb.out" 2>&1 || true
		grep '^capture' "$TMP/gdb.out" >&2 || tail -3 "$TMP/gdb.out" >&2
		for _ in $(seq 300); do kill -0 "$QP" 2>/dev/null || break; sleep 0.05; done
	else
	for _ in $(seq 200); do grep -q '^ready' "$TMP/stdout" && break; sleep 0.05; done
	if ! grep -q '^ready' "$TMP/stdout"; then
		echo "capture: $STATE: try $i: not ready: $(head -3 "$TMP/stderr")" >&2
	else
		sleep "$SETTLE"
		sleep "0.$((RANDOM % 10))"  # vary the moment
		SIGTID=$(python3 "$COREDUMP_DIR/tgkill.py" "$QP" 6 sleeping)
		for _ in $(seq 300); do kill -0 "$QP" 2>/dev/null || break; sleep 0.05; done
	fi
	fi
	kill -9 "$QP" 2>/dev/null || true
	QPID=$QP QP=""
	core=$(ls "$TMP"/qemu_*.core 2>/dev/null | head -1 || true)
	if [ -n "$core" ] && python3 "$COREDUMP_DIR/classify.py" --binary "$BIN" --core "$core" --rule "$RULE" --go-minor "$(go_minor)" \
			"${CLASSIFY_ARGS[@]}" --json "$TMP/classify.json" >"$TMP/classify.txt" 2>&1; then
		mv "$core" "$OUT/$STATE.core"
		mv "$TMP/classify.json" "$OUT/$STATE.classify.json"
		if [ -n "$BREAK" ]; then
			mv "$TMP/gdbstub.json" "$OUT/$STATE.gdbstub.json"
			SIGTID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["signalled_lwp"])' "$OUT/$STATE.classify.json"); fi
		echo "capture: $STATE: try $i: match (signal sent to tid $SIGTID)" >&2
		cat "$TMP/classify.txt" >&2
		found=1
		rm -rf "$TMP"; TMP=""
		break
	fi
	echo "capture: $STATE: try $i: no match${core:+ }${core:-, no core}" >&2
	if [ -n "$core" ] && [ -n "$BREAK" ]; then cat "$TMP/classify.txt" >&2; fi
	rm -rf "$TMP"; TMP=""
done
[ "$found" = 1 ] || die "$STATE: no core in state after $COUNT tries"

if [ -n "$BREAK" ]; then
	METHOD="qemu-aarch64 guest core; gdb-multiarch on qemu's gdbstub: breakpoint $BREAK after ready (program -state $PROG_STATE), then SIGABRT (SIG_DFL) to the stopped thread, tid $SIGTID"
else
	METHOD="qemu-aarch64 guest core, SIGABRT (SIG_DFL) via tgkill to tid $SIGTID"
fi
dlv_oracle "$BIN" "$OUT/$STATE.core" "$OUT/$STATE.dlv.txt" \
	$(python3 -c 'import json,sys; print(" ".join(str(t["lwp"]) for t in json.load(open(sys.argv[1]))["threads"]))' "$OUT/$STATE.classify.json")
python3 "$COREDUMP_DIR/meta.py" --state "$STATE" --arch arm64 --go-version "$GOVER" --binary "$BIN" \
	--core "$OUT/$STATE.core" --pid "$QPID" --classify-json "$OUT/$STATE.classify.json" \
	${BREAK:+--breakpoint "$BREAK" --gdbstub-json "$OUT/$STATE.gdbstub.json"} \
	--dlv "$OUT/$STATE.dlv.txt" --method "$METHOD, try $i/$COUNT" \
	--out "$OUT/$STATE.meta.json"
