#!/usr/bin/env bash
# make-lefthook-case.sh ARCH STATE CAPTURE_DIR [DESCRIPTION]: turns a capture-lefthook.sh capture
# (not crash: that one has the runtime's traceback, see tools/coredump/README.md) into the
# coredump case ARCH-lefthook-2.2.2-STATE. The core's read-only segments that are the executable's own bytes
# are zeroed first (drop_file_backed.py; the replay reads them from the executable), then
# `coredump new` records the unwinder's frames, and fp_oracle.py compares the stopped thread's
# frames with the frame-record chain classify.py read (names from pclntab); its summary becomes
# the case's oracle. If they differ the case goes to testdata/coredumps/pending/ instead, with
# the comparison in NAME.fp-oracle.txt next to it (its frames are then still the unwinder's:
# replace them by the oracle's by hand).
set -euo pipefail
cd "$(dirname "$0")/../.."
SWITCHBACK=${SWITCHBACK:-build/tools/switchback}
[ $# -ge 3 ] || { echo "usage: $0 ARCH STATE CAPTURE_DIR [DESCRIPTION]" >&2; exit 1; }
arch=$1 state=$2 cap=$3 desc=${4:-}
npm_arch=$arch; [ "$arch" = amd64 ] && npm_arch=x64
name=$arch-lefthook-2.2.2-$state
bin=$cap/lefthook-linux-$npm_arch
case $state in
mcall) mc=mcall case_state=mcall-curg ;;
*) mc=$state case_state=$state ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$cap/$state.core" "$tmp/core"
python3 tools/coredump/drop_file_backed.py "$tmp/core" "$bin"
method=$(jq -r .method "$cap/$state.meta.json")
"$SWITCHBACK" coredump new --core "$tmp/core" --binary "$bin" --name "$name" --dir "$tmp/cases" \
	--state "$case_state" --must-cross "$mc" \
	--description "lefthook 2.2.2 (npm, Go 1.27, no DWARF/symbols) running a hook (tools/coredump/capture-lefthook.sh $arch $state): $method${desc:+; $desc}" \
	--oracle pending >/dev/null
core_arg=()
[ "$arch" = amd64 ] && core_arg=(--core "$cap/$state.core")
if python3 tools/coredump/fp_oracle.py "$tmp/cases/$name.json" "$cap/$state.classify.json" --binary "$bin" \
		"${core_arg[@]}" >"$tmp/oracle.txt"; then
	dest=testdata/coredumps
	oracle="$(cat "$tmp/oracle.txt"); other threads: frames as the unwinder gives them. Delve and gdb cannot name frames without symbols and no traceback was taken at this moment"
else
	dest=testdata/coredumps/pending
	cat "$tmp/oracle.txt" >&2
	cp "$tmp/oracle.txt" "$dest/$name.fp-oracle.txt"
	oracle="see $name.fp-oracle.txt: the unwinder's frames (this file) differ from the frame-record chain"
fi
# Blobs always in testdata/coredumps/blobs (a pending case names them as ../blobs/); an
# existing blob of the same content (the lefthook binary) has the same name and is reused.
pre=""; [ "$dest" = testdata/coredumps ] || pre="../"
jq --arg o "$oracle" --arg pre "$pre" '.oracle = $o | .core = $pre + .core | .files |= map(.file = $pre + .file)' \
	"$tmp/cases/$name.json" >"$dest/$name.json"
for b in "$tmp"/cases/blobs/*; do
	[ -e "testdata/coredumps/blobs/$(basename "$b")" ] || cp "$b" testdata/coredumps/blobs/
done
echo "make-lefthook-case: $dest/$name.json: $(cat "$tmp/oracle.txt" | head -1)" >&2
