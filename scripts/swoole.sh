#!/usr/bin/env bash
# swoole.sh - the Swoole extension for PHP's CLI, which the PHP binding's
# coroutine driver (bindings/php/src/Internal/Swoole) runs on and its tests
# (CTest php_swoole) need. Swoole is not a Debian package: it is built from
# its source release kept beside the tree (../shared/third_party/, whose
# README.md gives its origin, license and checksum).
#
#   swoole.sh install   when PHP (php8.2-dev) is there and `php -m` has no
#                       swoole: checks the tarball's checksum, builds it
#                       (phpize, configure, make -j2), installs it in PHP's
#                       extension_dir and enables it for the CLI (an ini in
#                       its conf.d); nothing to do when swoole is loaded.
#                       A build that fails says why and leaves PHP as it
#                       was: the Swoole tests then skip.
#   swoole.sh status    says whether the CLI loads swoole (exit 0) or not (1)
#
# $REDLOCK_SWOOLE_TARBALL names another tarball of the same release.
set -uo pipefail

version=6.2.2
sum=cebf8355b533fd140f6af8038f668181f98ebc5d6635a4f4b8b5cce178df2b33
root=$(cd "$(dirname "$0")/.." && pwd)
tarball=${REDLOCK_SWOOLE_TARBALL:-$root/../shared/third_party/swoole-src-$version.tar.gz}

loaded() {
  php -m 2>/dev/null | grep -qx swoole
}

install() {
  if loaded; then
    return 0
  fi
  local phpize php_config
  phpize=$(command -v phpize8.2 || command -v phpize) || {
    echo "swoole.sh: PHP's phpize is missing (Debian: php8.2-dev): Swoole not built"
    return 0
  }
  php_config=$(command -v php-config8.2 || command -v php-config) || {
    echo "swoole.sh: php-config is missing (Debian: php8.2-dev): Swoole not built"
    return 0
  }
  if [ ! -f "$tarball" ]; then
    echo "swoole.sh: $tarball is missing: Swoole not built (its tests skip)"
    return 0
  fi
  if ! echo "$sum  $tarball" | sha256sum -c --quiet - >/dev/null 2>&1; then
    echo "swoole.sh: $tarball does not have the pinned checksum: Swoole not built" >&2
    return 0
  fi
  local tmp log
  tmp=$(mktemp -d)
  log=$tmp/build.log
  echo "swoole.sh: building Swoole $version (about 2 minutes on 2 cores)"
  # Coroutine sockets and OpenSSL (TLS to rediss:// nodes) are Swoole's
  # defaults on Linux; brotli and zstd (HTTP compression) are not needed.
  if ! (tar xzf "$tarball" -C "$tmp" &&
        cd "$tmp/swoole-src-$version" &&
        "$phpize" &&
        ./configure --with-php-config="$php_config" --disable-brotli --disable-zstd &&
        make -j2 &&
        make install) >"$log" 2>&1; then
    echo "swoole.sh: the build of Swoole failed; the end of its log:" >&2
    tail -n 25 "$log" >&2
    rm -rf "$tmp"
    return 0
  fi
  rm -rf "$tmp"
  # The CLI's conf.d (Debian: /etc/php/8.2/cli/conf.d), from PHP itself.
  local confd
  confd=$(php -r 'echo PHP_CONFIG_FILE_SCAN_DIR;' 2>/dev/null)
  if [ -z "$confd" ] || ! mkdir -p "$confd" 2>/dev/null; then
    echo "swoole.sh: PHP has no conf.d to enable Swoole in; load it with -d extension=swoole" >&2
    return 0
  fi
  echo "extension=swoole" > "$confd/20-swoole.ini"
  if loaded; then
    echo "swoole.sh: Swoole $version installed and enabled ($confd/20-swoole.ini)"
  else
    echo "swoole.sh: Swoole $version installed, but PHP does not load it:" >&2
    php -d display_startup_errors=1 -m 2>&1 | grep -i swoole >&2 || true
  fi
}

case "${1:-}" in
  install) install ;;
  status) loaded ;;
  *) echo "usage: swoole.sh install|status" >&2; exit 2 ;;
esac
