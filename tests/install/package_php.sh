#!/usr/bin/env bash
# package_php.sh SRC DIST - the PHP extension's tarball for this machine
# and this PHP (redlock-php-V-phpX.Y-nts-linux-ARCH.tar.gz), installed as
# its README says (php.sh: unpacked anywhere, redlock.so copied into an
# extension_dir, redlock.ini into the folder PHP scans for ini files, the
# redlock/ folder onto the include_path); then a PHP that reads only that
# configuration takes, extends and releases locks with it (take_lock.php)
# on local nodes, where no libhiredis can be loaded (as root; else with it
# loadable, said so). What the tarball holds is checked too: hiredis'
# license, the notice, the core built with the pinned hiredis, and the PHP
# API its ini names being this PHP's. Skipped where PHP is missing, or is
# not the PHP the artifact is for.
. "$(dirname "$0")/lib.sh"
. "$here/php.sh"
if ! command -v php >/dev/null; then
  echo "SKIPPED: PHP is missing (Debian: php8.2-cli; scripts/setup.sh)"
  exit 77
fi
php_version=$(php -n -r 'echo PHP_MAJOR_VERSION, ".", PHP_MINOR_VERSION;')
if [ "$(php -n -r 'echo PHP_ZTS;')" = 1 ]; then
  echo "SKIPPED: this PHP is thread-safe (ZTS); the artifacts are for NTS"
  exit 77
fi
tarballs=("$dist"/redlock-php-*-php"$php_version"-nts-linux-"$(uname -m)".tar.gz)
if [ ! -f "${tarballs[0]}" ]; then
  ls "$dist"/redlock-php-*.tar.gz >/dev/null 2>&1 || fail "no redlock-php-*.tar.gz in $dist"
  echo "SKIPPED: no artifact for PHP $php_version (NTS) on $(uname -m) in $dist"
  exit 77
fi
tarball=$(one "redlock-php-*-php$php_version-nts-linux-$(uname -m).tar.gz")

unpack_php "$tarball"
ini_names_api "$(php -n -i | sed -n 's/^PHP API => //p')"
install_php
php_run() {
  PHP_INI_SCAN_DIR=$tmp/conf.d "${run[@]}" php -c "$tmp/php.ini" "$@"
}
run=()
if [ "$(id -u)" -eq 0 ]; then
  run=("$here/without-hiredis.sh")
else
  echo "not root: libhiredis stays loadable"
fi
loaded=$(php_run -m)
grep -qx redlock <<<"$loaded" || fail "PHP does not load the installed extension: $(php_run -m 2>&1 | tail -3)"

start_nodes
cd "$tmp"
php_run "$here/take_lock.php" package-php "${nodes[@]}"
echo "${tarball##*/}: installed, loaded by extension=redlock, takes locks"
