#!/usr/bin/env bash
# package_jar.sh SRC DIST - the jar:
#   - what it carries: a JNI library per platform, linux-x86_64 and
#     linux-aarch64 (glibc 2.17 and later) and the same with -musl, each for
#     its machine and C library, needing nothing else, exporting exactly the
#     entry points of the jar's native methods; its license and hiredis'; the
#     manifest's entries (Enable-Native-Access, Implementation-*, license);
#   - used as bindings/java/README.md says (on the class path, with
#     --enable-native-access=ALL-UNNAMED), where no libhiredis can be loaded,
#     on Java 17 and on Java 25: locks taken, nothing on stderr. Java 25
#     without the option warns (JEP 472), which shows that the check sees a
#     warning; an application jar whose manifest enables native access, run
#     with java -jar, is quiet too;
#   - its loader: it takes the musl library where musl's loader is mapped in
#     the JVM, and where the jar has nothing for the platform (os.arch set to
#     riscv64) its error names the platform, those the jar carries, and what
#     to do.
# This machine's glibc JVM cannot load the musl libraries: they are checked
# by their ELF only. package_jar_aarch64 runs the aarch64 glibc one in a JVM.
# The runs where no libhiredis can be loaded need root; without it, they are
# skipped after the rest.
. "$(dirname "$0")/lib.sh"
. "$here/java.sh"
jar=$(one 'redlock-[0-9]*.jar')
version=${jar##*/redlock-}
version=${version%.jar}
machine=$(uname -m)

# --- What the jar carries.
python3 -m zipfile -e "$jar" "$tmp/jar"
manifest=$(tr -d '\r' <"$tmp/jar/META-INF/MANIFEST.MF")
for entry in "Enable-Native-Access: ALL-UNNAMED" "Implementation-Title: redlock" \
             "Implementation-Version: $version" "Bundle-License: MIT;"; do
  [[ $manifest == *"$entry"* ]] || fail "the manifest lacks $entry:"$'\n'"$manifest"
done
grep -q '^MIT License' "$tmp/jar/META-INF/LICENSE" || fail "no MIT license in META-INF/LICENSE"
grep -q 'Redistribution and use in source and binary forms' "$tmp/jar/META-INF/LICENSE.hiredis" ||
  fail "no hiredis license (BSD-3-Clause) in META-INF/LICENSE.hiredis"
grep -q '<name>MIT</name>' "$tmp/jar/META-INF/maven/io.redlock/redlock/pom.xml" ||
  fail "the jar's pom.xml names no MIT license"

# The JNI names of the jar's native methods (no overloads: the short form),
# and JNI_OnLoad and JNI_OnUnload: all a library may export.
mapfile -t classes < <(cd "$tmp/jar" && find io -name '*.class' | sed 's/\.class$//; s|/|.|g')
expected=$(javap -p -cp "$tmp/jar" "${classes[@]}" | python3 -c '
import re, sys
def mangle(s):
    return s.replace("_", "_1").replace(".", "_").replace("$", "_00024")
names = {"JNI_OnLoad", "JNI_OnUnload"}
for line in sys.stdin:
    m = re.match(r"(?:.* )?(?:class|interface|enum) ([\w.$]+)", line)
    if m and not line.startswith(" "):
        cls = m.group(1)
    m = re.search(r" native .*?(\w+)\(", line)
    if m:
        names.add("Java_" + mangle(cls) + "_" + mangle(m.group(1)))
print("\n".join(sorted(names)))')

# check_native PLATFORM: the jar's library for PLATFORM.
check_native() {
  local platform=$1 lib=$tmp/jar/native/$1/libredlock_jni.so elf loader needed n newest exports
  [ -f "$lib" ] || fail "the jar has no native/$platform/libredlock_jni.so"
  case $platform in
    linux-x86_64*) elf="Advanced Micro Devices X86-64" loader=ld-linux-x86-64.so.2 ;;
    linux-aarch64*) elf=AArch64 loader=ld-linux-aarch64.so.1 ;;
  esac
  [[ $(readelf -h "$lib") == *"Machine:"*"$elf"* ]] || fail "native/$platform is not for $elf"
  needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | tr '\n' ' ')
  if [[ $platform == *-musl ]]; then
    # musl's C library is one file, libc.so; nothing of glibc.
    [ "$needed" = "libc.so " ] || fail "native/$platform needs $needed(musl has libc.so only)"
    ! readelf -V "$lib" | grep 'GLIBC_' >/dev/null || fail "native/$platform asks for glibc's symbol versions"
  else
    for n in $needed; do
      case $n in
        libc.so.6 | libpthread.so.0 | libdl.so.2 | libm.so.6 | "$loader") ;;
        *) fail "native/$platform needs $n" ;;
      esac
    done
    newest=$(objdump -T "$lib" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
    [ "$(printf '%s\n2.17\n' "$newest" | sort -V | tail -n 1)" = 2.17 ] ||
      fail "native/$platform needs glibc $newest"
  fi
  exports=$(nm -D --defined-only "$lib" | awk '{ print $NF }' | sort)
  [ "$exports" = "$expected" ] ||
    fail "native/$platform does not export the JNI entry points alone:"$'\n'"$(diff <(echo "$expected") <(echo "$exports"))"
  echo "native/$platform: $elf, NEEDED $needed${newest:+(glibc $newest at most) }and the $(wc -l <<<"$exports") JNI entry points"
}
carried=$(cd "$tmp/jar/native" && ls | sort | tr '\n' ' ')
[ "$carried" = "linux-aarch64 linux-aarch64-musl linux-x86_64 linux-x86_64-musl " ] ||
  fail "the jar carries natives for $carried"
for platform in $carried; do
  check_native "$platform"
done

# --- Used as the README says, on Java 17 and 25.
java17=$(find_java 17)
java25=$(find_java 25)
[ -n "$java17" ] || fail "no Java 17 (scripts/setup.sh installs it)"
compile_take_lock "$jar"
start_nodes
cd "$tmp"

# The loader's choice and errors (Java 17; the same code runs on every Java).
# With a library named as musl's loader mapped in the JVM (a copy of zlib,
# preloaded), the loader takes the musl library, which glibc cannot load.
# (awk reads to the end: an early exit would end ldconfig by SIGPIPE,
# which pipefail turns into this script's silent end.)
zlib=$(ldconfig -p | awk '$1 == "libz.so.1" && !found { print $NF; found = 1 }')
mkdir "$tmp/fake-musl"
cp "$zlib" "$tmp/fake-musl/ld-musl-$machine.so.1"
if LD_PRELOAD=$tmp/fake-musl/ld-musl-$machine.so.1 "$java17" --enable-native-access=ALL-UNNAMED \
     -cp "$jar:$tmp/app" TakeLock package-jar-musl "${nodes[@]}" >/dev/null 2>"$tmp/musl.err"; then
  fail "a musl library loaded into a glibc JVM"
fi
grep -q "the jar's native library for linux-$machine-musl does not load" "$tmp/musl.err" ||
  fail "with musl's loader mapped, the loader did not take linux-$machine-musl:"$'\n'"$(cat "$tmp/musl.err")"
echo "with musl's loader mapped, the loader takes linux-$machine-musl"
# A platform the jar lacks, with nothing on java.library.path either.
mkdir "$tmp/empty"
if "$java17" --enable-native-access=ALL-UNNAMED -Dos.arch=riscv64 -Djava.library.path="$tmp/empty" \
     -cp "$jar:$tmp/app" TakeLock package-jar-riscv64 "${nodes[@]}" >/dev/null 2>"$tmp/riscv64.err"; then
  fail "the jar loaded something for linux-riscv64"
fi
error=$(grep -m1 'UnsatisfiedLinkError' "$tmp/riscv64.err" || true)
for part in "no native library for linux-riscv64" \
            "the jar carries linux-aarch64, linux-aarch64-musl, linux-x86_64, linux-x86_64-musl" \
            "java.library.path ($tmp/empty)" "Build the jar from source on this platform"; do
  [[ $error == *"$part"* ]] || fail "the error for linux-riscv64 lacks \"$part\":"$'\n'"$(cat "$tmp/riscv64.err")"
done
echo "for linux-riscv64: $error"

# --- Used as the README says, where no libhiredis can be loaded, on Java 17 and 25.
needs_root

# take_lock NAME JAVA [OPTION...]: TakeLock run with JAVA and OPTIONS, the
# jar and the program on the class path, where no libhiredis loads; its
# stderr in $tmp/NAME.err.
take_lock() {
  local name=$1 java=$2
  shift 2
  "$here/without-hiredis.sh" "$java" "$@" -cp "$jar:$tmp/app" TakeLock "package-jar-$name" \
    "${nodes[@]}" 2>"$tmp/$name.err" || { cat "$tmp/$name.err" >&2; fail "$name: no lock taken"; }
}

take_lock java17 "$java17" --enable-native-access=ALL-UNNAMED
quiet "Java 17, --enable-native-access=ALL-UNNAMED" "$tmp/java17.err"

if [ -z "$java25" ]; then
  echo "SKIPPED: the Java 25 runs: no Java 25 under /usr/lib/jvm (REDLOCK_JAVA25 names one)"
  exit 77
fi
take_lock java25 "$java25" --enable-native-access=ALL-UNNAMED
quiet "Java 25, --enable-native-access=ALL-UNNAMED" "$tmp/java25.err"
take_lock java25-plain "$java25"
grep -q '^WARNING: A restricted method in java.lang.System has been called' "$tmp/java25-plain.err" ||
  fail "Java 25 without --enable-native-access did not warn: the check cannot see a warning"
echo "Java 25 without --enable-native-access: $(grep -c '^WARNING' "$tmp/java25-plain.err") WARNING lines"
# java -jar: Java reads Enable-Native-Access from the jar it runs.
mkdir "$tmp/launch"
cp "$jar" "$tmp/launch/"
printf 'Main-Class: TakeLock\nClass-Path: %s\nEnable-Native-Access: ALL-UNNAMED\n' "${jar##*/}" >"$tmp/manifest"
"$(dirname "$(readlink -f "$(command -v javac)")")/jar" --create --file "$tmp/launch/app.jar" \
  --manifest "$tmp/manifest" -C "$tmp/app" .
"$here/without-hiredis.sh" "$java25" -jar "$tmp/launch/app.jar" package-jar-launch "${nodes[@]}" \
  2>"$tmp/launch.err" || { cat "$tmp/launch.err" >&2; fail "java -jar: no lock taken"; }
quiet "Java 25, java -jar of an application jar with Enable-Native-Access" "$tmp/launch.err"
