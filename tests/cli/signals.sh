#!/usr/bin/env bash
# SIGTERM, SIGINT and SIGHUP sent to the tool reach the command, and the lock
# is released when it exits. If the tool is killed, the command gets SIGTERM.
. "$(dirname "$0")/lib.sh"
start_nodes 5

# The command reports which signal it got, stops its sleep, then exits 7.
# The report is written aside and renamed into place, so that the test never
# reads it half-written (a rename is atomic).
command='for sig in TERM INT HUP; do trap "echo $sig > \"$0/$1-got.tmp\"; mv \"$0/$1-got.tmp\" \"$0/$1-got\"; kill \$!; exit 7" $sig; done
touch "$0/$1-started"
sleep 30 & wait'

# start NAME: starts the tool in the background with SIGINT at its default
# (bash starts background jobs with SIGINT ignored); sets pid.
start() {
  (
    trap - INT
    exec redlock --nodes "$NODES" "$1" -- sh -c "$command" "$work" "$1"
  ) &
  pid=$!
  wait_for_file "$work/$1-started"
}

for sig in TERM INT HUP; do
  start "job-$sig"
  kill -"$sig" "$pid"
  wait_bg "$pid"
  expect_eq 7 "$status" "status after SIG$sig"
  expect_eq "$sig" "$(cat "$work/job-$sig-got")" "signal the command got"
  expect_released "job-$sig"
done

# A command killed by the forwarded signal: 128 + its number.
run_bg pid redlock --nodes "$NODES" plain -- sh -c 'touch "$0/plain-started"; exec sleep 30' "$work"
wait_for_file "$work/plain-started"
kill -TERM "$pid"
wait_bg "$pid"
expect_eq 143 "$status" "status of a command killed by the forwarded SIGTERM"
expect_released plain

# A signal ignored on entry (as under nohup) stays ignored, for the command too.
(
  trap "" HUP
  exec redlock --nodes "$NODES" nohup -- sh -c 'touch "$0/nohup-started"; sleep 1' "$work"
) &
pid=$!
wait_for_file "$work/nohup-started"
kill -HUP "$pid"
wait_bg "$pid"
expect_eq 0 "$status" "status after SIGHUP ignored on entry"

# The tool is killed: nobody extends the lock, so the command is stopped.
start killed
kill -KILL "$pid"
wait_for_file "$work/killed-got"
expect_eq TERM "$(cat "$work/killed-got")" "signal the command got when the tool died"
echo "ok"
