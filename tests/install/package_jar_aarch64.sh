#!/usr/bin/env bash
# package_jar_aarch64.sh SRC DIST - the jar's linux-aarch64 library in an
# aarch64 JVM under qemu-user: Debian's openjdk-17-jre-headless for arm64, of
# the version apt-cache gives for this machine's, takes locks with the jar
# (TakeLock, run as bindings/java/README.md says) on nodes of this machine,
# with nothing on stderr.
#
# The JVM and what it links with (Debian's libc6, libstdc++6, libgcc-s1 and
# zlib1g for arm64, of this machine's versions too) are fetched by apt with
# lists, cache and state in a folder of their own (nothing of the machine's
# apt changes; the packages are checked against Debian's signed indexes),
# and unpacked into a root kept in REDLOCK_CACHE (default ~/.cache/redlock),
# from which qemu-user takes every file it finds there (QEMU_LD_PREFIX).
# That root has no libhiredis. Without apt or Debian's archive the check is
# skipped. The musl library for aarch64 is checked by package_jar (ELF).
. "$(dirname "$0")/lib.sh"
. "$here/java.sh"
if [ "$(uname -m)" = aarch64 ]; then
  echo "SKIPPED: on aarch64, package_jar runs the jar's aarch64 library natively"
  exit 77
fi
qemu=$(command -v qemu-aarch64-static) || fail "qemu-aarch64-static is missing: run scripts/setup.sh"
jar=$(one 'redlock-[0-9]*.jar')
cache=${REDLOCK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redlock}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if ! command -v apt-get >/dev/null || [ ! -f "$keyring" ]; then
  echo "SKIPPED: fetching Debian's arm64 JVM needs apt and Debian's archive keyring"
  exit 77
fi

# The packages, pinned to this machine's architecture's versions.
host=$(dpkg --print-architecture)
pinned=()
for package in openjdk-17-jre-headless libc6 libstdc++6 libgcc-s1 zlib1g; do
  v=$(apt-cache show --no-all-versions "$package:$host" 2>/dev/null | awk '/^Version: / && !v { v = $2 } END { print v }')
  [ -n "$v" ] || { echo "SKIPPED: apt knows no $package (apt-get update?)"; exit 77; }
  pinned+=("$package=$v")
done
root=$cache/jvm-arm64/${pinned[0]#*=}

# fetch_jvm: the packages for arm64, unpacked into $root.
fetch_jvm() {
  local apt=$cache/jvm-arm64/apt codename deb opts
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
  if ! (cd "$apt/debs" && apt-get -q "${opts[@]}" download "${pinned[@]}") >>"$tmp/apt.log" 2>&1; then
    echo "the arm64 packages of this machine's versions are gone: the archive's newest instead"
    (cd "$apt/debs" && apt-get -q "${opts[@]}" download "${pinned[@]%%=*}") >>"$tmp/apt.log" 2>&1 || return 1
  fi
  for deb in "$apt"/debs/*.deb; do
    dpkg-deb -x "$deb" "$root.part"
  done
  (cd "$apt/debs" && ls) >"$root.part/.debs"
  mv "$root.part" "$root"
  rm -rf "$apt"
}

mkdir -p "$cache/jvm-arm64"
exec 9>"$cache/jvm-arm64/lock"
flock 9
if [ ! -f "$root/.debs" ]; then
  echo "fetching Debian's arm64 JVM into $root"
  fetch_jvm || { cat "$tmp/apt.log"; echo "SKIPPED: cannot fetch Debian's arm64 packages"; exit 77; }
fi
flock -u 9
echo "aarch64 JVM from $(tr '\n' ' ' <"$root/.debs")"
java=$(echo "$root"/usr/lib/jvm/java-17-openjdk-arm64/bin/java)
[ -x "$java" ] || fail "no bin/java in $root"
file -L "$java" | grep -q aarch64 || fail "$java is not for aarch64"

compile_take_lock "$jar"
start_nodes
cd "$tmp"
start=$(date +%s%N)
QEMU_LD_PREFIX=$root "$qemu" "$java" --enable-native-access=ALL-UNNAMED -cp "$jar:$tmp/app" \
  TakeLock package-jar-aarch64 "${nodes[@]}" >"$tmp/out" 2>"$tmp/err" ||
  { cat "$tmp/out" "$tmp/err" >&2; fail "the aarch64 JVM took no lock"; }
took=$((($(date +%s%N) - start) / 1000000))
cat "$tmp/out"
grep -q ', aarch64)$' "$tmp/out" || fail "the JVM was not aarch64's"
quiet "the aarch64 JVM (Java 17, under qemu-user, ${took} ms)" "$tmp/err"
