#!/usr/bin/env bash
# The Debian package as a user gets it: cpack -G DEB in the build directory, dpkg -i, then the
# installed files checked with the tools that consume them (systemd-analyze verify, man, the
# binary itself), dpkg -r and dpkg --purge. The machine is left as it was, whatever fails: the
# package is purged and the files this test made are removed (trap on EXIT).
#   package_test.sh BUILD_DIR VERSION PAGES_TXT
# Exit 77 (ctest: skipped) when it cannot run here: not root, no dpkg, or switchback installed
# already (this test never replaces or removes a switchback it did not install).
set -uo pipefail
build=$1 version=$2 pages_txt=$3
state=/var/lib/switchback
unit_name=switchback-agent.service

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root (dpkg -i)"
for t in cpack dpkg dpkg-deb dpkg-shlibdeps systemd-analyze man setpriv; do
  command -v "$t" >/dev/null || skip "$t is not installed (tools/install-deps.sh installs it)"
done
if dpkg-query -W -f='${Status}' switchback 2>/dev/null | grep -qv 'not-installed'; then
  skip "a switchback package is installed already; this test does not touch it"
fi
[ -e /usr/bin/switchback ] && skip "/usr/bin/switchback exists and is not from a package; not overwriting it"
[ -x "$build/tools/switchback" ] || fail "$build/tools/switchback is not built"
[ -s "$pages_txt" ] || fail "$pages_txt is missing: configure the build first"

# What to restore: whether the state directory existed, with which mode and owner.
state_existed=0
[ -d "$state" ] && state_existed=1 && state_mode=$(stat -c %a "$state") && state_owner=$(stat -c %u:%g "$state")
marker="$state/package-test-window.$$"
work=$(mktemp -d /tmp/switchback-package-test.XXXXXX)
installed=0

cleanup() {
  local rc=$?
  if [ "$installed" = 1 ] && dpkg-query -W switchback >/dev/null 2>&1; then
    dpkg --purge switchback >/dev/null 2>&1 || echo "cleanup: dpkg --purge switchback failed" >&2
  fi
  rm -f "$marker"
  if [ "$state_existed" = 0 ]; then
    rmdir "$state" 2>/dev/null || true
  elif [ ! -d "$state" ]; then
    mkdir -p "$state" && chmod "$state_mode" "$state" && chown "$state_owner" "$state"
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== cpack -G DEB (in $build)"
(cd "$build" && cpack -G DEB -B "$work") > "$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; fail "cpack -G DEB failed"; }
deb=$(find "$work" -maxdepth 1 -name 'switchback_*.deb' | head -1)
[ -n "$deb" ] || { cat "$work/cpack.log"; fail "cpack made no switchback_*.deb"; }
echo "$(basename "$deb"): $(du -h "$deb" | cut -f1)"
dpkg-deb -f "$deb" Package Version Architecture Depends

# The dependencies are runtime libraries (dpkg-shlibdeps: those the binary links directly; libelf1
# comes through libbpf1), never -dev packages.
depends=$(dpkg-deb -f "$deb" Depends)
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "package version is not $version"
echo "$depends" | grep -q -- '-dev' && fail "Depends names a -dev package: $depends"
for lib in libbpf1 libdwarf1 libzstd1 libc6 libstdc++6; do
  echo "$depends" | grep -qw "$lib" || fail "Depends lacks $lib: $depends"
done
# The state directory is the postinst's, not a packaged file: dpkg -r must never own its contents.
dpkg-deb -c "$deb" | grep -q '/var/lib' && fail "the package ships files under /var/lib"

echo "== dpkg -i"
installed=1
# --path-include: a machine whose dpkg excludes man pages (slim container images) still gets
# these, so that the checks below test the package, not the machine's dpkg configuration.
dpkg --path-include='/usr/share/man/man8/switchback*' -i "$deb" > "$work/dpkg-i.log" 2>&1 || { cat "$work/dpkg-i.log"; fail "dpkg -i failed"; }
[ -x /usr/bin/switchback ] || fail "/usr/bin/switchback is not installed"
unit=$(dpkg -L switchback | grep "/systemd/system/$unit_name\$" | head -1)
if [ -z "$unit" ] || [ ! -f "$unit" ]; then fail "no $unit_name installed"; fi
echo "unit: $unit"
grep -qx 'ExecStart=/usr/bin/switchback agent .*' "$unit" || fail "ExecStart does not run /usr/bin/switchback: $(grep ExecStart= "$unit")"
grep -q '^Documentation=.*man:switchback-agent(8)' "$unit" || fail "Documentation= does not name man:switchback-agent(8)"
[ -d "$state" ] || fail "postinst did not create $state"
# Installed, not enabled, not started.
[ -e "/etc/systemd/system/multi-user.target.wants/$unit_name" ] && fail "the package enabled the agent"
pgrep -f '^/usr/bin/switchback agent' >/dev/null && fail "the package started the agent"

echo "== systemd-analyze verify $unit"
# Documentation= is checked too: verify runs man for each man: page it names.
verify=$(systemd-analyze verify "$unit" 2>&1); vrc=$?
[ -n "$verify" ] && echo "$verify"
[ $vrc = 0 ] || fail "systemd-analyze verify failed"
echo "$verify" | grep -qiE 'warning|unknown|invalid|not found' && fail "systemd-analyze verify complained"

echo "== switchback --version"
out=$(/usr/bin/switchback --version) || fail "switchback --version failed"
echo "$out"
expect_line() {  # REGEX: one line of $out matches it whole
  echo "$out" | grep -qxE "$1" || fail "--version has no line matching '$1'"
}
expect_line "switchback ${version//./\\.}"
expect_line 'commit: [^ ]+( \(branch .+\))?'
expect_line 'libbpf: [0-9]+\.[0-9]+'
expect_line "kernel: $(uname -r | sed 's/[.[\*^$+?(){}|]/\\&/g')"
expect_line "  btf: $([ -e /sys/kernel/btf/vmlinux ] && echo yes || echo no)"
# Root probes: yes or no.
for f in bpf_loop uprobe_multi ringbuf; do expect_line "  $f: (yes|no)"; done
# Anyone else is told what they are not told.
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/switchback --version) ||
  fail "switchback --version as nobody failed"
for f in bpf_loop uprobe_multi ringbuf; do expect_line "  $f: unknown \(needs root\)"; done

echo "== man"
while IFS='|' read -r page words; do
  [ -n "$page" ] || continue
  path=$(man -w "$page" 2>/dev/null) || fail "man -w $page: no page"
  case "$path" in /usr/share/man/man8/"$page".8.gz) ;; *) fail "$page is at $path";; esac
  text=$(MANWIDTH=100 man -P cat "$page" 2>"$work/man.err") || { cat "$work/man.err"; fail "man $page failed"; }
  grep -qi warning "$work/man.err" && { cat "$work/man.err"; fail "man $page: groff warnings"; }
  echo "$text" | grep -q "switchback${words:+ $words}" || fail "man $page does not show 'switchback $words'"
  echo "$text" | grep -q '^OPTIONS' || fail "man $page has no OPTIONS section"
  echo "man $page: $(echo "$text" | wc -l) lines"
done < "$pages_txt"

echo "== dpkg -r switchback"
echo "a window file" > "$marker"
dpkg -r switchback > "$work/dpkg-r.log" 2>&1 || { cat "$work/dpkg-r.log"; fail "dpkg -r failed"; }
[ -e /usr/bin/switchback ] && fail "/usr/bin/switchback is still there after dpkg -r"
[ -e "$unit" ] && fail "$unit is still there after dpkg -r"
[ -e /usr/share/man/man8/switchback.8.gz ] && fail "the man pages are still there after dpkg -r"
[ -f "$marker" ] || fail "dpkg -r removed $state or its contents"
echo "$state and its contents kept"

echo "== dpkg --purge switchback"
dpkg --purge switchback > "$work/dpkg-purge.log" 2>&1 || { cat "$work/dpkg-purge.log"; fail "dpkg --purge failed"; }
[ -f "$marker" ] || fail "dpkg --purge removed the profiles in $state"
dpkg-query -W switchback >/dev/null 2>&1 && fail "dpkg still knows switchback after --purge"
echo "PASS"
