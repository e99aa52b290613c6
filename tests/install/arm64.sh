# arm64.sh - sourced by the package_*_aarch64.sh checks (after lib.sh):
# Debian's packages for arm64, to run an aarch64 interpreter under
# qemu-user.
#
# arm64_root NAME WHAT PACKAGE...: sets root to a folder holding the
# PACKAGEs for arm64, each of the version apt-cache gives for this machine's
# architecture (the archive's newest where it no longer has that one),
# unpacked. They are fetched by apt with lists, cache and state in a folder
# of their own (nothing of the machine's apt changes; the packages are
# checked against Debian's signed indexes) and kept in REDLOCK_CACHE
# (default ~/.cache/redlock) as NAME-arm64/VERSION, VERSION the first
# PACKAGE's. Without apt, Debian's archive keyring or the archive itself,
# the check is skipped (exit 77), the message naming WHAT.
# arm64_qemu NATIVELY: sets qemu to qemu-user for aarch64; on an aarch64
# machine the check is skipped (exit 77), NATIVELY saying what checks the
# artifact there instead.
arm64_qemu() {
  if [ "$(uname -m)" = aarch64 ]; then
    echo "SKIPPED: on aarch64, $1"
    exit 77
  fi
  qemu=$(command -v qemu-aarch64-static) || fail "qemu-aarch64-static is missing: run scripts/setup.sh"
}

arm64_root() {
  local name=$1 what=$2 cache keyring host package v
  shift 2
  cache=${REDLOCK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redlock}
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  if ! command -v apt-get >/dev/null || [ ! -f "$keyring" ]; then
    echo "SKIPPED: fetching Debian's arm64 $what needs apt and Debian's archive keyring"
    exit 77
  fi
  host=$(dpkg --print-architecture)
  _arm64_pinned=()
  for package in "$@"; do
    v=$(apt-cache show --no-all-versions "$package:$host" 2>/dev/null |
        awk '/^Version: / && !v { v = $2 } END { print v }')
    [ -n "$v" ] || { echo "SKIPPED: apt knows no $package (apt-get update?)"; exit 77; }
    _arm64_pinned+=("$package=$v")
  done
  root=$cache/$name-arm64/${_arm64_pinned[0]#*=}
  mkdir -p "$cache/$name-arm64"
  exec 9>"$cache/$name-arm64/lock"
  flock 9
  if [ ! -f "$root/.debs" ]; then
    echo "fetching Debian's arm64 $what into $root"
    _arm64_fetch "$cache/$name-arm64/apt" "$keyring" ||
      { cat "$tmp/apt.log"; echo "SKIPPED: cannot fetch Debian's arm64 packages"; exit 77; }
  fi
  flock -u 9
  echo "aarch64 $what from $(tr '\n' ' ' <"$root/.debs")"
}

# _arm64_fetch APT KEYRING: the pinned packages for arm64, unpacked into
# $root, with APT as apt's folder meanwhile.
_arm64_fetch() {
  local apt=$1 keyring=$2 codename deb opts
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  rm -rf "$apt" "$root.part"
  mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/sources" "$apt/debs" "$root.part"
  : >"$apt/status"
  cat >"$apt/sources/debian.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: main
Architectures: arm64
Signed-By: $keyring

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: $codename-security
Components: main
Architectures: arm64
Signed-By: $keyring
EOF
  opts=(-o Dir::State::Lists="$apt/lists" -o Dir::State::status="$apt/status"
        -o Dir::Cache="$apt" -o Dir::Cache::Archives="$apt/archives"
        -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$apt/sources"
        -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o APT::Sandbox::User="$(id -un)"
        -o Acquire::Languages=none -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false)
  apt-get -q "${opts[@]}" update >"$tmp/apt.log" 2>&1 || return 1
  # This machine's versions; the archive's own where it no longer has those.
  if ! (cd "$apt/debs" && apt-get -q "${opts[@]}" download "${_arm64_pinned[@]}") >>"$tmp/apt.log" 2>&1; then
    echo "the arm64 packages of this machine's versions are gone: the archive's newest instead"
    (cd "$apt/debs" && apt-get -q "${opts[@]}" download "${_arm64_pinned[@]%%=*}") >>"$tmp/apt.log" 2>&1 ||
      return 1
  fi
  for deb in "$apt"/debs/*.deb; do
    dpkg-deb -x "$deb" "$root.part"
  done
  (cd "$apt/debs" && ls) >"$root.part/.debs"
  mv "$root.part" "$root"
  rm -rf "$apt"
}
