# Shared helpers for capture-amd64.sh and capture-arm64.sh (sourced, not executed).
# GO selects the toolchain (default: `go` on PATH); everything else is derived from it.

COREDUMP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$COREDUMP_DIR/../.." && pwd)
CORECASES_SRC="$REPO_ROOT/testdata/corecases"
GO=${GO:-go}
STATES="leaf systemstack mcall-curg dropg gosched morestack cgo cgocallback vdso signal crash idle stale stale-parked"
# amd64 only, not in `all`: a core of testdata/workloads/labels (goroutine pprof labels);
# systemstack-nested: a thread on g0 at the first instruction of systemstack's noswitch path (a
# systemstack called on g0, here by the GC's markroot under the switched one)
# arm64 only, not in `all`: gogo-g0 / gogo-gp, a thread stopped (capture-arm64.sh's breakpoint)
# in one of gogo's windows while it hands the M to a goroutine parked on a channel;
# sstack-g0 / sstack-gp, one stopped in one of systemstack's windows (g already g0, SP still
# the goroutine's; g m.curg again, SP still on g0) while a goroutine allocates large objects.
# acgo-g0 / acgo-gp (both architectures): the cgo workload stopped in one of asmcgocall's windows
# (g already g0, SP still the goroutine's; g the goroutine again, SP still on g0 where C returned).
# cgocallback-nested (both architectures): Go -> C -> Go -> C -> Go, the inner callback stopped
# on g0 in a large allocation (systemstack), whose save overwrote the goroutine's gobuf.
# cgocallback-g0 (both): the cgocallback workload stopped in runtime.cgocallback on g0, at its
# first instruction after the prologue (before it switches to the goroutine's stack).
# cgocallback-inner-g0 (both): the nested workload stopped in the inner callback's cgocallback on
# g0, right after it stored its SP as m.g0.sched.sp (the outer one's saved at its SP + 0, arm64 + 16).
EXTRA_STATES="labels systemstack-nested acgo-g0 acgo-gp cgocallback-nested cgocallback-g0 cgocallback-inner-g0"
ARM64_EXTRA_STATES="gogo-g0 gogo-gp sstack-g0 sstack-gp acgo-g0 acgo-gp cgocallback-nested cgocallback-g0 cgocallback-inner-g0"

die() { echo "capture: $*" >&2; exit 1; }

go_version() { "$GO" env GOVERSION; }
# go_minor: 19 for go1.19.8 (classify.py picks its runtime offsets by it).
go_minor() { go_version | sed -E 's/^go1\.([0-9]+).*/\1/'; }
go_root() { "$GO" env GOROOT; }

# build_corecases GOARCH STATE OUT: builds the corecases binary into OUT (the cgo variant for
# STATE=cgo) and prints its path. -trimpath keeps paths out of the binary; DWARF and the symbol
# table stay (the unwinder reads runtime offsets from DWARF).
build_corecases() {
	local arch=$1 state=$2 out=$3 name tags="" cgo=0 cc=""
	name=corecases
	if [ "$state" = cgo ] || [ "${state#cgocallback}" != "$state" ] || [ "${state#acgo-}" != "$state" ]; then
		name=corecases-cgo tags="-tags=corecases_cgo" cgo=1
		[ "$arch" = arm64 ] && cc=aarch64-linux-gnu-gcc
	fi
	mkdir -p "$out"
	(cd "$CORECASES_SRC" && env GOOS=linux GOARCH=$arch CGO_ENABLED=$cgo ${cc:+CC=$cc} \
		"$GO" build -trimpath $tags -o "$out/$name.$arch" .) >&2 || die "build failed"
	echo "$out/$name.$arch"
}

# build_labels GOARCH OUT: builds testdata/workloads/labels (goroutines with pprof labels, one
# allocating large objects on g0 under systemstack) into OUT and prints its path; the `labels`
# state runs it instead of corecases.
build_labels() {
	local arch=$1 out=$2
	mkdir -p "$out"
	(cd "$REPO_ROOT/testdata/workloads/labels" && env GOOS=linux GOARCH=$arch CGO_ENABLED=0 \
		"$GO" build -trimpath -o "$out/labels.$arch" .) >&2 || die "build failed"
	echo "$out/labels.$arch"
}

# dropg_lines FUNC: "L N": the line of the `dropg()` call inside runtime FUNC in this toolchain's
# runtime/proc.go and the line of the next statement (found in the source, not hard-coded).
dropg_lines() {
	awk -v fn="$1" '
		$0 ~ "^func " fn "\\(" { infn = 1; next }
		infn && /^}/ { exit }
		infn && L && $0 !~ /^[ \t]*(\/\/.*)?$/ { print L, NR; exit }
		infn && !L && /^[ \t]*dropg\(\)/ { L = NR }' "$(go_root)/src/runtime/proc.go"
}

# addr_after_dropg BIN FUNC L N: first instruction of the statement after dropg() in FUNC: the
# return address of `CALL runtime.dropg` at proc.go:L when dropg is called, else (dropg inlined,
# as in Go 1.19) the first instruction at proc.go:N after the first one at proc.go:L.
addr_after_dropg() {
	local bin=$1 fn=$2 l=$3 n=$4
	GOOS= GOARCH= "$GO" tool objdump -s "^${fn}\$" "$bin" | awk -v l="proc.go:$l" -v n="proc.go:$n" '
		done { next }
		take { print $2; done = 1; next }
		$1 == l && /CALL runtime\.dropg\(SB\)/ { take = 1; next }
		$1 == l { seen = 1 }
		seen && $1 == n && !/CALL runtime\.dropg/ { print $2; done = 1 }'
}

# cgocallback_g0_addr BIN: runtime.cgocallback's first instruction after its prologue (the
# first on another source line than its TEXT line): on g0, g not yet switched, SP still g0's.
cgocallback_g0_addr() {
	GOOS= GOARCH= "$GO" tool objdump -s '^runtime\.cgocallback(\.abi0)?$' "$1" |
		awk 'done || NR == 1 { next } !l { l = $1; next } $1 != l { print $2; done = 1 }'  # no early exit: objdump would get SIGPIPE
}

# cgocallback_saved_addr BIN: in runtime.cgocallback on g0, the instruction right after it stored
# its SP as m.g0.sched.sp, the old value saved at its SP + 0 (arm64 + 16) just before: amd64
# after `MOVQ AX, 0(SP); MOVQ SP, 0x38(SI)`, arm64 after `MOVD R4, 16(RSP); MOVD RSP, R0;
# MOVD R0, 56(R3)` (g.sched.sp is at 56 in Go 1.19-1.27).
cgocallback_saved_addr() {
	GOOS= GOARCH= "$GO" tool objdump -s '^runtime\.cgocallback(\.abi0)?$' "$1" | awk '
		done { next }  # (read to the end: an early exit gives objdump SIGPIPE)
		take { print $2; done = 1; next }
		/MOVQ AX, 0\(SP\)/ || /MOVD R4, 16\(RSP\)/ { s = 1; next }
		s && /MOVD RSP, R0/ { next }
		s && (/MOVQ SP, 0x38\(SI\)/ || /MOVD R0, 56\(R3\)/) { take = 1; next }
		{ s = 0 }'
}

# direct_path_addr BIN: amd64 runtime.systemstack's noswitch path, the instruction after the
# switched path's RET (the unwinder decodes the same point: unwinder/switch_paths.cc).
direct_path_addr() {
	GOOS= GOARCH= "$GO" tool objdump -s '^runtime\.systemstack(\.abi0)?$' "$1" | awk '
		done { next }
		take { print $2; done = 1; next }
		$3 ~ /^c3$/ && $4 == "RET" { take = 1 }'
}

# gogo_window_addr BIN g0|gp: arm64 gogo<>'s windows (unwinder/gogo_window.cc decodes the same
# points): g0, the instruction after its `CALL runtime.save_g` (R28 is the goroutine, SP still
# g0's, LR no longer the return into gogo's caller); gp, the instruction after `MOVD R0, RSP` (SP
# the goroutine's sched.sp, R29 and LR not loaded yet).
gogo_window_addr() {
	GOOS= GOARCH= "$GO" tool objdump -s '^gogo(<>)?$' "$1" | awk -v w="$2" '
		done { next }
		take { print $2; done = 1; next }
		w == "g0" && $4 == "CALL" && $5 ~ /^runtime\.save_g/ { take = 1 }
		w == "gp" && $4 == "MOVD" && $5 == "R0," && $6 == "RSP" { take = 1 }'
}

# sstack_window_addr BIN g0|gp [FUNC]: arm64 runtime.systemstack's windows (FUNC
# runtime.asmcgocall: asmcgocall's, which switch the same way; unwinder/systemstack_window.cc
# decodes the same points): the instruction after its first `CALL runtime.save_g` (g0: R28 is
# g0, SP still the goroutine's) or its second (gp: R28 is the goroutine again, SP still on g0).
sstack_window_addr() {
	local fn=${3:-runtime.systemstack}
	# awk reads to the end: an early exit can kill objdump with SIGPIPE, which pipefail reports
	GOOS= GOARCH= "$GO" tool objdump -s "^${fn//./\\.}(\\.abi0)?\$" "$1" | awk -v w="$2" '
		done { next }
		take { print $2; done = 1; next }
		$4 == "CALL" && $5 ~ /^runtime\.save_g/ { n++; if ((w == "g0" && n == 1) || (w == "gp" && n == 2)) take = 1 }'
}

# acgo_window_addr BIN g0|gp: amd64 runtime.asmcgocall's windows (unwinder/systemstack_window.cc
# FindAsmcgocallWindow decodes the same points): the instruction after its first store of g to
# the TLS slot (g0: `MOVQ SI, FS:...`, SP still the goroutine's) or its second (gp: the
# goroutine again, SP still on g0). Go 1.21+ also has an ABI wrapper of that name, which only
# loads g from TLS.
acgo_window_addr() {
	GOOS= GOARCH= "$GO" tool objdump -s '^runtime\.asmcgocall(\.abi0)?$' "$1" | awk -v w="$2" '
		done { next }
		take { print $2; done = 1; next }
		$4 == "MOVQ" && $6 ~ /^FS:/ { n++; if ((w == "g0" && n == 1) || (w == "gp" && n == 2)) take = 1 }'
}

# func_addr BIN SYMBOL: start address of a symbol (go tool nm).
func_addr() {
	GOOS= GOARCH= "$GO" tool nm "$1" | awk -v s="$2" '$3 == s && !done { print "0x" $1; done = 1 }'
}

# dlv_oracle BIN CORE OUTTXT [LWP...]: Delve's view of the core: threads (thread -> goroutine),
# goroutines with their stacks, and the stack Delve unwinds from each listed thread.
# Delve 1.20 runs an --init script non-interactively only with --allow-non-terminal-interactive.
dlv_oracle() {
	local bin=$1 core=$2 out=$3 init lwp
	shift 3
	init=$(mktemp)
	{
		echo threads
		echo goroutines
		echo "goroutines -t 64"
		echo "goroutines -l"  # each goroutine's pprof labels (the replay's labels are checked against them)
		for lwp in "$@"; do
			echo "thread $lwp"
			echo "stack 64"
		done
		echo exit
	} >"$init"
	{ echo "# dlv core $(basename "$bin") $(basename "$core"); script:"; sed 's/^/#   /' "$init"; } >"$out"
	# --check-go-version=false: Delve 1.20 (Debian 12) refuses binaries newer than Go 1.20; it
	# reads them (DWARF types, pclntab) well enough to list goroutines and their stacks.
	timeout 120 dlv core "$bin" "$core" --allow-non-terminal-interactive=true --check-go-version=false \
		--init "$init" </dev/null >>"$out" 2>&1 || true
	rm -f "$init"
}

zstd_size() { zstd -19 -q -c "$1" | wc -c; }
