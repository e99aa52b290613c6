# php.sh - sourced by the package_php*.sh checks (after lib.sh): the PHP
# extension's tarball unpacked, checked, and installed as
# bindings/php/README.md says.

# unpack_php TARBALL: unpacks TARBALL (redlock-php-V-phpX.Y-nts-linux-ARCH)
# into $tmp and checks what it holds: the files, the install line, hiredis'
# license and notice, the core built with the pinned hiredis. Sets unpacked to
# its folder.
unpack_php() {
  local f
  mkdir -p "$tmp/unpacked"
  tar -C "$tmp/unpacked" -xzf "$1"
  unpacked=$tmp/unpacked/$(basename "$1" .tar.gz)
  for f in redlock.so redlock.ini redlock/autoload.php redlock/composer.json redlock/src/Client.php \
           README.md LICENSE hiredis-COPYING hiredis-NOTICE; do
    [ -f "$unpacked/$f" ] || fail "$f not in ${1##*/}"
  done
  grep -qx 'extension=redlock' "$unpacked/redlock.ini" || fail "redlock.ini has no extension=redlock"
  built_with_hiredis "$unpacked/redlock.so"
  hiredis_license "$unpacked/hiredis-COPYING"
  grep -q "^hiredis $hiredis_version is linked into the native code" "$unpacked/hiredis-NOTICE" ||
    fail "hiredis-NOTICE does not name hiredis $hiredis_version"
}

# ini_names_api API: the unpacked redlock.ini names the PHP API API (what
# `php -i` says of the PHP that runs it).
ini_names_api() {
  grep -q "PHP API $1\b" "$unpacked/redlock.ini" ||
    fail "redlock.ini does not name the PHP's API, $1: $(grep API "$unpacked/redlock.ini")"
}

# install_php: what unpack_php unpacked, installed as a user installs it:
# redlock.so in an extension_dir ($tmp/ext), redlock.ini in the folder PHP
# scans for ini files ($tmp/conf.d), redlock/ on the include_path
# ($tmp/share), all named in a php.ini of their own ($tmp/php.ini) and
# nothing of the machine's PHP configuration. A PHP then runs with it as
# PHP_INI_SCAN_DIR=$tmp/conf.d php -c $tmp/php.ini.
install_php() {
  mkdir -p "$tmp/ext" "$tmp/conf.d" "$tmp/share"
  cp "$unpacked/redlock.so" "$tmp/ext/"
  cp "$unpacked/redlock.ini" "$tmp/conf.d/"
  cp -r "$unpacked/redlock" "$tmp/share/"
  printf 'extension_dir=%s\ninclude_path=".:%s"\n' "$tmp/ext" "$tmp/share" >"$tmp/php.ini"
  rm -rf "$tmp/unpacked"
}
