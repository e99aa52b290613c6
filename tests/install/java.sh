# java.sh - sourced by the package_jar*.sh checks, after lib.sh.

# find_java VERSION: the java command of a JDK or JRE of that feature
# version (17, 25): REDLOCK_JAVA<VERSION> if set, else one under /usr/lib/jvm,
# else java on the PATH if it is that version; nothing when there is none.
find_java() {
  local v=$1 var=REDLOCK_JAVA$1 home java
  if [ -n "${!var:-}" ]; then
    echo "${!var}"
    return
  fi
  java=$(command -v java || true)
  for home in /usr/lib/jvm/*/ ${java:+"$(dirname "$(dirname "$(readlink -f "$java")")")/"}; do
    if [ -x "$home/bin/java" ] && grep -Eq "^JAVA_VERSION=\"$v([.\"])" "$home/release" 2>/dev/null; then
      echo "${home%/}/bin/java"
      return
    fi
  done
}

# compile_take_lock JAR: TakeLock.class, for Java 11 and later, in $tmp/app.
compile_take_lock() {
  mkdir -p "$tmp/app"
  javac --release 11 -Xlint:all -Werror -cp "$1" -d "$tmp/app" "$here/TakeLock.java"
}

# quiet NAME STDERR: STDERR holds nothing but without-hiredis.sh's note:
# no WARNING, nor anything else of the JVM.
quiet() {
  local extra
  extra=$(grep -v '^without-hiredis: ' "$2" || true)
  [ -z "$extra" ] || fail "$1 wrote on stderr:"$'\n'"$extra"
  echo "$1: nothing on stderr"
}
