"""What the Python bench clients share: the bench command line, the timed
loop, process CPU time and the JSON figures (bench/README.md)."""

import argparse
import json
import resource
import time


def parse_args(extra=None):
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", required=True, help="comma-separated node URIs")
    p.add_argument("--cycles", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--lease", type=int, default=10000, help="ms")
    p.add_argument("--keys", type=int, default=1)
    p.add_argument("--prefix", default="bench")
    if extra:
        extra(p)
    args = p.parse_args()
    args.nodes = args.nodes.split(",")
    args.resources = [f"{args.prefix}:{i}" for i in range(args.keys)]
    return args


def _cpu_us():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return round(ru.ru_utime * 1e6), round(ru.ru_stime * 1e6)


class _Figures:
    """The figures of one timed loop, printed as JSON by done()."""

    def __init__(self, client, args):
        self.out = {"client": client, "mode": "cycle", "n": len(args.nodes), "keys": args.keys,
                    "threads": 1, "ok": 0, "failed": 0, "lock_ns": [], "cycle_ns": []}
        self.u0, self.s0 = _cpu_us()
        self.w0 = time.perf_counter_ns()

    def cycle(self, t0, t1, t2):
        self.out["ok"] += 1
        self.out["lock_ns"].append(t1 - t0)
        self.out["cycle_ns"].append(t2 - t0)

    def failed(self):  # a failed cycle is counted, not timed
        self.out["failed"] += 1

    def done(self):
        self.out["wall_s"] = (time.perf_counter_ns() - self.w0) / 1e9
        u1, s1 = _cpu_us()
        self.out["cpu_user_us"], self.out["cpu_sys_us"] = u1 - self.u0, s1 - self.s0
        print(json.dumps(self.out))


def measure(client, args, lock, unlock):
    """Times args.cycles rounds of lock() then unlock() after args.warmup
    untimed ones, and prints the figures. lock() returns what unlock() takes,
    or raises when not acquired."""
    for _ in range(args.warmup):
        try:
            unlock(lock())
        except Exception:  # warming up: failures are not counted
            pass
    clock = time.perf_counter_ns
    figures = _Figures(client, args)
    for _ in range(args.cycles):
        try:
            t0 = clock()
            held = lock()
            t1 = clock()
            unlock(held)
            figures.cycle(t0, t1, clock())
        except Exception:
            figures.failed()
    figures.done()


async def measure_async(client, args, lock, unlock):
    """measure() for coroutine functions, awaited on the running loop."""
    for _ in range(args.warmup):
        try:
            await unlock(await lock())
        except Exception:  # warming up: failures are not counted
            pass
    clock = time.perf_counter_ns
    figures = _Figures(client, args)
    for _ in range(args.cycles):
        try:
            t0 = clock()
            held = await lock()
            t1 = clock()
            await unlock(held)
            figures.cycle(t0, t1, clock())
        except Exception:
            figures.failed()
    figures.done()


def run_on_loop(run):
    """Runs the coroutine function run(args) with the bench's arguments and
    --loop: asyncio's own loop, or uvloop."""
    args = parse_args(
        lambda p: p.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio"))
    if args.loop == "uvloop":
        import uvloop

        uvloop.run(run(args))
    else:
        import asyncio

        asyncio.run(run(args))
