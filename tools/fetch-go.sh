#!/usr/bin/env bash
# Fetches Go toolchains 1.21 to 1.27 as Debian packages into a cache, without installing
# anything system-wide: a private apt configuration whose sources reuse the mirror already
# configured on this machine (read from its apt sources; no host name lives in this file),
# with the suites that carry newer Go (bookworm-backports: 1.21-1.23; trixie, forky, sid and
# experimental: 1.24+),
# then `apt-get download` + `dpkg-deb -x` of golang-1.X-go and golang-1.X-src.
#   tools/fetch-go.sh [VERSION...]      (default: 1.21 ... 1.27)
#   CACHE=DIR (default .cache/go) ; prints one line per version: VERSION GOROOT
set -euo pipefail
cd "$(dirname "$0")/.."
cache=$(realpath -m "${CACHE:-.cache/go}")
versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || versions=(1.21 1.22 1.23 1.24 1.25 1.26 1.27)
mkdir -p "$cache/apt/lists/partial" "$cache/apt/archives/partial" "$cache/debs" "$cache/apt/sources.list.d"

# The Debian mirror this machine already uses.
mirror=$(grep -h -E '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
  grep -v security | grep -o 'https\?://[^ ]*/debian' | head -n1 || true)
[[ -n $mirror ]] || { echo "fetch-go: no Debian mirror found in the system's apt sources" >&2; exit 1; }
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
cat >"$cache/apt/sources.list.d/go.sources" <<SRC
Types: deb
URIs: $mirror
Suites: bookworm-backports trixie trixie-backports forky sid experimental
Components: main
Signed-By: $keyring
SRC
aptopts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$cache/apt/sources.list.d"
         -o "Dir::State::Lists=$cache/apt/lists" -o "Dir::Cache=$cache/apt" -o "Dir::State::status=/var/lib/dpkg/status"
         -o "APT::Default-Release=" -o "Debug::NoLocking=1")
stamp="$cache/apt/updated"
if [[ ! -f $stamp || -n $(find "$stamp" -mmin +1440) ]]; then
  apt-get "${aptopts[@]}" -qq update >/dev/null
  touch "$stamp"
fi

for v in "${versions[@]}"; do
  root="$cache/go$v"
  if [[ ! -x $root/usr/lib/go-$v/bin/go ]]; then
    (cd "$cache/debs" && apt-get "${aptopts[@]}" -qq download "golang-$v-go" "golang-$v-src" >/dev/null) ||
      { echo "fetch-go: golang-$v is not in bookworm-backports, trixie or sid" >&2; continue; }
    mkdir -p "$root"
    for deb in "$cache/debs"/golang-"$v"-{go,src}_*.deb; do dpkg-deb -x "$deb" "$root"; done
  fi
  echo "$v $root/usr/lib/go-$v"
done
