#!/usr/bin/env bash
# capture-lefthook.sh ARCH STATE OUTDIR: core of a real Go 1.27 binary built elsewhere (lefthook
# 2.2.2 from npm: no DWARF, no symbol table) while `lefthook run manual` runs a hook that
# prints a line every 50 ms in a temporary git repository.
#   amd64: gdb breakpoint at an address found from pclntab (`switchback inspect --func`), gcore.
#   arm64: qemu-aarch64 harvest as in capture-arm64.sh.
# STATE: crash (GOTRACEBACK=crash + SIGABRT: every M in the signal handler; amd64 stops in
#        runtime.dieFromSignal); amd64 only: mcall (runtime.park_m entry), vdso (in the vDSO's
#        clock_gettime), systemstack (runtime.(*mheap).alloc.func1, on g0 under systemstack).
# Writes OUTDIR/STATE.core, lefthook-linux-ARCH, STATE.stderr.txt (the runtime's own traceback
# for crash: the oracle, since Delve and gdb cannot name frames without symbols), STATE.meta.json.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -eq 3 ] || die "usage: $0 amd64|arm64 crash|mcall|vdso|systemstack OUTDIR"
ARCH=$1 STATE=$2
OUT=$(mkdir -p "$3" && cd "$3" && pwd)
SWITCHBACK=${SWITCHBACK:-$REPO_ROOT/build/tools/switchback}
npm_arch=$ARCH; [ "$ARCH" = amd64 ] && npm_arch=x64
LH_SRC=${LEFTHOOK:-$REPO_ROOT/.cache/lefthook/lefthook-linux-$npm_arch}
[ -x "$LH_SRC" ] || die "no $LH_SRC (tools/fetch-lefthook.sh)"
BIN=$OUT/lefthook-linux-$npm_arch
cp "$LH_SRC" "$BIN"
addr() { "$SWITCHBACK" inspect "$BIN" --func "$1" | awk '{print $2}'; }

REPO=$(mktemp -d) PID="" QP=""
cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null || true
	[ -n "$QP" ] && kill -9 "$QP" 2>/dev/null || true
	rm -rf "$REPO"
}
trap cleanup EXIT
git -C "$REPO" init -q
cat >"$REPO/lefthook.yml" <<'YML'
manual:
  commands:
    work:
      run: sh -c 'i=0; while [ $i -lt 100000 ]; do echo "line $i"; i=$((i+1)); sleep 0.05; done'
YML
RUN_ENV=()
[ "$STATE" = crash ] && RUN_ENV=(GOTRACEBACK=crash)
rm -f "$OUT/$STATE".{core,gdb-bt.txt,gdb.json,stderr.txt,meta.json}

if [ "$ARCH" = amd64 ]; then
	case $STATE in
	crash) BP="*$(addr runtime.dieFromSignal)" KILL_SIG=SIGABRT ;;
	mcall) BP="*$(addr runtime.park_m)" KILL_SIG="" ;;
	vdso) BP="__vdso_clock_gettime" KILL_SIG="" ;;  # the vDSO's own symbols (gdb reads them)
	systemstack) BP="*$(addr 'runtime.(*mheap).alloc.func1')" KILL_SIG="" ;;
	*) die "unknown state $STATE" ;;
	esac
	(cd "$REPO" && exec env "${RUN_ENV[@]}" "$BIN" run manual) >"$REPO/stdout" 2>"$OUT/$STATE.stderr.txt" &
	PID=$!
	disown "$PID"
	sleep 1.5
	CAPTURE_STATE=$STATE CAPTURE_OUT=$OUT CAPTURE_MODE=break CAPTURE_BP=$BP CAPTURE_PID=$PID \
		CAPTURE_KILL_SIG=$KILL_SIG timeout 90 gdb -batch -nx -p "$PID" -x "$COREDUMP_DIR/gdb_capture.py" \
		>"$REPO/gdb.log" 2>&1 || true
	kill -9 "$PID" 2>/dev/null || true
	[ -s "$OUT/$STATE.core" ] || { tail -20 "$REPO/gdb.log" >&2; die "$STATE: gdb capture failed"; }
	METHOD="gdb breakpoint $BP (pclntab address), gcore"
else
	[ "$STATE" = crash ] || die "arm64: only the crash state"
	bash -c 'cd "$1" && ulimit -c unlimited && echo 0 >/proc/self/coredump_filter && shift && exec "$@"' _ \
		"$REPO" env "${RUN_ENV[@]}" qemu-aarch64 "$BIN" run manual >"$REPO/stdout" 2>"$OUT/$STATE.stderr.txt" &
	QP=$!
	disown "$QP"
	sleep 4
	TID=$(python3 "$COREDUMP_DIR/tgkill.py" "$QP" 6 sleeping)
	for _ in $(seq 300); do kill -0 "$QP" 2>/dev/null || break; sleep 0.05; done
	core=$(ls "$REPO"/qemu_*.core 2>/dev/null | head -1 || true)
	[ -n "$core" ] || die "no guest core"
	mv "$core" "$OUT/$STATE.core"
	METHOD="qemu-aarch64 guest core, GOTRACEBACK=crash, SIGABRT via tgkill to tid $TID"
fi
python3 "$COREDUMP_DIR/meta.py" --state "$STATE" --arch "$ARCH" --go-version go1.27 --binary "$BIN" \
	--core "$OUT/$STATE.core" --method "$METHOD" --out "$OUT/$STATE.meta.json"
echo "capture-lefthook: $OUT/$STATE.core" >&2
