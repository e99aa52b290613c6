#!/usr/bin/env bash
# php.sh - the PHP extension (scripts/package.sh runs it): for each glibc
# target, redlock-php-V-phpX.Y-nts-linux-ARCH.tar.gz, unpacking to a folder
# of the same name with
#   redlock.so       the extension, built by zig (bindings/php as a project
#                    of its own) with the core and hiredis linked in
#   redlock.ini      its install line, extension=redlock, and what it is for
#                    (PHP X.Y, NTS, PHP API N: `php -i | grep 'PHP API'`)
#   redlock/         the PHP layer: autoload.php, composer.json, src/
#   README.md        bindings/php's, LICENSE, and hiredis-COPYING and
#                    hiredis-NOTICE (which hiredis is inside)
# An extension loads only in the PHP whose API and thread safety it was
# built for: PHP's headers come from Debian's php8.2-dev on this machine
# (`php-config8.2 --include-dir`), copied into each target's sysroot (no zig
# build may look into the build machine's /usr/include), and the name says
# which PHP they are, read from them.
#
# aarch64: the headers are the same on every machine but main/php_config.h,
# configure's findings about the machine PHP was built on, and
# main/build-defs.h (configure's command line, which nothing compiled in an
# extension reads). Compared with Debian's php8.2-dev 8.2.36-1~deb12u1 for
# arm64, the amd64 php_config.h differs in the macros of aarch64_config
# below only: CPU features (x86 intrinsics headers, cpuid, the x87 FPU
# control word, the `target` attribute, aarch64's CRC32) and DTrace, which
# Debian builds for amd64 only. None of them changes a type or a structure
# an extension sees. The aarch64 sysroot gets the build machine's headers
# with exactly those edits (each must match once, else the build machine's
# PHP is not the one compared and the packaging stops), which makes them
# those of Debian's arm64 package; tests/install/package_php_aarch64.sh
# loads the result in Debian's arm64 PHP under qemu-user.
#
# No musl artifact: PHP for musl is Alpine's, whose headers (and
# php_config.h, configure's findings about musl) are not on this machine.
set -euo pipefail
. "$REDLOCK_SRC/scripts/package/lib.sh"

php_config=$(command -v php-config8.2 || command -v php-config) ||
  { echo "package: php-config is missing (Debian: php8.2-dev; scripts/setup.sh)" >&2; exit 1; }
incdir=$("$php_config" --include-dir)
package=$(dpkg-query -S "$incdir/main/php.h" 2>/dev/null | cut -d: -f1) ||
  { echo "package: no Debian package owns $incdir/main/php.h (Debian: php8.2-dev)" >&2; exit 1; }

# The value of the macro NAME in the header FILE.
macro() {
  sed -n "s/^#define $1 \"\{0,1\}\([^\" ]*\)\"\{0,1\}\$/\1/p" "$2"
}

# The macros of main/php_config.h that differ for aarch64, as Debian's
# arm64 php8.2-dev has them: 1, 0, or empty for #undef.
declare -A aarch64_config=(
  [HAVE_AARCH64_CRC32]=1 [HAVE_CPUID_COUNT]= [HAVE_CPUID_H]= [HAVE_DTRACE]=
  [HAVE_FPU_INLINE_ASM_X86]= [HAVE_FUNC_ATTRIBUTE_TARGET]= [HAVE_IMMINTRIN_H]=
  [HAVE_NMMINTRIN_H]= [HAVE_SYS_SDT_H]= [HAVE_TMMINTRIN_H]= [HAVE_WMMINTRIN_H]=
  [HAVE__FPU_SETCW]= [PHP_HAVE_BUILTIN_CPU_INIT]=0 [PHP_HAVE_BUILTIN_CPU_SUPPORTS]=0
)

# php_headers TARGET DEST: the headers of Debian's PHP package into DEST,
# made those of TARGET's machine.
php_headers() {
  local target=$1 dest=$2 name value config expr
  rm -rf "$dest"
  mkdir -p "$dest"
  # The package's files only: not those of extensions built here (Swoole).
  dpkg-query -L "$package" | while IFS= read -r f; do
    if [[ $f == "$incdir"/* ]] && [ -f "$f" ]; then
      mkdir -p "$dest/$(dirname "${f#"$incdir"/}")"
      cp "$f" "$dest/${f#"$incdir"/}"
    fi
  done
  if [ "$(arch "$target")" = "$(uname -m)" ]; then
    return
  fi
  if [ "$(uname -m)-$(arch "$target")" != x86_64-aarch64 ]; then
    echo "package: PHP's headers are known for aarch64 from x86_64 only, not from $(uname -m)" >&2
    return 1
  fi
  config=$dest/main/php_config.h
  for name in "${!aarch64_config[@]}"; do
    value=${aarch64_config[$name]}
    case $value in
      1) expr="s|^/\* #undef $name \*/\$|#define $name 1|" ;;
      0) expr="s|^#define $name 1\$|#define $name 0|" ;;
      *) expr="s|^#define $name 1\$|/* #undef $name */|" ;;
    esac
    if [ "$(sed -n "${expr}p" "$config" | wc -l)" != 1 ]; then
      echo "package: $incdir/main/php_config.h is not the amd64 one compared with arm64's:" \
        "$name is not as expected there" >&2
      return 1
    fi
    sed -i "$expr" "$config"
  done
  # What DTrace made for amd64, and configure's command line.
  rm -f "$dest/Zend/zend_dtrace_gen.h"
  sed -i "/^#define CONFIGURE_COMMAND /{s/x86_64-linux-gnu/aarch64-linux-gnu/g;s/'--enable-dtrace'/'--disable-dtrace'/}" \
    "$dest/main/build-defs.h"
}

for target in $REDLOCK_GLIBC_TARGETS; do
  api=$(macro PHP_API_VERSION "$incdir/main/php.h")
  major=$(macro PHP_MAJOR_VERSION "$incdir/main/php_version.h")
  minor=$(macro PHP_MINOR_VERSION "$incdir/main/php_version.h")
  php_inc=$(sysroot "$target")/include/php/$api
  php_headers "$target" "$php_inc"
  grep -q '^/\* #undef ZTS \*/$' "$php_inc/main/php_config.h" ||
    { echo "package: $incdir is a thread-safe (ZTS) PHP's; the artifact is named for NTS" >&2; exit 1; }
  [ -n "$api" ] && [ -n "$major" ] && [ -n "$minor" ] ||
    { echo "package: no PHP version or API in $incdir/main" >&2; exit 1; }
  name=redlock-php-$REDLOCK_VERSION-php$major.$minor-nts-linux-$(arch "$target")
  build=$REDLOCK_WORK/php-$target
  stage=$REDLOCK_WORK/stage/$name
  rm -rf "$stage"
  step "PHP $major.$minor extension for $target" "php-$target.log" bash -c '
    . "$REDLOCK_SRC/scripts/package/lib.sh"
    cross_cmake "$1" "$REDLOCK_SRC/bindings/php" "$2" -DREDLOCK_PHP_INCDIR="$3" \
      -DREDLOCK_PHP_EXTDIR=. -DREDLOCK_PHP_LIBDIR=redlock -DREDLOCK_STATIC_HIREDIS=ON \
      -DCMAKE_MODULE_LINKER_FLAGS=-Wl,--strip-debug -DCMAKE_EXPORT_COMPILE_COMMANDS=ON &&
    cmake --build "$2" && cmake --install "$2" --prefix "$4"' _ \
    "$target" "$build" "$php_inc" "$stage"
  # The build machine's C library headers are for its own C library only.
  if grep -Eq '[ =]/usr/(local/)?include' "$build/compile_commands.json"; then
    echo "package: the $target build of the PHP extension uses the build machine's /usr/include" >&2
    exit 1
  fi
  for f in redlock.so redlock/autoload.php redlock/composer.json redlock/src/Client.php; do
    [ -f "$stage/$f" ] || { echo "package: no $f from the $target build" >&2; exit 1; }
  done
  cat >"$stage/redlock.ini" <<INI
; redlock: distributed locks over N independent Redis masters (Redlock).
; redlock.so is for PHP $major.$minor, non-thread-safe (NTS), PHP API $api
; (php -i | grep 'PHP API'), on Linux $(arch "$target") with glibc 2.17 or later.
; Put redlock.so in PHP's extension_dir (php-config --extension-dir) and this
; file where PHP reads its ini files (php --ini; Debian:
; /etc/php/$major.$minor/mods-available/, then phpenmod redlock), and require
; redlock/autoload.php (README.md).
extension=redlock
INI
  cp "$REDLOCK_SRC/bindings/php/README.md" "$REDLOCK_SRC/LICENSE" "$stage/"
  for file in COPYING NOTICE; do
    cp "$(sysroot "$target")/share/licenses/hiredis/$file" "$stage/hiredis-$file"
  done
  tar -C "$REDLOCK_WORK/stage" -czf "$REDLOCK_DIST/$name.tar.gz" "$name"
done
