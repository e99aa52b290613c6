#!/usr/bin/env bash
# package_php_aarch64.sh SRC DIST - the PHP extension's aarch64 tarball in
# an aarch64 PHP under qemu-user: Debian's php8.2-cli for arm64, of the
# version apt-cache gives for this machine's (arm64.sh fetches it and the
# libraries it links with into a root that has no libhiredis), loads it
# installed as package_php does it (php.sh: extension_dir, an ini file with
# extension=redlock, the autoloader on the include_path) and takes, extends
# and releases locks with it (take_lock.php) on nodes of this machine. Its
# headers were made for aarch64 from the build machine's
# (scripts/package/php.sh): this is the check that they were right.
. "$(dirname "$0")/lib.sh"
. "$here/php.sh"
. "$here/arm64.sh"
arm64_qemu "package_php installs the aarch64 tarball natively"
tarball=$(one 'redlock-php-*-php8.2-nts-linux-aarch64.tar.gz')
# PHP 8.2's interpreter and the libraries it (and libxml2) links with.
arm64_root php PHP php8.2-cli libc6 libxml2 libicu72 liblzma5 zlib1g libssl3 libpcre2-8-0 \
  libsodium23 libargon2-1 libstdc++6 libgcc-s1
php=$root/usr/bin/php8.2
file -L "$php" | grep -q aarch64 || fail "$php is not for aarch64"
[ -z "$(find "$root" -name 'libhiredis*')" ] || fail "the arm64 root has a libhiredis"

aarch64() {
  QEMU_LD_PREFIX=$root "$qemu" "$@"
}
machine=$(aarch64 "$php" -n -r 'echo php_uname("m");')
[ "$machine" = aarch64 ] || fail "the emulated PHP says its machine is $machine"
unpack_php "$tarball"
ini_names_api "$(aarch64 "$php" -n -i | sed -n 's/^PHP API => //p')"
install_php
php_run() {
  PHP_INI_SCAN_DIR=$tmp/conf.d aarch64 "$php" -c "$tmp/php.ini" "$@"
}
loaded=$(php_run -m)
grep -qx redlock <<<"$loaded" || fail "the aarch64 PHP does not load the extension: $(php_run -m 2>&1 | tail -3)"

start_nodes
cd "$tmp"
start=$(date +%s%N)
php_run "$here/take_lock.php" package-php-aarch64 "${nodes[@]}"
took=$((($(date +%s%N) - start) / 1000000))
echo "${tarball##*/}: loaded by Debian's arm64 PHP under qemu-user, takes locks (${took} ms)"
