"""A contender of the mutual-exclusion run, in Python (the redlock binding).

    python3 client.py HOLDER OUT NODES COUNTER RESOURCES OPS LEASE_MS WAIT_MS

The same arguments and the same JSON lines as client.c."""

import json
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


# The rest between two attempts, as in client.c.
THINK_S = 0.02

CODES = {redlock.LockNotAcquired: "locked", redlock.NoQuorum: "noquorum",
         redlock.LockExpired: "expired", redlock.RedisError: "redis",
         redlock.LockNotHeld: "notheld"}



def split_nodes(nodes: str) -> list:
    """The node URIs of one string: a comma followed by "scheme://" starts
    the next one (a Sentinel URI has commas of its own)."""
    return [uri.strip() for uri in re.split(r",(?=\s*[A-Za-z][A-Za-z0-9+.-]*://)", nodes)]

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


def main() -> int:
    holder, out_path, nodes, counter_port, resources, ops, lease_ms, wait_ms = sys.argv[1:]
    client = redlock.Redlock(split_nodes(nodes), node_timeout_ms=100, max_lease_ms=int(lease_ms))
    counter = Counter(int(counter_port))
    failures = 0
    with open(out_path, "a") as out:
        for op in range(int(ops)):
            if op:
                time.sleep(THINK_S)
            resource = f"r{random.randrange(int(resources))}"
            record = {"holder": holder, "lang": "python", "resource": resource}
            asked = time.time_ns()
            try:
                with client.lock(resource, lease=int(lease_ms) / 1000,
                                 wait=int(wait_ms) / 1000) as lock:
                    record["start_ns"] = time.time_ns()
                    record["validity_ms"] = int(lock.validity * 1000)
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
