#!/usr/bin/env bash
# package_php.sh SRC DIST - the PHP extension's tarball for this machine
# and this PHP (redlock-php-V-phpX.Y-nts-linux-ARCH.tar.gz), installed as
# its README says: unpacked anywhere, redlock.so copied into an
# extension_dir, redlock.ini into the folder PHP scans for ini files, the
# redlock/ folder onto the include_path; then a PHP that reads only that
# configuration takes, extends and releases locks with it (take_lock.php)
# on local nodes, where no libhiredis can be loaded (as root; else with
# it loadable, said so). What the tarball holds is checked too: hiredis'
# license, the notice, the core built with the pinned hiredis, and the PHP
# API its ini names being this PHP's. Skipped where PHP is missing, or is
# not the PHP the artifact is for.
. "$(dirname "$0")/lib.sh"
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
name=$(basename "$tarball" .tar.gz)

mkdir -p "$tmp/unpacked"
tar -C "$tmp/unpacked" -xzf "$tarball"
root=$tmp/unpacked/$name
for f in redlock.so redlock.ini redlock/autoload.php redlock/composer.json redlock/src/Client.php \
         README.md LICENSE hiredis-COPYING hiredis-NOTICE; do
  [ -f "$root/$f" ] || fail "$f not in ${tarball##*/}"
done
grep -qx 'extension=redlock' "$root/redlock.ini" || fail "redlock.ini has no extension=redlock"
api=$(php -n -i | sed -n 's/^PHP API => //p')
grep -q "PHP API $api\b" "$root/redlock.ini" ||
  fail "redlock.ini does not name this PHP's API, $api: $(grep API "$root/redlock.ini")"
built_with_hiredis "$root/redlock.so"
hiredis_license "$root/hiredis-COPYING"
grep -q "^hiredis $hiredis_version is linked into the native code" "$root/hiredis-NOTICE" ||
  fail "hiredis-NOTICE does not name hiredis $hiredis_version"

# The install: PHP's configuration of its own, as a machine's would be
# (php.ini with extension_dir and include_path, and a scan folder holding
# redlock.ini), and nothing else of the machine's.
mkdir -p "$tmp/ext" "$tmp/conf.d" "$tmp/share"
cp "$root/redlock.so" "$tmp/ext/"
cp "$root/redlock.ini" "$tmp/conf.d/"
cp -r "$root/redlock" "$tmp/share/"
printf 'extension_dir=%s\ninclude_path=".:%s"\n' "$tmp/ext" "$tmp/share" >"$tmp/php.ini"
rm -rf "$tmp/unpacked"
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
