"""Many kept locks held by one Python client (the bench scenario "kept"):
redlock.Redlock (the C library's thread renews them) or, with --asyncio,
redlock.asyncio (its renewer on the loop). Takes --locks kept locks with
--lease ms, holds them --seconds, releases them, and prints one JSON object
as bench/c/kept.c does: lost locks, memory per lock, sockets, CPU while
only holding (the first half of the hold, untouched), and how late any
renewal came (the second half, from each lock's validity)."""

import argparse
import asyncio
import json
import os
import resource
import time


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def sockets() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


def cpu_s() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


class Sampler:
    def __init__(self, lease_ms: int) -> None:
        self.lease_ms = lease_ms
        self.drift = int(lease_ms * 0.01) + 2
        self.worst_age = 0.0
        self.min_validity = float("inf")
        self.max_sockets = 0

    def sample(self, locks) -> None:
        for lock in locks:
            v = lock.validity * 1000
            self.worst_age = max(self.worst_age, self.lease_ms - self.drift - v)
            self.min_validity = min(self.min_validity, v)
        self.max_sockets = max(self.max_sockets, sockets())


def result(args, name, n_nodes, lost, acquire_s, release_s, rss0, rss1, cpu, held_s, s):
    period_ms = args.lease / 3 - args.lease / 24
    renewals = args.locks * held_s * 1000 / period_ms
    return {"client": name, "locks": args.locks, "nodes": n_nodes, "lease_ms": args.lease,
            "held_s": args.seconds, "lost": lost, "acquire_s": round(acquire_s, 1),
            "release_s": round(release_s, 1), "bytes_per_lock": round((rss1 - rss0) / args.locks),
            "max_sockets": s.max_sockets, "cpu_ms_per_s": round(cpu * 1000 / held_s, 1),
            "cpu_ms_per_1000_renewals": round(cpu * 1000 / (renewals / 1000), 2),
            "worst_renewal_lag_ms": round(s.worst_age - args.lease / 3),
            "min_validity_ms": round(s.min_validity)}


def run_sync(args, nodes):
    import redlock
    with redlock.Redlock(nodes, key_prefix=args.prefix + ":",
                         watchdog_lease_ms=args.lease) as client:
        rss0 = rss_bytes()
        t0 = time.monotonic()
        locks = [client.get_lock(str(i)) for i in range(args.locks)]
        for lock in locks:
            if not lock.try_lock(wait=1.0):
                raise SystemExit("kept: a lock was not acquired")
        acquire_s = time.monotonic() - t0
        rss1 = rss_bytes()
        s = Sampler(args.lease)
        cpu0, start = cpu_s(), time.monotonic()
        while time.monotonic() - start < args.seconds / 2:
            time.sleep(0.02)
        held_s, cpu = time.monotonic() - start, cpu_s() - cpu0
        start = time.monotonic()
        while time.monotonic() - start < args.seconds / 2:
            time.sleep(0.1)
            s.sample(locks)
        lost = sum(lock.lost for lock in locks)
        t0 = time.monotonic()
        for lock in locks:
            try:
                lock.unlock()
            except redlock.LockError:
                pass
        return result(args, "ours-python", len(nodes), lost, acquire_s,
                      time.monotonic() - t0, rss0, rss1, cpu, held_s, s)


async def run_asyncio(args, nodes):
    import redlock
    import redlock.asyncio as aredlock
    async with aredlock.Redlock(nodes, key_prefix=args.prefix + ":",
                                watchdog_lease_ms=args.lease) as client:
        rss0 = rss_bytes()
        t0 = time.monotonic()
        locks = [client.get_lock(str(i)) for i in range(args.locks)]
        for lock in locks:
            if not await lock.try_lock(wait=1.0):
                raise SystemExit("kept: a lock was not acquired")
        acquire_s = time.monotonic() - t0
        rss1 = rss_bytes()
        s = Sampler(args.lease)
        cpu0, start = cpu_s(), time.monotonic()
        while time.monotonic() - start < args.seconds / 2:
            await asyncio.sleep(0.02)
        held_s, cpu = time.monotonic() - start, cpu_s() - cpu0
        start = time.monotonic()
        while time.monotonic() - start < args.seconds / 2:
            await asyncio.sleep(0.1)
            s.sample(locks)
        lost = sum(lock.lost for lock in locks)
        t0 = time.monotonic()
        for lock in locks:
            try:
                await lock.unlock()
            except redlock.LockError:
                pass
        return result(args, "ours-python-asyncio", len(nodes), lost, acquire_s,
                      time.monotonic() - t0, rss0, rss1, cpu, held_s, s)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", required=True)
    p.add_argument("--locks", type=int, default=10000)
    p.add_argument("--lease", type=int, default=30000)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--prefix", default="bench:kept")
    p.add_argument("--asyncio", action="store_true")
    args = p.parse_args()
    nodes = args.nodes.split(",")
    if args.asyncio:
        out = asyncio.run(run_asyncio(args, nodes))
    else:
        out = run_sync(args, nodes)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
