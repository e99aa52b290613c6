#!/usr/bin/env bash
# The manual page, generated from --help at build time, renders without
# warnings and documents every option of the tool, short and long.
. "$(dirname "$0")/lib.sh"
: "${REDLOCK_MAN:?REDLOCK_MAN must name the generated redlock.1}"
source_file="$(dirname "$0")/../../tools/cli_args.c"

# groff (groff-base) checks the roff; man -l renders it as a reader sees it.
groff -man -Tutf8 -ww -z "$REDLOCK_MAN" 2> "$work/warnings"
[ ! -s "$work/warnings" ] || fail "groff warns: $(cat "$work/warnings")"
if command -v man > /dev/null; then
  MANWIDTH=100 man -l "$REDLOCK_MAN" > "$work/page" 2> "$work/err"
else
  groff -man -Tascii -P -cbou "$REDLOCK_MAN" > "$work/page" 2> "$work/err"
fi
[ -s "$work/page" ] || fail "the page renders empty: $(cat "$work/err")"

for section in NAME SYNOPSIS DESCRIPTION OPTIONS ENVIRONMENT 'EXIT STATUS' EXAMPLE; do
  grep -q "^$section\$" "$work/page" || fail "no section $section"
done
grep -q "^REDLOCK(1) " "$work/page" || fail "no REDLOCK(1) header"
grep -q "redlock $("$REDLOCK_BIN" --version | cut -d' ' -f2)" "$work/page" ||
  fail "the page does not carry the tool's version"

options=$(sed -n 's/^ *{"\([a-z-]*\)", \(no\|required\)_argument.*/\1/p' "$source_file")
[ "$(echo "$options" | wc -l)" -ge 14 ] || fail "cannot read the option table of $source_file"
for option in $options; do
  grep -q -- "--$option\b" "$work/page" || fail "the page does not mention --$option"
done
shorts=$(sed -n 's/.*getopt_long(argc, argv, "+:\([A-Za-z:]*\)".*/\1/p' "$source_file" | tr -d :)
[ -n "$shorts" ] || fail "cannot read the short options of $source_file"
for short in $(echo "$shorts" | fold -w1); do
  # An entry may name several short forms ("-x, -e, --exclusive").
  grep -Eq -- "^ +(-[A-Za-z], )*-$short, (-[A-Za-z], )*--" "$work/page" ||
    fail "the page does not list -$short"
done
for code in 64 69 70 74 75 77 126 127; do
  grep -Eq "^ +$code +[A-Za-z]" "$work/page" || fail "the page does not document exit status $code"
done
echo "ok"
