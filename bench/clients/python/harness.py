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


def measure(client, args, lock, unlock):
    """Times args.cycles rounds of lock() then unlock() after args.warmup
    untimed ones, and prints the figures. lock() returns what unlock() takes,
    or raises when not acquired."""
    for _ in range(args.warmup):
        try:
            unlock(lock())
        except Exception:  # warming up: failures are not counted
            pass
    out = {"client": client, "mode": "cycle", "n": len(args.nodes), "keys": args.keys,
           "threads": 1, "ok": 0, "failed": 0, "lock_ns": [], "cycle_ns": []}
    clock = time.perf_counter_ns
    u0, s0 = _cpu_us()
    w0 = clock()
    for _ in range(args.cycles):
        try:
            t0 = clock()
            held = lock()
            t1 = clock()
            unlock(held)
            t2 = clock()
        except Exception:  # a failed cycle is counted, not timed
            out["failed"] += 1
            continue
        out["ok"] += 1
        out["lock_ns"].append(t1 - t0)
        out["cycle_ns"].append(t2 - t0)
    out["wall_s"] = (clock() - w0) / 1e9
    u1, s1 = _cpu_us()
    out["cpu_user_us"], out["cpu_sys_us"] = u1 - u0, s1 - s0
    print(json.dumps(out))
