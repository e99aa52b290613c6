# wheel.sh - sourced by the package_wheel*.sh checks (after lib.sh).

# installed_tag COMMAND... TAG: the redlock-native that the Python run by
# COMMAND has installed came from a wheel tagged TAG (its WHEEL file).
installed_tag() {
  local tag=${*: -1} tags
  tags=$("${@:1:$#-1}" -c 'import importlib.metadata as m
print(" ".join(l[5:] for l in m.distribution("redlock-native").read_text("WHEEL").splitlines()
               if l.startswith("Tag: ")))')
  [[ " $tags " == *" $tag "* ]] || fail "pip installed the wheel tagged $tags, not $tag"
  echo "pip chose the wheel tagged $tags"
}
