#!/bin/sh
# mutate.sh - shows that the simulation (sim.c) catches unsafe edits of the
# engine. Each file in mutants/ is a patch of core/engine/ (with a line that
# says what it breaks): of its C, or of its Lua scripts (then scripts.c is
# made again from them, by cmake/redlock_scripts.cmake); the script copies
# the engine to a scratch directory,
# applies one patch at a time (a patch that does not apply exactly is an
# error), builds the simulator against that engine, and runs it with a
# fixed master seed and a budget of operations (and a mode of sim.c's, as
# a fourth column): the mutant must break an
# invariant within the budget, or the check fails. The engine as it is must
# hold every invariant with the same seeds first (the control), so a
# failure is the mutant's.
#
#   mutate.sh TOP SCRIPTS_C WORK [MUTANT...]
#
# TOP the source tree, SCRIPTS_C the scripts.c the build generated from the
# Lua scripts (core/CMakeLists.txt), WORK a scratch directory (emptied).
# Without names, every mutant of the list below. CC and CFLAGS as usual.
set -eu

if [ $# -lt 3 ]; then
    echo "usage: mutate.sh TOP SCRIPTS_C WORK [MUTANT...]" >&2
    exit 64
fi
top=$1
scripts_c=$2
work=$3
shift 3
here=$top/tests/sim

# name, master seed, operations within which it is caught: about three
# times what it took with that seed, at least 6000; budgets measured before
# were kept where they still hold. Measured last after the workload gained
# forged guard records and nodes that answer the guard as they like (and
# the counts of one seed vary a little from run to run: the simulations run
# on two threads): quorum-even 68, quorum-half 68, no-drift 23122 (master
# seed 7, since a late NOSCRIPT of an extend is sent again; seeds 1, 2, 4, 5
# and 6 took 146855, 211340, 84139, 74949 and 94186, seed 3 did not catch
# it in 105000), duration-ignored 2146, validity-from-end 1527, late-yes-kept
# 17559 (master seed 7, since a late NOSCRIPT of an extend is sent again;
# seeds 4, 6 and 8 took 34032, 184288 and 39309),
# wrong-entry 296, fence-low 8, drift-constant 36747 (master seed 8, since
# a late NOSCRIPT of an extend is sent again; seeds 3, 4, 5 and 6 took
# 95259, 161783, 286541 and 80038, seeds 1, 2 and 7 did not catch it in
# 300000),
# no-released-event 133, guard-ignored 6474 (master seed 5, since the
# scripts also go as functions; seeds 1, 3, 4 and 7 took 132003, 47227,
# 40935 and 118218, seeds 2 and 8 did not catch it in 300000),
# permit-majority 4022,
# release-skips-unanswered 2366, guard-uncapped 4911 to 5835, plain-token-ignored
# 438 (--no-scripting); of the
# scripts: rw-reader-beside-writer 49, sem-one-more 2442, fair-unordered
# 57588 (38819 with master seed 6 since the scripts also go as functions;
# seeds 1 to 5 took 163737, 202800, 255388, 67889 and 21922). Any change of the engine or of the workload moves where a seed
# leads.
list="
quorum-even 1 15000
quorum-half 1 6000
no-drift 7 60000
duration-ignored 1 80000
validity-from-end 1 50000
late-yes-kept 7 60000
wrong-entry 1 8000
fence-low 1 6000
drift-constant 8 110000
no-released-event 1 6000
guard-ignored 5 20000
permit-majority 1 15000
rw-reader-beside-writer 1 6000
sem-one-more 1 6000
fair-unordered 6 120000
release-skips-unanswered 1 6000
guard-uncapped 1 20000
records-ignored 1 40000 --empty-restarts
delifeq-unconditional 1 10000 --valkey
plain-token-ignored 1 6000 --no-scripting
"

cc=${CC:-cc}
# shellcheck disable=SC2046
flags="${CFLAGS:--O2} -std=gnu11 -D_GNU_SOURCE -w -I$top/abi $(pkg-config --cflags lua5.4 hiredis)"
libs="$(pkg-config --libs lua5.4 hiredis) -lpthread -lm"

rm -rf "$work"
mkdir -p "$work/base"
cp -R "$top/core/engine" "$work/base/engine"

# Compiles each source ($3...) with the engine in $1 into objects in $2, two
# at a time.
compile() {
    inc=$1 out=$2
    shift 2
    for f in "$@"; do
        printf '%s\n' "$f"
    done | xargs -P 2 -I{} sh -c '
        f={}; o="$0/$(basename "$f" .c).o"
        '"$cc $flags"' -I"$1" -c "$f" -o "$o"' "$out" "$inc"
}

compile "$work/base/engine" "$work/base" "$work"/base/engine/*.c "$scripts_c" \
    "$here/sim.c" "$here/simnode.c"
# shellcheck disable=SC2086
$cc -o "$work/base/sim" "$work"/base/*.o $libs

# Runs a simulator ($1) with seed $2 for $3 operations, its output in $4, in
# the mode $5 (a flag of sim.c's, or "-" for the default); returns its status.
run() {
    status=0
    if [ "$5" = - ]; then
        "$1" --seed "$2" --ops "$3" >"$4" 2>&1 || status=$?
    else
        "$1" --seed "$2" --ops "$3" "$5" >"$4" 2>&1 || status=$?
    fi
    return $status
}

# The control: the engine as it is, with each master seed and mode of the
# list for the largest budget of that seed in that mode, two at a time.
controls=$(printf '%s\n' "$list" | awk 'NF >= 3 { k = $2 " " (NF > 3 ? $4 : "-")
        if ($3 > most[k]) most[k] = $3 }
    END { for (k in most) { split(k, p, " "); print p[1], most[k], p[2] } }')
# shellcheck disable=SC2016
printf '%s\n' "$controls" | xargs -P 2 -L 1 sh -c '
    if [ "$3" = - ]; then mode=; else mode=$3; fi
    "$0/base/sim" --seed "$1" --ops "$2" $mode >"$0/control-$1$3.log" 2>&1 || true' "$work"
printf '%s\n' "$controls" | sort -n | while read -r seed ops mode; do
    log=$work/control-$seed$mode.log
    if ! grep -q 'every invariant held' "$log"; then
        echo "mutate.sh: the engine as it is broke an invariant (the control, master seed $seed, mode $mode):" >&2
        grep 'FAILED' "$log" >&2 || tail -5 "$log" >&2
        exit 1
    fi
    [ "$mode" = - ] && mode= || mode=" ($mode)"
    echo "control: $(grep 'operations in' "$log")$mode"
done || exit 1

survived=0
printf '%s\n' "$list" | while read -r name seed ops mode; do
    [ -n "$name" ] || continue
    if [ $# -gt 0 ]; then
        wanted=no
        for m in "$@"; do
            [ "$m" = "$name" ] && wanted=yes
        done
        [ $wanted = yes ] || continue
    fi
    patch_file=$here/mutants/$name.patch
    dir=$work/$name
    mkdir -p "$dir"
    cp -R "$work/base/engine" "$dir/engine"
    if ! patch -d "$dir" -p1 -F0 -s --no-backup-if-mismatch <"$patch_file"; then
        echo "mutate.sh: $name: the patch does not apply to core/engine as it is now" >&2
        exit 2
    fi
    changed=$(sed -n 's|^+++ b/\(engine/[^[:space:]]*\).*|\1|p' "$patch_file")
    case $changed in
    *.lua*) # a script: scripts.c again, from the patched scripts
        cmake -DSCRIPTS_DIR="$dir/engine/scripts" -DTEMPLATE="$dir/engine/scripts.c.in" \
            -DOUT="$dir/scripts.c" -P "$top/cmake/redlock_scripts.cmake"
        compile "$dir/engine" "$dir" "$dir/scripts.c"
        objects=
        for o in "$work"/base/*.o; do
            [ -e "$dir/$(basename "$o")" ] || objects="$objects $o"
        done
        objects="$objects $dir/*.o" ;;
    *.h*)   # a header: everything again
        compile "$dir/engine" "$dir" "$dir"/engine/*.c "$scripts_c" "$here/sim.c" \
            "$here/simnode.c"
        objects="$dir/*.o" ;;
    *)
        sources=
        for f in $changed; do
            sources="$sources $dir/$f"
        done
        # shellcheck disable=SC2086
        compile "$dir/engine" "$dir" $sources
        objects=
        for o in "$work"/base/*.o; do
            [ -e "$dir/$(basename "$o")" ] || objects="$objects $o"
        done
        objects="$objects $dir/*.o" ;;
    esac
    # shellcheck disable=SC2086
    $cc -o "$dir/sim" $objects $libs
    if run "$dir/sim" "$seed" "$ops" "$dir/sim.log" "${mode:--}"; then
        echo "SURVIVED $name: no invariant broken in $ops operations (seed $seed): $(sed -n 1p "$patch_file")"
        exit 3
    fi
    verdict=$(sed -n 's/^sim: FAILED seed \([0-9]*\): \([^:]*\):.*/\2 (simulation seed \1)/p' \
        "$dir/sim.log" | head -1)
    done_ops=$(sed -n 's/^sim: \([0-9]*\) operations in.*/\1/p' "$dir/sim.log")
    if [ -z "$verdict" ]; then
        echo "mutate.sh: $name: the simulator failed without naming an invariant:" >&2
        tail -5 "$dir/sim.log" >&2
        exit 2
    fi
    echo "caught $name: $verdict after $done_ops operations (budget $ops)"
done || survived=$?
if [ "$survived" -ne 0 ]; then
    echo "mutate.sh: a mutant survived or could not be built (status $survived)" >&2
    exit 1
fi
echo "mutate.sh: every mutant was caught"
