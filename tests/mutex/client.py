"""A contender of the mutual-exclusion run, in Python (the redlock binding).

    python3 client.py HOLDER OUT NODES COUNTER RESOURCES OPS LEASE_MS WAIT_MS KIND PERMITS
                      [OPTIONS [UNTIL_MS]]

The same arguments and the same JSON lines as client.c: KIND lock, rw or
semaphore; OPTIONS the library's options, NAME=VALUE,... ("-" for none;
fencing=1 records each section's fence), UNTIL_MS (above 0) the wall-clock
deadline in ms after which no attempt starts."""

import json
import logging
import re
import random
import socket
import sys
import time

import redlock


class Counter:
    """GET and SET on the counter server, in plain RESP."""

    def __init__(self, port: int) -> None:
        self._sock = socket.create_connection(("127.0.0.1", port))
        self._file = self._sock.makefile("rb")

    def _call(self, *args: str) -> bytes:
        parts = [f"*{len(args)}\r\n".encode()]
        for arg in args:
            data = arg.encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self._sock.sendall(b"".join(parts))
        line = self._file.readline()
        if line == b"$-1\r\n":
            return b""   # no such key yet
        if line.startswith(b"$"):
            return self._file.readline()[:-2]
        if line.startswith(b"-"):
            raise RuntimeError(line.decode().strip())
        return line.strip()

    def bump(self, resource: str) -> None:
        value = self._call("GET", f"counter:{resource}")
        time.sleep(0.002)
        self._call("SET", f"counter:{resource}", str(int(value or b"0") + 1))

    def peek(self, resource: str) -> None:
        """A reader's look: GET, then the writer's pause."""
        self._call("GET", f"counter:{resource}")
        time.sleep(0.002)

    def probe(self, resource: str) -> int:
        """The concurrency probe under a permit: INCR, a pause, DECR; what
        INCR returned (how many were inside)."""
        inside = int(self._call("INCR", f"inside:{resource}")[1:])
        time.sleep(0.002)
        self._call("DECR", f"inside:{resource}")
        return inside


# The rest between two attempts, and the share of readers in a rw run, as
# in client.c.
THINK_S = 0.02
READ_SHARE = 0.6

CODES = {redlock.LockNotAcquired: "locked", redlock.NoQuorum: "noquorum",
         redlock.LockExpired: "expired", redlock.RedisError: "redis",
         redlock.LockNotHeld: "notheld"}



def split_nodes(nodes: str) -> list:
    """The node URIs of one string: a comma followed by "scheme://" starts
    the next one (a Sentinel URI has commas of its own)."""
    return [uri.strip() for uri in re.split(r",(?=\s*[A-Za-z][A-Za-z0-9+.-]*://)", nodes)]

def log_events() -> None:
    """The library's events of level info and above to stderr, with the
    time to the ms (to line them up with the records and the nemesis' log)."""
    logging.basicConfig(level=logging.INFO, datefmt="%H:%M:%S",
                        format="%(asctime)s.%(msecs)03d %(message)s")


def extras(args: list) -> tuple:
    """OPTIONS and UNTIL_MS, the optional arguments after PERMITS: the
    library's options (a dict of text), and the deadline in ns (0: none)."""
    text = args[0] if args and args[0] != "-" else ""
    options = dict(pair.split("=", 1) for pair in text.split(",") if pair)
    until_ms = int(args[1]) if len(args) > 1 else 0
    return options, until_ms * 1_000_000


def code_of(error: redlock.LockError) -> str:
    return CODES.get(type(error), "error")


def record_error(record: dict, asked: int, error: redlock.LockError) -> None:
    """A LockError out of `with lock`: raised by the release once the section
    ran, else the acquisition failed."""
    if "start_ns" in record:
        record["unlock"] = code_of(error)
    else:
        record.update(start_ns=asked, end_ns=time.time_ns(), validity_ms=0,
                      ok=False, result=code_of(error))


def section(counter: Counter, record: dict, kind: str) -> bool:
    """The work under a rw lock or a permit, as client.c's: a writer bumps
    the counter, a reader reads it, a permit's holder probes; what it did
    goes into record. False when the counter server failed."""
    resource = record["resource"]
    reader = record.get("mode") == "read"
    if kind == "semaphore":
        record["inside"] = None   # stays so when INCR failed
    try:
        if kind == "semaphore":
            record["inside"] = counter.probe(resource)
        elif reader:
            counter.peek(resource)
        else:
            counter.bump(resource)
        done = True
    except (OSError, RuntimeError, ValueError):
        done = False
    record["read" if reader else "wrote"] = done
    return done


def attempt(client: redlock.Redlock, counter: Counter, record: dict, kind: str,
            permits: int, lease_ms: int, wait_ms: int) -> int:
    """One rw or semaphore attempt into record (a lock's is in main());
    1 when the counter server failed."""
    resource = record["resource"]
    lease, wait = lease_ms / 1000, wait_ms / 1000
    asked = time.time_ns()
    try:
        if kind == "rw":
            rw = client.get_read_write_lock(resource)
            held = rw.read_lock() if record["mode"] == "read" else rw.write_lock()
            if not held.try_lock(wait=wait, lease=lease):
                held = None
        else:
            held = client.get_semaphore(resource, permits).try_acquire(wait=wait, lease=lease)
    except redlock.LockError as error:
        record_error(record, asked, error)
        return 0
    if held is None:
        record.update(start_ns=asked, end_ns=time.time_ns(), validity_ms=0, ok=False,
                      result="locked")
        return 0
    record["start_ns"] = time.time_ns()
    record["validity_ms"] = int(held.validity * 1000)
    done = section(counter, record, kind)
    record["end_ns"] = time.time_ns()
    record.update(ok=True, result="ok", unlock="ok")
    try:
        held.release()
    except redlock.LockError as error:
        record_error(record, asked, error)
    return 0 if done else 1


def main() -> int:
    (holder, out_path, nodes, counter_port, resources, ops, lease_ms, wait_ms, kind,
     permits) = sys.argv[1:11]
    options, until_ns = extras(sys.argv[11:])
    fencing = options.get("fencing") == "1"
    log_events()
    client = redlock.Redlock(split_nodes(nodes), node_timeout_ms=100, max_lease_ms=int(lease_ms),
                             **options)
    counter = Counter(int(counter_port))
    failures = 0
    with open(out_path, "a") as out:
        for op in range(int(ops)):
            if op:
                time.sleep(THINK_S)
            if until_ns and time.time_ns() >= until_ns:
                break
            resource = f"r{random.randrange(int(resources))}"
            record = {"holder": holder, "lang": "python", "resource": resource}
            if kind != "lock":
                if kind == "rw":
                    record["mode"] = "read" if random.random() < READ_SHARE else "write"
                failures += attempt(client, counter, record, kind, int(permits),
                                    int(lease_ms), int(wait_ms))
                out.write(json.dumps(record) + "\n")
                continue
            asked = time.time_ns()
            try:
                with client.lock(resource, lease=int(lease_ms) / 1000,
                                 wait=int(wait_ms) / 1000) as lock:
                    record["start_ns"] = time.time_ns()
                    record["validity_ms"] = int(lock.validity * 1000)
                    if fencing:
                        record["fence"] = lock.fence
                    try:
                        counter.bump(resource)
                        record["wrote"] = True
                    except (OSError, RuntimeError):
                        record["wrote"] = False
                        failures += 1
                    record["end_ns"] = time.time_ns()
                    record.update(ok=True, result="ok", unlock="ok")
            except redlock.LockError as error:
                record_error(record, asked, error)
            out.write(json.dumps(record) + "\n")
    client.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
