#!/bin/sh
# man-from-help.sh TOOL SUMMARY OUT - writes OUT, the manual page of TOOL in
# roff, from the text of "TOOL --help" and "TOOL --version", so that the two
# cannot disagree. The help text's shape makes the page:
#   "Usage: ..." and the lines under it        SYNOPSIS
#   the paragraph after them                   DESCRIPTION
#   "Heading:" or "Heading: text" at column 0,
#   after a blank line                          a section (.SH HEADING)
#   "  TAG   text" (indented 2 to 6)            an entry (.TP), the text
#     and the lines indented under the text     continuing it; lines indented
#                                               deeper keep their line breaks
# Headings named "Example..." are kept as they are (.nf).
# REDLOCK_EMULATOR (a ;-separated command) runs a tool built for another
# machine.
set -eu
tool=$1
summary=$2
out=$3
name=$(basename "$tool")
run() {
  # shellcheck disable=SC2086
  $(printf '%s' "${REDLOCK_EMULATOR:-}" | tr ';' ' ') "$tool" "$@"
}
version=$(run --version | sed -n '1s/^[^ ]* \([^ ]*\).*/\1/p')

run --help | awk -v name="$name" -v version="$version" -v summary="$summary" '
function esc(s) {
  gsub(/\\/, "\\e", s)
  gsub(/-/, "\\-", s)
  if (s ~ /^[.'\'']/) s = "\\&" s
  return s
}
function indent(s) { match(s, /^ */); return RLENGTH }
function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
# "Library options, for -o X" -> "LIBRARY OPTIONS, for -o X"
function heading(s,  c) {
  c = index(s, ",")
  return c ? toupper(substr(s, 1, c - 1)) substr(s, c) : toupper(s)
}
{ line[NR] = $0 }
END {
  printf ".TH %s 1 \"\" \"%s %s\" \"User Commands\"\n", toupper(name), name, version
  print ".nh"
  printf ".SH NAME\n%s \\- %s\n", name, esc(summary)
  i = 1
  # SYNOPSIS: "Usage: " and the lines aligned under it.
  print ".SH SYNOPSIS\n.nf"
  sub(/^Usage: +/, "", line[1])
  print esc(line[1])
  for (i = 2; i <= NR && line[i] != ""; i++) print esc(trim(line[i]))
  print ".fi\n.SH DESCRIPTION"
  mode = "text"; body = 0; blank = 1
  for (; i <= NR; i++) {
    s = line[i]; n = indent(s)
    if (s == "") { blank = 1; continue }
    if (n == 0 && blank && match(s, /^[A-Z][A-Za-z0-9 ,=.-]*:( |$)/)) {
      h = substr(s, 1, RLENGTH); sub(/: ?$/, "", h)
      if (mode == "example") print ".fi"
      printf ".SH %s\n", esc(heading(h))
      mode = (h ~ /^Example/) ? "example" : "text"
      if (mode == "example") print ".nf"
      s = trim(substr(s, RLENGTH + 1)); blank = 0
      if (s != "") print esc(toupper(substr(s, 1, 1)) substr(s, 2))
      continue
    }
    if (mode == "example") { print esc(s); blank = 0; continue }
    if (n == 0) {
      if (blank || mode == "entry") print ".PP"
      mode = "text"; print esc(s); blank = 0; continue
    }
    if (n <= 6) {
      rest = substr(s, n + 1)
      gap = match(rest, /  +/)
      if (gap) {
        tag = substr(rest, 1, RSTART - 1); text = substr(rest, RSTART + RLENGTH)
        body = n + RSTART - 1 + RLENGTH
      } else if (i < NR && indent(line[i + 1]) > 6) {
        tag = rest; text = ""; body = indent(line[i + 1])
      } else {
        if (blank || mode == "entry") print ".PP"
        mode = "text"; print esc(trim(s)); blank = 0; continue
      }
      if (blank && mode != "entry") print ".PP"
      printf ".TP\n\\fB%s\\fR\n", esc(tag)
      if (text != "") print esc(text)
      # A default and its range stay on a line of their own.
      if (text ~ /^default /) print ".br"
      mode = "entry"; blank = 0; continue
    }
    if (mode == "entry" && n > body) printf ".br\n\\ \\ %s\n", esc(trim(s))
    else print esc(trim(s))
    blank = 0
  }
  if (mode == "example") print ".fi"
}' > "$out.tmp"
mv "$out.tmp" "$out"
