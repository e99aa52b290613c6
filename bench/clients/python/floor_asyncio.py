"""The least an asyncio client can wait for one lock+unlock cycle on the
running loop (asyncio's own, or uvloop with --loop uvloop): what
bench/c/floor.c does, with the loop's transports. One connection per node;
each cycle makes a fresh token, writes SET key token NX PX lease to all N
nodes and ends the phase when N/2+1 replies are in, then the
compare-and-delete script (EVALSHA) the same way. Replies after their phase
ended are read and dropped. No deadlines, retries or errors beyond
counting: a lower bound for redlock.asyncio, not a client."""

import asyncio
import os
from urllib.parse import urlsplit

import harness

RELEASE = ("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
           "else return 0 end")


def command(*args):
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(parts)


class Node(asyncio.Protocol):
    """Counts the one-line replies (+OK, $-1, :1, :0) of the phase under way."""

    def __init__(self, phase):
        self.phase = phase
        self.owed = 0          # replies still to come on this connection
        self.transport = None
        self.buf = b""

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n")
            if end < 0:
                return
            line, self.buf = self.buf[:end], self.buf[end + 2:]
            if line.startswith(b"$") and line != b"$-1":
                # A bulk string (SCRIPT LOAD's sha): its body is the next line.
                end = self.buf.find(b"\r\n")
                self.phase.sha = self.buf[:end]
                self.buf = self.buf[end + 2:]
            self.owed -= 1
            if self.owed == 0:
                self.phase.answered(line)


class Phase:
    """One command to every node, done at a quorum of replies."""

    def __init__(self, quorum):
        self.quorum = quorum
        self.count = 0
        self.done = None
        self.sha = b""

    def answered(self, line):
        if self.done is not None and line in (b"+OK", b":1"):
            self.count += 1
            if self.count == self.quorum:
                self.done.set_result(True)

    async def send(self, nodes, payload):
        self.count = 0
        self.done = asyncio.get_running_loop().create_future()
        for n in nodes:
            n.owed += 1
            n.transport.write(payload)
        await self.done
        self.done = None


async def run(args):
    loop = asyncio.get_running_loop()
    phase = Phase(len(args.nodes) // 2 + 1)
    nodes = []
    for uri in args.nodes:
        u = urlsplit(uri)
        _, node = await loop.create_connection(lambda: Node(phase), u.hostname, u.port or 6379)
        node.owed = 1
        node.transport.write(command("SCRIPT", "LOAD", RELEASE))
        nodes.append(node)
    while any(n.owed for n in nodes):
        await asyncio.sleep(0.001)
    sha, key, lease = phase.sha, args.resources[0], args.lease

    async def acquire():
        token = os.urandom(10).hex()
        await phase.send(nodes, command("SET", key, token, "NX", "PX", lease))
        return token

    async def release(token):
        await phase.send(nodes, command("EVALSHA", sha, 1, key, token))

    await harness.measure_async(f"floor-python-{args.loop}", args, acquire, release)
    for n in nodes:
        n.transport.close()


if __name__ == "__main__":
    harness.run_on_loop(run)
