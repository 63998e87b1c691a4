#!/usr/bin/env bash
# capture-arm64.sh STATE OUTDIR [COUNT]: harvest a linux/arm64 core of the corecases program with
# some thread in STATE. Cross-builds with GOARCH=arm64 (cgo: CC=aarch64-linux-gnu-gcc), runs it
# under qemu-aarch64 in a temp dir, lets it reach the state, and sends SIGABRT with tgkill to a
# sleeping thread. The program runs with -sigdfl (SIGABRT reset to SIG_DFL), so qemu writes the
# guest core qemu_*.core without Go's crash handler running (Go's handler, even with
# GOTRACEBACK=single, stops the world, prints and exits 2 without a core; see README). Repeats up
# to COUNT times (default 20) and keeps the first core where classify.py finds a thread in STATE.
# Writes into OUTDIR: STATE.core, corecases[-cgo].arm64, STATE.classify.json (per-thread pcs,
# FP-walked frames, Go view), STATE.dlv.txt (Delve), STATE.meta.json.
# GO=/path/to/go selects another toolchain. STATE=all captures every state.
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
case " $STATES " in *" $STATE "*) ;; *) die "unknown state $STATE (one of: $STATES)";; esac
command -v qemu-aarch64 >/dev/null || die "qemu-aarch64 not installed"

BIN=$(build_corecases arm64 "$STATE" "$OUT")
GOVER=$(go_version)
QEMU_ARGS=() EXTRA_ARGS=() SETTLE=0.3 RUN_ENV=() SIGDFL=(-sigdfl)
case $STATE in cgo|cgocallback) QEMU_ARGS=(-L /usr/aarch64-linux-gnu) ;; esac

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
esac

RULE=${RULE_OVERRIDE:-$RULE}  # e.g. RULE_OVERRIDE='runtime.newstack,!runtime.copystack'
QP="" TMP=""
cleanup() {
	if [ -n "$QP" ]; then kill -9 "$QP" 2>/dev/null || true; fi
	if [ -n "$TMP" ]; then rm -rf "$TMP"; fi
}
trap cleanup EXIT
rm -f "$OUT/$STATE".{core,classify.json,dlv.txt,meta.json}

found=0
for i in $(seq "$COUNT"); do
	TMP=$(mktemp -d)
	# bash -c: set the core limit, keep qemu's own host core tiny (coredump_filter 0: the guest
	# core is written by qemu itself), then exec so that $! is qemu.
	bash -c 'cd "$1" && ulimit -c unlimited && echo 0 >/proc/self/coredump_filter && shift && exec "$@"' _ \
		"$TMP" env "${RUN_ENV[@]}" qemu-aarch64 "${QEMU_ARGS[@]}" "$BIN" -state "$STATE" "${SIGDFL[@]}" "${EXTRA_ARGS[@]}" \
		>"$TMP/stdout" 2>"$TMP/stderr" &
	QP=$!
	disown "$QP"
	for _ in $(seq 200); do grep -q '^ready' "$TMP/stdout" && break; sleep 0.05; done
	if ! grep -q '^ready' "$TMP/stdout"; then
		echo "capture: $STATE: try $i: not ready: $(head -3 "$TMP/stderr")" >&2
	else
		sleep "$SETTLE"
		sleep "0.$((RANDOM % 10))"  # vary the moment
		SIGTID=$(python3 "$COREDUMP_DIR/tgkill.py" "$QP" 6 sleeping)
		for _ in $(seq 300); do kill -0 "$QP" 2>/dev/null || break; sleep 0.05; done
	fi
	kill -9 "$QP" 2>/dev/null || true
	QPID=$QP QP=""
	core=$(ls "$TMP"/qemu_*.core 2>/dev/null | head -1 || true)
	if [ -n "$core" ] && python3 "$COREDUMP_DIR/classify.py" --binary "$BIN" --core "$core" --rule "$RULE" --go-minor "$(go_minor)" \
			--json "$TMP/classify.json" >"$TMP/classify.txt" 2>&1; then
		mv "$core" "$OUT/$STATE.core"
		mv "$TMP/classify.json" "$OUT/$STATE.classify.json"
		echo "capture: $STATE: try $i: match (signal sent to tid $SIGTID)" >&2
		cat "$TMP/classify.txt" >&2
		found=1
		rm -rf "$TMP"; TMP=""
		break
	fi
	echo "capture: $STATE: try $i: no match${core:+ }${core:-, no core}" >&2
	rm -rf "$TMP"; TMP=""
done
[ "$found" = 1 ] || die "$STATE: no core in state after $COUNT tries"

dlv_oracle "$BIN" "$OUT/$STATE.core" "$OUT/$STATE.dlv.txt" \
	$(python3 -c 'import json,sys; print(" ".join(str(t["lwp"]) for t in json.load(open(sys.argv[1]))["threads"]))' "$OUT/$STATE.classify.json")
python3 "$COREDUMP_DIR/meta.py" --state "$STATE" --arch arm64 --go-version "$GOVER" --binary "$BIN" \
	--core "$OUT/$STATE.core" --pid "$QPID" --classify-json "$OUT/$STATE.classify.json" \
	--dlv "$OUT/$STATE.dlv.txt" --method "qemu-aarch64 guest core, SIGABRT (SIG_DFL) via tgkill to tid $SIGTID, try $i/$COUNT" \
	--out "$OUT/$STATE.meta.json"
