#!/bin/sh
# run.sh PHP EXTENSION PHPUNIT - the Swoole suite (CTest php_swoole): skipped
# (exit 77) with a message where PHP has no swoole extension.
php=$1 extension=$2 phpunit=$3
if ! "$php" -r 'exit(extension_loaded("swoole") ? 0 : 1);'; then
  echo "php_swoole: skipped: the swoole extension is not loaded (scripts/swoole.sh builds it from ../shared/third_party)"
  exit 77
fi
exec "$php" -d extension="$extension" "$phpunit" --configuration "$(dirname "$0")/phpunit.xml"
