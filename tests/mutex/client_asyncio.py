"""A contender of the mutual-exclusion run on asyncio (redlock.asyncio).

    python3 client_asyncio.py HOLDER OUT NODES COUNTER RESOURCES OPS LEASE_MS WAIT_MS KIND PERMITS
                              [OPTIONS [UNTIL_MS]]

The same arguments and the same JSON lines as client.c; the counter is read
and written over an asyncio stream, so nothing here blocks the loop."""

import asyncio
import json
import random
import re
import sys
import time

from client import READ_SHARE, THINK_S, extras, log_events, record_error

import redlock
import redlock.asyncio


class Counter:
    """GET and SET on the counter server, in plain RESP, over a stream."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer

    async def _call(self, *args: str) -> bytes:
        parts = [f"*{len(args)}\r\n".encode()]
        for arg in args:
            data = arg.encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self._writer.write(b"".join(parts))
        line = await self._reader.readline()
        if line.startswith(b"$") and line != b"$-1\r\n":
            return (await self._reader.readline())[:-2]
        if line.startswith(b"-"):
            raise RuntimeError(line.decode().strip())
        return line.strip()

    async def bump(self, resource: str) -> None:
        value = await self._call("GET", f"counter:{resource}")
        await asyncio.sleep(0.002)
        await self._call("SET", f"counter:{resource}", str(int(value or b"0") + 1))

    async def peek(self, resource: str) -> None:
        """A reader's look: GET, then the writer's pause."""
        await self._call("GET", f"counter:{resource}")
        await asyncio.sleep(0.002)

    async def probe(self, resource: str) -> int:
        """The concurrency probe under a permit: INCR, a pause, DECR; what
        INCR returned (how many were inside)."""
        inside = int((await self._call("INCR", f"inside:{resource}"))[1:])
        await asyncio.sleep(0.002)
        await self._call("DECR", f"inside:{resource}")
        return inside



def split_nodes(nodes: str) -> list:
    """The node URIs of one string: a comma followed by "scheme://" starts
    the next one (a Sentinel URI has commas of its own)."""
    return [uri.strip() for uri in re.split(r",(?=\s*[A-Za-z][A-Za-z0-9+.-]*://)", nodes)]

async def section(counter: Counter, record: dict, kind: str) -> bool:
    """client.py's section(), awaited."""
    resource = record["resource"]
    reader = record.get("mode") == "read"
    if kind == "semaphore":
        record["inside"] = None   # stays so when INCR failed
    try:
        if kind == "semaphore":
            record["inside"] = await counter.probe(resource)
        elif reader:
            await counter.peek(resource)
        else:
            await counter.bump(resource)
        done = True
    except (OSError, RuntimeError, ValueError):
        done = False
    record["read" if reader else "wrote"] = done
    return done


async def attempt(client: redlock.asyncio.Redlock, counter: Counter, record: dict, kind: str,
                  permits: int, lease_ms: int, wait_ms: int) -> int:
    """client.py's attempt(), awaited: one rw or semaphore attempt into
    record; 1 when the counter server failed."""
    resource = record["resource"]
    lease, wait = lease_ms / 1000, wait_ms / 1000
    asked = time.time_ns()
    try:
        if kind == "rw":
            rw = client.get_read_write_lock(resource)
            held = rw.read_lock() if record["mode"] == "read" else rw.write_lock()
            if not await held.try_lock(wait=wait, lease=lease):
                held = None
        else:
            held = await client.get_semaphore(resource, permits).try_acquire(wait=wait,
                                                                             lease=lease)
    except redlock.LockError as error:
        record_error(record, asked, error)
        return 0
    if held is None:
        record.update(start_ns=asked, end_ns=time.time_ns(), validity_ms=0, ok=False,
                      result="locked")
        return 0
    record["start_ns"] = time.time_ns()
    record["validity_ms"] = int(held.validity * 1000)
    done = await section(counter, record, kind)
    record["end_ns"] = time.time_ns()
    record.update(ok=True, result="ok", unlock="ok")
    try:
        await held.release()
    except redlock.LockError as error:
        record_error(record, asked, error)
    return 0 if done else 1


async def main() -> int:
    (holder, out_path, nodes, counter_port, resources, ops, lease_ms, wait_ms, kind,
     permits) = sys.argv[1:11]
    options, until_ns = extras(sys.argv[11:])
    fencing = options.get("fencing") == "1"
    log_events()
    counter = Counter(*await asyncio.open_connection("127.0.0.1", int(counter_port)))
    failures = 0
    async with redlock.asyncio.Redlock(split_nodes(nodes), node_timeout_ms=100,
                                       max_lease_ms=int(lease_ms), **options) as client:
        with open(out_path, "a") as out:
            for op in range(int(ops)):
                if op:
                    await asyncio.sleep(THINK_S)
                if until_ns and time.time_ns() >= until_ns:
                    break
                resource = f"r{random.randrange(int(resources))}"
                record = {"holder": holder, "lang": "asyncio", "resource": resource}
                if kind != "lock":
                    if kind == "rw":
                        record["mode"] = "read" if random.random() < READ_SHARE else "write"
                    failures += await attempt(client, counter, record, kind, int(permits),
                                              int(lease_ms), int(wait_ms))
                    out.write(json.dumps(record) + "\n")
                    continue
                asked = time.time_ns()
                try:
                    async with client.lock(resource, lease=int(lease_ms) / 1000,
                                           wait=int(wait_ms) / 1000) as lock:
                        record["start_ns"] = time.time_ns()
                        record["validity_ms"] = int(lock.validity * 1000)
                        if fencing:
                            record["fence"] = lock.fence
                        try:
                            await counter.bump(resource)
                            record["wrote"] = True
                        except (OSError, RuntimeError):
                            record["wrote"] = False
                            failures += 1
                        record["end_ns"] = time.time_ns()
                        record.update(ok=True, result="ok", unlock="ok")
                except redlock.LockError as error:
                    record_error(record, asked, error)
                out.write(json.dumps(record) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
