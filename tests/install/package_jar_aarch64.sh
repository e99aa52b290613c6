#!/usr/bin/env bash
# package_jar_aarch64.sh SRC DIST - the jar's linux-aarch64 library in an
# aarch64 JVM under qemu-user: Debian's openjdk-17-jre-headless for arm64, of
# the version apt-cache gives for this machine's, takes locks with the jar
# (TakeLock, run as bindings/java/README.md says) on nodes of this machine,
# with nothing on stderr.
#
# The JVM and what it links with (Debian's libc6, libstdc++6, libgcc-s1 and
# zlib1g for arm64, of this machine's versions too) are fetched by apt
# (arm64.sh) with lists, cache and state in a folder of their own (nothing of
# the machine's apt changes; the packages are checked against Debian's signed
# indexes), and unpacked into a root kept in REDLOCK_CACHE (default
# ~/.cache/redlock), from which qemu-user takes every file it finds there
# (QEMU_LD_PREFIX). That root has no libhiredis. Without apt or Debian's
# archive the check is skipped. The musl library for aarch64 is checked by
# package_jar (ELF).
. "$(dirname "$0")/lib.sh"
. "$here/arm64.sh"
. "$here/java.sh"
arm64_qemu "package_jar runs the jar's aarch64 library natively"
jar=$(one 'redlock-[0-9]*.jar')
# The packages, pinned to this machine's architecture's versions.
arm64_root jvm JVM openjdk-17-jre-headless libc6 libstdc++6 libgcc-s1 zlib1g
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
