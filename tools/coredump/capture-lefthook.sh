#!/usr/bin/env bash
# capture-lefthook.sh ARCH STATE OUTDIR: core of a real Go 1.27 binary built elsewhere (lefthook
# 2.2.2 from npm: no DWARF, no symbol table) while `lefthook run manual` runs a hook that
# prints a line every 50 ms in a temporary git repository.
#   amd64: gdb breakpoint at an address found from pclntab (`switchback inspect --func`), gcore.
#   arm64: crash: qemu-aarch64 harvest as in capture-arm64.sh; every other state: breakpoint
#          mode as in capture-arm64.sh BREAK= (qemu's gdbstub, gdb-multiarch +
#          gdb_qemu_break.py at a pclntab address; lefthook keeps Go's SIGABRT handler, so the
#          stopped thread first runs rt_sigaction(SIGABRT, SIG_DFL), injected by gdb, then takes
#          SIGABRT: qemu writes the guest core with it exactly there; GOMAXPROCS=1). The hit
#          taken: SKIP (default random 0-9, asyncpreempt 0) after main.main; mcall waits for
#          lefthook's "sync hooks" line first (the hook runs).
# Breakpoint addresses: "after the prologue" is the instruction after the frame record is set
# up (arm64 `sub x29, sp, #8`; amd64 `mov %rsp,%rbp` and the frame's `sub $N,%rsp`), found with
# objdump from the pclntab entry (there are no symbols, so gdb cannot skip prologues itself).
# STATE (both arches unless noted):
#   crash        GOTRACEBACK=crash + SIGABRT: every M in the signal handler (amd64 stops in
#                runtime.dieFromSignal)
#   mcall        amd64: runtime.park_m entry; arm64: in runtime.park_m right after its call to
#                runtime.casgstatus (the return address of that BL), before the inlined dropg:
#                on g0, m.curg still set
#   vdso         amd64 only (qemu-user has no vDSO): in the vDSO's clock_gettime
#   systemstack  runtime.(*mheap).alloc.func1 (amd64 entry, arm64 after the prologue): on g0
#                under systemstack
#   morestack    runtime.newstack after the prologue: on g0 under morestack, during start-up
#   asyncpreempt runtime.asyncPreempt2 after the prologue: a goroutine preempted by a signal
# morestack and asyncpreempt give lefthook a long-running goroutine: the config gets an unused
# hook with CONFIG_COMMANDS commands (default amd64 4000, arm64 300), whose decoding keeps
# goroutine 1 busy for about a second (sysmon preempts whatever runs for 10 ms: SIGURG ->
# asyncPreempt, or stackguard0 -> morestack -> newstack; stacks grow on the way); amd64
# attaches 0.2 s after the start. The stop may be in any goroutine (arm64 caught the os/exec
# goroutines that copy git's output). cgo states: lefthook has no cgo.
# Writes OUTDIR/STATE.core, lefthook-linux-ARCH, STATE.stderr.txt (the runtime's own traceback
# for crash: the oracle, since Delve and gdb cannot name frames without symbols),
# STATE.classify.json (every state but crash: classify.py's frame-record walk with pclntab names
# and the stopped thread's Go view from its g register, incl. the goroutine under the switch
# from its saved context: the oracle of these cases, see fp_oracle.py), STATE.meta.json.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -eq 3 ] || die "usage: $0 amd64|arm64 crash|mcall|vdso|systemstack|morestack|asyncpreempt OUTDIR"
ARCH=$1 STATE=$2
OUT=$(mkdir -p "$3" && cd "$3" && pwd)
SWITCHBACK=${SWITCHBACK:-$REPO_ROOT/build/tools/switchback}
npm_arch=$ARCH; [ "$ARCH" = amd64 ] && npm_arch=x64
LH_SRC=${LEFTHOOK:-$REPO_ROOT/.cache/lefthook/lefthook-linux-$npm_arch}
[ -x "$LH_SRC" ] || die "no $LH_SRC (tools/fetch-lefthook.sh)"
BIN=$OUT/lefthook-linux-$npm_arch
cp "$LH_SRC" "$BIN"
addr() { "$SWITCHBACK" inspect "$BIN" --func "$1" | awk '{print $2}'; }
OBJDUMP=objdump; [ "$ARCH" = arm64 ] && OBJDUMP=aarch64-linux-gnu-objdump
disas() {  # disas FUNC: objdump of FUNC's pclntab range
	local r
	r=$("$SWITCHBACK" inspect "$BIN" --func "$1") || die "no $1 in pclntab"
	"$OBJDUMP" -d --start-address="$(echo "$r" | awk '{print $2}')" --stop-address="$(echo "$r" | awk '{print $3}')" "$BIN"
}
# body FUNC: the first instruction after FUNC's prologue (frame record set up). (The awk
# scripts read all their input: objdump killed by SIGPIPE would fail the pipeline.)
body() {
	disas "$1" | awk '
		done { next }
		/^ *[0-9a-f]+:/ { a = $1; sub(":", "", a)
			if (take) { print "0x" a; done = 1; next }
			if ($0 ~ /sub[ \t]+x29, sp, #0x8/) take = 1
			if ($0 ~ /mov[ \t]+%rsp,%rbp/) { fp = 1; next }
			if (fp && $0 ~ /sub[ \t]+\$0x[0-9a-f]+,%rsp/) { take = 1; next }
			if (fp) { print "0x" a; done = 1 } }'
}
# after_call FUNC CALLEE: the return address of FUNC's first call to CALLEE.
after_call() {
	local c
	c=$(addr "$2"); c=${c#0x}
	disas "$1" | awk -v c="$c" '
		done { next }
		/^ *[0-9a-f]+:/ { a = $1; sub(":", "", a)
			if (take) { print "0x" a; done = 1; next }
			if ($0 ~ ("(bl|call)[ \t]+(0x)?0*" c "( |$)")) take = 1 }'
}

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
case $STATE in morestack|asyncpreempt)
	# An unused hook with many commands: decoding it keeps the main goroutine running (see above).
	n=${CONFIG_COMMANDS:-$([ "$ARCH" = amd64 ] && echo 4000 || echo 300)}
	{ echo "pre-push:"; echo "  commands:"
	  for i in $(seq "$n"); do printf "    c%d:\n      run: echo %d\n      glob: '*.go'\n" "$i" "$i"; done
	} >>"$REPO/lefthook.yml" ;;
esac
RUN_ENV=()
[ "$STATE" = crash ] && RUN_ENV=(GOTRACEBACK=crash)
rm -f "$OUT/$STATE".{core,gdb-bt.txt,gdb.json,stderr.txt,meta.json,classify.json,gdbstub.json}
RULE=""

if [ "$ARCH" = amd64 ]; then
	case $STATE in
	crash) BP="*$(addr runtime.dieFromSignal)" KILL_SIG=SIGABRT ;;
	mcall) BP="*$(addr runtime.park_m)" KILL_SIG="" ;;
	vdso) BP="__vdso_clock_gettime" KILL_SIG="" ;;  # the vDSO's own symbols (gdb reads them)
	systemstack) BP="*$(addr 'runtime.(*mheap).alloc.func1')" KILL_SIG="" ;;
	morestack) BP="*$(body runtime.newstack)" KILL_SIG="" ;;
	asyncpreempt) BP="*$(body runtime.asyncPreempt2)" KILL_SIG="" ;;
	*) die "unknown state $STATE" ;;
	esac
	[ "$BP" != "*" ] || die "$STATE: no breakpoint address"
	(cd "$REPO" && exec env "${RUN_ENV[@]}" "$BIN" run manual) >"$REPO/stdout" 2>"$OUT/$STATE.stderr.txt" &
	PID=$!
	disown "$PID"
	case $STATE in morestack|asyncpreempt) sleep 0.2 ;; *) sleep 1.5 ;; esac  # these: during start-up
	CAPTURE_STATE=$STATE CAPTURE_OUT=$OUT CAPTURE_MODE=break CAPTURE_BP=$BP CAPTURE_PID=$PID \
		CAPTURE_KILL_SIG=$KILL_SIG timeout 90 gdb -batch -nx -p "$PID" -x "$COREDUMP_DIR/gdb_capture.py" \
		>"$REPO/gdb.log" 2>&1 || true
	kill -9 "$PID" 2>/dev/null || true
	[ -s "$OUT/$STATE.core" ] || { tail -20 "$REPO/gdb.log" >&2; die "$STATE: gdb capture failed"; }
	METHOD="gdb breakpoint $BP (pclntab address), gcore"
	case $BP in \**) RULE="pc=${BP#\*0x}" ;; esac
elif [ "$STATE" != crash ]; then
	command -v gdb-multiarch >/dev/null || die "arm64 $STATE needs gdb-multiarch"
	READY_TEXT=""
	case $STATE in
	mcall) BP="*$(after_call runtime.park_m runtime.casgstatus)" COND="sp=g0,curg" READY_TEXT="sync hooks" ;;
	systemstack) BP="*$(body 'runtime.(*mheap).alloc.func1')" COND="sp=g0,curg" ;;
	morestack) BP="*$(body runtime.newstack)" COND="sp=g0,curg" ;;
	asyncpreempt) BP="*$(body runtime.asyncPreempt2)" COND="sp=curg" ;;
	*) die "arm64: unknown state $STATE" ;;
	esac
	[ "$BP" != "*" ] || die "$STATE: no breakpoint address"
	RULE="pc=${BP#\*0x},$COND"
	# Hits passed over first (SKIP, default random 0-9; asyncpreempt 0: only a few preemptions
	# happen before the config is decoded, then gdb would wait for a hit until its timeout).
	SKIP_HITS=${SKIP:-$RANDOM}; [ -n "${SKIP:-}" ] || SKIP_HITS=$((SKIP_HITS % 10))
	[ "$STATE" = asyncpreempt ] && SKIP_HITS=${SKIP:-0}
	PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	# GOMAXPROCS=1: qemu 7.2's gdbstub is not safe for two threads reporting at once (see
	# capture-arm64.sh). lefthook keeps Go's SIGABRT handler (no -sigdfl), so the stopped thread
	# first runs rt_sigaction(SIGABRT, SIG_DFL) at the `svc` of runtime.rt_sigaction
	# (CAPTURE_SIGDFL_SVC, gdb_qemu_break.py), then takes the SIGABRT: qemu writes the core.
	SVC=$(disas runtime.rt_sigaction | awk '!done && /svc[ \t]+#0x0/ { a = $1; sub(":", "", a); print "0x" a; done = 1 }')
	[ -n "$SVC" ] || die "no svc in runtime.rt_sigaction"
	bash -c 'cd "$1" && ulimit -c unlimited && echo 0 >/proc/self/coredump_filter && shift && exec "$@"' _ \
		"$REPO" env GOMAXPROCS=1 qemu-aarch64 -g "$PORT" "$BIN" run manual >"$REPO/stdout" 2>"$OUT/$STATE.stderr.txt" &
	QP=$!
	disown "$QP"
	for _ in $(seq 100); do ss -ltn 2>/dev/null | grep -q "127.0.0.1:$PORT " && break; sleep 0.05; done
	CAPTURE_BINARY=$BIN CAPTURE_PORT=$PORT CAPTURE_BP=$BP CAPTURE_SIGDFL_SVC=$SVC CAPTURE_ARM="*$(addr main.main)" \
		CAPTURE_READY=${READY_TEXT:+$REPO/stdout} CAPTURE_READY_TEXT=$READY_TEXT \
		CAPTURE_SKIP=$SKIP_HITS CAPTURE_JSON=$OUT/$STATE.gdbstub.json \
		timeout 240 gdb-multiarch -nx -batch -x "$COREDUMP_DIR/gdb_qemu_break.py" >"$REPO/gdb.out" 2>&1 || true
	grep '^capture' "$REPO/gdb.out" >&2 || tail -5 "$REPO/gdb.out" >&2
	for _ in $(seq 300); do kill -0 "$QP" 2>/dev/null || break; sleep 0.05; done
	core=$(ls "$REPO"/qemu_*.core 2>/dev/null | head -1 || true)
	[ -n "$core" ] || die "no guest core"
	mv "$core" "$OUT/$STATE.core"
	METHOD="qemu-aarch64 guest core; gdb-multiarch on qemu's gdbstub: breakpoint $BP (pclntab address), GOMAXPROCS=1, rt_sigaction(SIGABRT, SIG_DFL) run on the stopped thread, then SIGABRT to it"
else
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
if [ -n "$RULE" ]; then
	CL=(); [ "$ARCH" = arm64 ] && CL=(--signalled)
	python3 "$COREDUMP_DIR/classify.py" --binary "$BIN" --core "$OUT/$STATE.core" --rule "$RULE" --go-minor 27 \
		"${CL[@]}" --json "$OUT/$STATE.classify.json" >&2 || die "$STATE: the stopped thread is not in the state (rule $RULE)"
fi
python3 "$COREDUMP_DIR/meta.py" --state "$STATE" --arch "$ARCH" --go-version go1.27 --binary "$BIN" \
	--core "$OUT/$STATE.core" --method "$METHOD" --out "$OUT/$STATE.meta.json"
echo "capture-lefthook: $OUT/$STATE.core" >&2
