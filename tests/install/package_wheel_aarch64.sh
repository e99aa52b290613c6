#!/usr/bin/env bash
# package_wheel_aarch64.sh SRC DIST - the aarch64 manylinux wheel in an
# aarch64 CPython under qemu-user: Debian's python3.11 for arm64, of the
# version apt-cache gives for this machine's, makes a venv, pip (Debian's)
# installs into it the wheel it chooses among DIST's, as
# bindings/python/README.md says (the manylinux aarch64 one), and takes
# locks with it (take_lock.py) on nodes of this machine.
#
# The interpreter and what it links with (Debian's libc6, libssl3, ... for
# arm64, of this machine's versions too) are fetched by apt (arm64.sh) with
# lists, cache and state in a folder of their own (nothing of the machine's
# apt changes; the packages are checked against Debian's signed indexes), and
# unpacked into a root kept in REDLOCK_CACHE (default ~/.cache/redlock), from
# which qemu-user takes every file it finds there (QEMU_LD_PREFIX). That root
# has no libhiredis. Without apt or Debian's archive the check is skipped. The
# musl wheels have no CPython here: scripts/package/python.sh checks their
# ELF.
. "$(dirname "$0")/lib.sh"
. "$here/arm64.sh"
. "$here/wheel.sh"
arm64_qemu "install the aarch64 wheel natively"
one 'redlock_native-*-cp310-abi3-*manylinux_2_17_aarch64*.whl' >/dev/null
# The packages, pinned to this machine's architecture's versions: the
# interpreter, its standard library, venv, pip's wheel, and the libraries
# their modules load on the way.
arm64_root python CPython python3.11-minimal libpython3.11-minimal libpython3.11-stdlib \
  python3-pip-whl libc6 libgcc-s1 zlib1g libexpat1 libssl3 libffi8 libbz2-1.0 liblzma5 libuuid1 \
  libcrypt1
python=$root/usr/bin/python3.11
file -L "$python" | grep -q aarch64 || fail "$python is not for aarch64"
[ -z "$(find "$root" -name 'libhiredis*')" ] || fail "the arm64 root has a libhiredis"

aarch64() {
  QEMU_LD_PREFIX=$root "$qemu" "$@"
}
machine=$(aarch64 "$python" -c 'import platform; print(platform.machine())')
[ "$machine" = aarch64 ] || fail "the emulated CPython says its machine is $machine"
# A program the emulated CPython starts runs without qemu-user (no binfmt
# handler is assumed), so nothing may start the aarch64 interpreter anew:
# the venv gets no pip of its own (ensurepip would), and pip runs from
# Debian's wheel of it, with the venv's interpreter, in one process.
pip=$(echo "$root"/usr/share/python-wheels/pip-*.whl)
[ -f "$pip" ] || fail "no pip wheel in $root"
start=$(date +%s)
aarch64 "$python" -m venv --without-pip "$tmp/venv"
aarch64 "$tmp/venv/bin/python3" "$pip/pip" install --no-index --find-links "$dist" \
  --disable-pip-version-check --quiet redlock-native
took=$(($(date +%s) - start))
installed_tag aarch64 "$tmp/venv/bin/python3" "cp310-abi3-manylinux_2_17_aarch64"
start_nodes
cd "$tmp"
aarch64 "$tmp/venv/bin/python3" -c 'import platform, sys; assert platform.machine() == "aarch64"
print("CPython", sys.version.split()[0], "on", platform.machine())'
aarch64 "$tmp/venv/bin/python3" "$here/take_lock.py" package-wheel-aarch64 "${nodes[@]}"
echo "the aarch64 wheel: installed by pip in ${took} s and taking locks, under qemu-user"
