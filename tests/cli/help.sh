#!/usr/bin/env bash
# --help documents every option of the tool, the durations, the environment
# variables and every exit status; --version prints the versions (tool, library, hiredis).
. "$(dirname "$0")/lib.sh"
source_file="$(dirname "$0")/../../tools/cli_args.c"

run "$REDLOCK_BIN" --help > "$work/help" 2> "$work/err"
expect_eq 0 "$status" "status of --help"
[ ! -s "$work/err" ] || fail "--help wrote to stderr"
run "$REDLOCK_BIN" -h > "$work/help-short"
cmp -s "$work/help" "$work/help-short" || fail "-h differs from --help"

# Every long option in the tool's option table.
options=$(sed -n 's/^ *{"\([a-z-]*\)", \(no\|required\)_argument.*/\1/p' "$source_file")
[ "$(echo "$options" | wc -l)" -ge 14 ] || fail "cannot read the option table of $source_file"
for option in $options; do
  grep -q -- "--$option\b" "$work/help" || fail "--help does not mention --$option"
done
for text in REDLOCK_NODES REDLOCK_PASSWORD REDLOCK_NAME REDLOCK_TOKEN \
            ms '30s' '2m' '1h' 'bare number' 'Fractions' '0.5' 'redis://' 'unix://' 'Example' \
            SIGINT SIGTERM SIGHUP SIGPIPE 128+N 'Waiting' unavailable_timeout_ms '/bin/sh -c' \
            'NAME -c STRING' 'default 75'; do
  grep -q -- "$text" "$work/help" || fail "--help does not mention $text"
done
for code in 64 69 70 74 75 77 126 127; do
  grep -q "^  $code " "$work/help" || fail "--help does not document exit status $code"
done
# flock's short options keep flock's meaning; --nodes has no short option.
for text in '-n, --nonblock, --nb ' '-w, --wait, --timeout DURATION' \
            '-E, --conflict-exit-code N ' '-c, --command STRING '; do
  grep -q -- "^  $text" "$work/help" || fail "--help does not list: $text"
done
! grep -q -- '-[A-Za-z], --nodes' "$work/help" || fail "--nodes has a short option"
# The example must not carry a password.
sed -n '/^Example/,$p' "$work/help" > "$work/example"
[ -s "$work/example" ] && ! grep -q '@' "$work/example" || fail "--help's example has a password"

run "$REDLOCK_BIN" --version > "$work/version"
expect_eq 0 "$status" "status of --version"
grep -Eq '^redlock [0-9]+\.[0-9]+\.[0-9]+ \(libredlock [0-9]+\.[0-9]+\.[0-9]+, hiredis [0-9]+\.[0-9]+\.[0-9]+\)$' \
  "$work/version" ||
  fail "unexpected --version output: $(cat "$work/version")"
echo "ok"
