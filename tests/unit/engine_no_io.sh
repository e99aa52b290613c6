#!/bin/sh
# engine_no_io.sh OBJECTS - the engine (core/engine) does no I/O, reads no
# clock and starts no thread: none of its objects (OBJECTS: the files, as
# arguments or as one ;-separated list) calls a function that would; the
# drivers do that (core/drive). Mutexes and memory are allowed.
set -eu
forbidden='accept|clock|clock_gettime|close|connect|dlopen|epoll_[a-z_]+|eventfd|fork|getaddrinfo|getrandom|gettimeofday|nanosleep|open|open64|pipe|pipe2|poll|ppoll|pthread_create|read|recv|recvfrom|select|send|sendto|sleep|socket|time|usleep|write'
objects=$(printf '%s\n' "$@" | tr ';' '\n' | grep -v '^$' || true)
[ -n "$objects" ] || { echo "FAIL: no object files given" >&2; exit 2; }
count=0
found=
for o in $objects; do
  undefined=$(nm -u "$o")   # a missing or unreadable file fails here
  count=$((count + 1))
  hits=$(printf '%s\n' "$undefined" | awk 'NF {print $NF}' | sed 's/@.*//; s/^__//; s/_chk$//' |
         grep -Ex "$forbidden" || true)
  [ -z "$hits" ] || found="$found ${o##*/}:$(echo $hits | tr ' ' ',')"
done
if [ -n "$found" ]; then
  echo "FAIL: the engine calls I/O, clock or thread functions:$found" >&2
  exit 1
fi
echo "the engine's $count objects call no I/O, clock or thread function"
