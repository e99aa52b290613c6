"""Turns the figures of bench.py's rounds into bench/results/REPORT.md,
summary.json and the PNG charts. Every figure is the median of the rounds;
every ratio is taken within a round, then the median of those is shown."""

import datetime
import json
import os
import platform
import re
import statistics
import subprocess

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

BENCH = os.path.dirname(os.path.abspath(__file__))
PEERS = ("redisson-redlock", "redsync", "redsync-failfast", "node-redlock", "pottery")
BINDINGS = ("ours-python", "ours-java", "ours-lua", "ours-php")
# Each binding's target against C (issue 37: PHP within 1.3x).
BINDING_LIMIT = {"ours-php": 1.3}
SCENARIOS = ("latency", "multi", "straggler", "stalled", "threads", "handoff", "fairness",
             "fencing", "sentinel", "cluster", "readwrite")
# Event-loop drivers, each against the blocking binding of its language.
EVENT_LOOP = (("ours-python-asyncio", "ours-python"), ("ours-python-uvloop", "ours-python"),
              ("ours-openresty", "ours-lua"), ("ours-php-swoole", "ours-php"))
# The comparisons bench.py runs in adjacent pairs, and the targets read
# from them: (client, against, N).
COMPARED = (tuple(("ours-c", "floor", n) for n in (1, 3, 5, 7, 9))
            + tuple((b, "ours-c", 5) for b in BINDINGS)
            + tuple((a, b, 5) for a, b in EVENT_LOOP))
# Each event-loop driver's floor: the least a client on that loop can do.
LOOP_FLOOR = {"ours-python-asyncio": "floor-python-asyncio",
              "ours-python-uvloop": "floor-python-uvloop",
              "ours-openresty": "floor-openresty-pooled"}


def med(figs, key):
    """The median over rounds of one figure, or None."""
    xs = [f[key] for f in figs or [] if key in f]
    return statistics.median(xs) if xs else None


def ratio(a_figs, b_figs, key):
    """a/b of one figure: per round when both ran every round, else of the medians."""
    if a_figs and b_figs and len(a_figs) == len(b_figs):
        return statistics.median(a[key] / b[key] for a, b in zip(a_figs, b_figs))
    a, b = med(a_figs, key), med(b_figs, key)
    return a / b if a is not None and b else None


def fmt(x, digits=1):
    return "n/a" if x is None else f"{x:,.{digits}f}"


def fmt_ratio(x):
    return "n/a" if x is None else f"{x:.2f}x"


def table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def command_line(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "not installed"


def manifest_version(path, pattern):
    try:
        with open(os.path.join(BENCH, path)) as f:
            m = re.search(pattern, f.read(), re.S)
        return m.group(1) if m else "?"
    except OSError:
        return "?"


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_gib = int(f.readline().split()[1]) / 2**20
    return [
        ("machine", f"{platform.system()} {platform.release()} {platform.machine()}, {cpu}, "
                    f"{os.cpu_count()} CPUs, {mem_gib:.0f} GiB"),
        ("load average at the end", " ".join(f"{x:.2f}" for x in os.getloadavg())),
        ("redis-server", command_line(["redis-server", "--version"])),
        ("hiredis", command_line(["pkg-config", "--modversion", "hiredis"])),
        ("C compiler", command_line(["cc", "--version"])),
        ("Python", platform.python_version()),
        ("Java", command_line(["java", "-version"])),
        ("Go", command_line(["go", "version"])),
        ("Node", command_line(["node", "--version"])),
        ("LuaJIT", command_line(["luajit", "-v"])),
        ("Redisson", manifest_version("peers/redisson/pom.xml",
                                      r"<artifactId>redisson</artifactId>\s*<version>([^<]+)")),
        ("redsync", manifest_version("peers/redsync/go.mod", r"go-redsync/redsync/v4 (v[\d.]+)")),
        ("node-redlock", manifest_version("peers/node-redlock/package.json",
                                          r'"redlock": "([^"]+)"')),
        ("pottery", manifest_version("peers/pottery/requirements.txt", r"pottery==([\d.]+)")),
        ("Toxiproxy", manifest_version("setup.sh", r"TOXIPROXY_VERSION=(v[\d.]+)")),
    ]


def clients_in(figs, suffix=""):
    """Client names of a scenario, in the order they ran."""
    seen = []
    for key in figs:
        name = key.split("|")[0]
        if name not in seen and key.endswith(suffix):
            seen.append(name)
    return seen


def section_headline(lat):
    rows = []
    floor = lat.get("floor|5")
    for name in clients_in(lat, "|5"):
        figs = lat[f"{name}|5"]
        rows.append([name, fmt(med(figs, "lock_median_us")), fmt(med(figs, "cycle_median_us")),
                     fmt(med(figs, "cycle_p99_us")), fmt(med(figs, "cpu_us")),
                     fmt(med(figs, "user_us")), fmt_ratio(ratio(figs, floor, "cycle_median_us"))])
    return ("## Lock+unlock on 5 nodes (headline)\n\n"
            "Median over rounds; latency in microseconds; CPU is the client process's user+sys "
            "time per cycle.\n\n"
            + table(["client", "lock median", "cycle median", "cycle p99", "CPU/cycle",
                     "user CPU/cycle", "cycle vs floor"], rows))


def section_latency(lat):
    names = clients_in(lat)
    ns = sorted({int(k.split("|")[1]) for k in lat})
    rows = []
    for name in names:
        cells = []
        for n in ns:
            figs = lat.get(f"{name}|{n}")
            cells.append(f"{fmt(med(figs, 'cycle_median_us'))} ({fmt(med(figs, 'cycle_p99_us'))})"
                         if figs else "n/a")
        rows.append([name] + cells)
    ratio_rows = []
    for name in names:
        if name.startswith("floor"):
            continue
        ratio_rows.append([name] + [fmt_ratio(ratio(lat.get(f"{name}|{n}"), lat.get(f"floor|{n}"),
                                                     "cycle_median_us")) for n in ns])
    return ("## Latency of lock+unlock against N\n\n"
            "Cycle median (p99) in microseconds, then each client's median against the floor's.\n\n"
            + table(["client"] + [f"N={n}" for n in ns], rows) + "\n"
            + table(["vs floor"] + [f"N={n}" for n in ns], ratio_rows))


def section_pairs(pairs):
    rows = []
    for name, other, n in COMPARED:
        ours, back = pairs.get(f"{name}@{other}|{n}"), pairs.get(f"{other}@{name}|{n}")
        if not ours or not back:
            continue
        each = ([o["cycle_median_us"] / f["cycle_median_us"] for o, f in zip(ours, back)]
                if len(ours) == len(back) else [])
        rows.append([name, other, f"N={n}", str(len(each)), fmt(med(back, "cycle_median_us")),
                     fmt(med(ours, "cycle_median_us")),
                     fmt_ratio(ratio(ours, back, "cycle_median_us")),
                     fmt_ratio(min(each)) if each else "n/a",
                     fmt_ratio(max(each)) if each else "n/a"])
    return ("## Comparisons in pairs\n\n"
            "The two clients of a comparison run one after the other, in pairs whose order "
            "alternates, several pairs a round: a pair's two runs see the machine alike, where "
            "runs far apart may not (on this shared machine a cycle's median moves between modes "
            "from run to run). Ours against the floor for every N; each binding against C and "
            "each event-loop driver against its blocking binding at N=5. Cycle medians in "
            "microseconds; the ratio is the median of the pairs' ratios, which the targets use; "
            "then the lowest and highest pair.\n\n"
            + table(["client", "against", "nodes", "pairs", "against's median", "client's median",
                     "ratio", "lowest pair", "highest pair"], rows))


def section_cpu(lat):
    rows = []
    floor = lat.get("floor|5")
    for name in clients_in(lat, "|5"):
        figs = lat[f"{name}|5"]
        rows.append([name, fmt(med(figs, "user_us")), fmt(med(figs, "sys_us")),
                     fmt(med(figs, "cpu_us")), fmt_ratio(ratio(figs, floor, "cpu_us"))])
    return ("## Client CPU per cycle (N=5)\n\n"
            "Microseconds of CPU of the client process per lock+unlock cycle, every thread "
            "included (JVM: JIT and GC too, after the warm-up).\n\n"
            + table(["client", "user", "sys", "user+sys", "vs floor"], rows))


def section_multi(multi):
    names = clients_in(multi)
    ks = sorted({int(k.split("|")[1]) for k in multi})
    rows = [[name] + [fmt(med(multi.get(f"{name}|{k}"), "cycle_median_us")) for k in ks]
            for name in names]
    return ("## Multi-lock over K resources (N=5)\n\n"
            "Cycle median in microseconds. ours: one lock_multi (one script per node); "
            "node-redlock: one lock over K resources (one script per node); Redisson: "
            "RedissonMultiLock over the RLocks of the K resources on all 5 nodes, taken one "
            "after another (every one required).\n\n"
            + table(["client"] + [f"K={k}" for k in ks], rows))


def ms(figs, key):
    x = med(figs, key)
    return None if x is None else x / 1000


def section_straggler(strag, proxied):
    rows = []
    for name in strag:
        base = proxied.get(name)
        rows.append([name, fmt(ms(base, "lock_median_us"), 2), fmt(ms(strag[name], "lock_median_us"), 2),
                     fmt(ms(strag[name], "lock_p99_us"), 2),
                     fmt_ratio(ratio(strag[name], base, "lock_median_us"))])
    return ("## A straggler: one of 5 nodes answers late\n\n"
            "Node 5 is reached through Toxiproxy. Acquisition (lock) latency in milliseconds: "
            "without the fault (the proxy passes replies on at once), with every reply of node 5 "
            "delayed by 50 ms, and the ratio of the medians.\n\n"
            + table(["client", "lock median, no fault", "lock median, straggler",
                     "lock p99, straggler", "straggler vs no fault"], rows))


def section_threads(threads, contend, floor):
    base = threads.get("1")

    def cores(figures):
        return fmt(med(figures, "nodes_cores"), 2)

    rows = [[t, fmt(med(threads[t], "per_s"), 0), fmt_ratio(ratio(threads[t], base, "per_s")),
             fmt(med(threads[t], "cpu_us")), f"{med(threads[t], 'machine_busy'):.0%}",
             cores(threads[t])]
            for t in threads]
    rows += [[f"{t} floor clients", fmt(med(floor[t], "per_s"), 0),
              fmt_ratio(ratio(floor[t], base, "per_s")), fmt(med(floor[t], "cpu_us")),
              f"{med(floor[t], 'machine_busy'):.0%}", cores(floor[t])] for t in floor]
    crows = [[t, fmt(med(contend[t], "per_s"), 0), fmt(med(contend[t], "min"), 0),
              fmt(med(contend[t], "max"), 0), fmt(med(contend[t], "jain"), 3)] for t in contend]
    return ("## Throughput: T threads sharing one client (ours, C, N=5)\n\n"
            "Each thread locks and unlocks its own resource for the whole run. The floor's row "
            "runs right after ours of as many threads: that many floor clients (bench/c/floor.c) "
            "in one process, each on its own thread with its own connections and resource, the "
            "most any client could get from these nodes.\n\n"
            + "The last two columns are how busy the whole machine's CPUs were during the run "
            "(the client and the 5 `redis-server` processes share them), and how many CPUs the "
            "5 nodes used between them: where the nodes use what the client leaves of the "
            "machine, the nodes bound the throughput, ours and the floor's alike.\n\n"
            + table(["threads", "acquisitions/s", "vs 1 thread", "client CPU/cycle (us)",
                     "machine CPU busy", "nodes' CPUs"], rows)
            + "\n### Contention: T threads on one resource\n\n"
            "Each thread waits for the resource (woken by its release, else retried after the "
            "library's random pauses of 200 +- 100 ms, the defaults), unlocks at once and asks "
            "again. Acquisitions per second, the least and most one thread got, and Jain's "
            "fairness index (1 = every thread got the same).\n\n"
            + table(["threads", "acquisitions/s", "fewest per thread", "most per thread",
                     "Jain's index"], crows))


def section_handoff(handoff, settings):
    rows = []
    for key, figs in handoff.items():
        name, n = key.split("|")
        rows.append([name, n, fmt(ms(figs, "handoff_median_us"), 2), fmt(ms(figs, "handoff_p99_us"), 2),
                     fmt(med(figs, "ok"), 0), fmt(med(figs, "failed"), 0)])
    return ("## Handoff: from unlock to the waiter's acquisition\n\n"
            "Two clients of one resource in one process, each on its own thread (ours: two "
            "`redlock_ctx`; Redisson: two sets of clients, so the release reaches the waiter "
            "through the nodes): the holder locks, the waiter starts waiting for the lock "
            f"(up to the lease), and {settings['handoff_hold_ms']} ms later the holder "
            "unlocks; the handoff is the time from the unlock call to the waiter's lock "
            f"returning, over {settings['handoff_cycles']} rounds, in milliseconds. Redisson's "
            "RLock is a single master (the first node); RedissonRedLock takes the RLock of "
            "each node.\n\n"
            + table(["client", "nodes", "median (ms)", "p99 (ms)", "handoffs", "failed"], rows))


def section_fairness(fair, settings):
    rows = []
    for key, figs in fair.items():
        name, n = key.split("|")
        rows.append([name, n, fmt(med(figs, "jain"), 3), fmt(med(figs, "ok"), 0),
                     fmt(med(figs, "per_s"), 0), fmt(med(figs, "min"), 0), fmt(med(figs, "max"), 0)])
    return (f"## Fairness: {settings['fair_threads']} threads on one resource, each holding it "
            f"{settings['fair_hold_ms']} ms\n\n"
            f"For {settings['fair_seconds']:g} s the threads contend for one resource: each "
            "waits for it (up to the end of the run), holds it "
            f"{settings['fair_hold_ms']} ms, unlocks and at once asks again. Ours: the threads "
            "share one `redlock_ctx`; Redisson: one set of clients and one lock object (its "
            "locks belong to a thread). Jain's index (sum x)^2 / (n sum x^2) of the "
            "acquisitions per thread x is 1 when every thread got as many; the counts of each "
            "thread are in summary.json.\n\n"
            + table(["client", "nodes", "Jain's index", "acquisitions", "acquisitions/s",
                     "fewest per thread", "most per thread"], rows))


def section_bindings(lat):
    c = lat.get("ours-c|5")
    floors = ("floor-python-asyncio", "floor-python-uvloop", "floor-openresty",
              "floor-openresty-pooled")

    def vs_floor(name):
        floor = LOOP_FLOOR.get(name)
        return (fmt_ratio(ratio(lat.get(f"{name}|5"), lat.get(f"{floor}|5"), "cycle_median_us"))
                + f" ({floor})") if floor and f"{floor}|5" in lat else ""

    rows = [[name, fmt(med(lat.get(f"{name}|5"), "cycle_median_us")),
             fmt_ratio(ratio(lat.get(f"{name}|5"), c, "cycle_median_us")),
             fmt(med(lat.get(f"{name}|5"), "cpu_us")), vs_floor(name)]
            for name in BINDINGS + tuple(e for e, _ in EVENT_LOOP) + floors
            if f"{name}|5" in lat]
    return ("## Binding overhead (N=5)\n\n"
            "The same cycle through each binding, against C. The event-loop drivers are also set "
            "against their loop's floor: `floor-python-*` is `c/floor.c`'s cycle written with the "
            "loop's transports and no library, `floor-openresty` the same over cosockets kept "
            "open and read one after the other, `floor-openresty-pooled` the same with what a "
            "library inside nginx must do (connections from the keepalive pool in each "
            "operation, a light thread per node).\n\n"
            + table(["binding", "cycle median (us)", "vs C", "CPU/cycle (us)",
                     "vs its loop's floor"], rows))


def verdict(x, limit, at_most=True):
    if x is None:
        return "n/a"
    ok = x <= limit if at_most else x >= limit
    return "met" if ok else "missed"


def handoff_targets(res):
    """(target, measured, verdict) for the handoff and fairness targets of the issue."""
    ours = res["handoff"].get("ours-c|5")
    median = ms(ours, "handoff_median_us")
    r = ratio(ours, res["handoff"].get("redisson-rlock|1"), "handoff_median_us")
    jain = med(res["fairness"].get("ours-c|5"), "jain")
    fair = ratio(res["handoff"].get("ours-c fair|5"), ours, "handoff_median_us")
    return [("fair-lock handoff, N=5: within 2x of the plain one", fmt_ratio(fair),
             verdict(fair, 2.0)),
            ("handoff, N=5: median under 2 ms", "n/a" if median is None else f"{median:.2f} ms",
             verdict(median, 2.0)),
            ("handoff, N=5: median at most Redisson RLock's", fmt_ratio(r), verdict(r, 1.0)),
            ("fairness, 16 threads holding 1 ms: Jain's index >= 0.9", fmt(jain, 3),
             verdict(jain, 0.9, at_most=False))]


def section_stalled(stalled):
    rows = []
    for key, label in (("none", "none"), ("one", "one of 5 (node 5)"), ("two", "two of 5 (nodes 4, 5)")):
        for client in ("ours-c", "floor"):
            figs = stalled.get(key if client == "ours-c" else f"floor {key}")
            base = stalled.get("none" if client == "ours-c" else "floor none")
            if figs:
                rows.append([label, client, str(len(figs)), fmt(med(figs, "cycle_median_us")),
                             fmt(med(figs, "cycle_p99_us")),
                             "1.00x" if key == "none" else fmt_ratio(ratio(figs, base, "cycle_median_us"))])
    return ("## Stopped nodes (SIGSTOP), C, N=5\n\n"
            "ours-c lock+unlock cycles with none, one and two of the 5 nodes stopped by SIGSTOP "
            "(a stopped node takes bytes and answers nothing), the three runs interleaved in each "
            "round. Each is followed by the floor on the nodes still running (`floor --of 5`: "
            "it sends the stopped ones nothing and waits for 3 replies of the others), which "
            "shows what losing those nodes costs on this machine whatever the client: the "
            "quorum is then the 3rd reply of 4, or the last of 3, instead of the 3rd of 5. "
            "Microseconds: the median over the rounds, and the median of each round's "
            "ratio to that round's no-fault run of the same client.\n\n"
            + table(["nodes stopped", "client", "runs", "cycle median", "cycle p99", "vs none"], rows))


def section_fencing(fencing):
    rows = [[mode] + [fmt(med(fencing.get(mode), f"{kind}_median_us")) for kind in ("lock", "cycle")]
            for mode in ("off", "on") if fencing.get(mode)]
    return ("## Fencing tokens (N=5, C)\n\n"
            "Median in microseconds, steady state: every node counted every acquisition, so "
            "none needs the fence written back. On, each acquisition also increments a "
            "counter per resource: an INCR sent with the single-key SET NX GET.\n\n"
            + table(["fencing", "lock", "lock+unlock"], rows))


def section_readwrite(rw):
    rows = [[kind] + [fmt(med(rw.get(kind), f"{what}_median_us")) for what in ("lock", "cycle")]
            for kind in ("plain", "read", "write", "permit") if rw.get(kind)]
    return ("## Read-write locks and semaphores (N=5, C)\n\n"
            "Median in microseconds of a plain lock, a read lock and a write lock of a "
            "read-write lock, and a permit of a semaphore of 2, each alone on its name. A read "
            "lock runs rw.lua (a GET and a SET of the key, which lists its readers); a write "
            "lock is taken as a "
            "plain lock is and released by rw.lua; a permit runs sem.lua and waits for 4 of "
            "the 5 nodes (a permit's quorum for 2 permits), where a lock waits for 3.\n\n"
            + table(["kind", "lock", "lock+unlock"], rows))


def section_kinds(title, text, column, figures, kinds):
    """A table of lock and lock+unlock medians, one row per kind of node."""
    rows = [[kind] + [fmt(med(figures.get(kind), f"{k}_median_us")) for k in ("lock", "cycle")]
            for kind in kinds if figures.get(kind)]
    return f"## {title}\n\n{text}\n\n" + table([column, "lock", "lock+unlock"], rows)


def section_sentinel(sentinel):
    return section_kinds(
        "Sentinel groups as nodes (N=3, C)",
        "Median in microseconds: three Sentinel groups given as redis-sentinel:// nodes, "
        "and their masters given as redis:// nodes, in the same rounds. Resolved once, a "
        "Sentinel node asks a sentinel again every sentinel_poll_ms (one extra round trip "
        "for one operation a second).", "nodes", sentinel, ("master", "sentinel"))


def section_cluster(cluster):
    return section_kinds(
        "A Cluster as the node (N=1, C)",
        "Median in microseconds, in the same rounds: one Redis Cluster of three masters "
        "given as a redis-cluster:// node (cluster); the master that serves the resource's "
        "slot given as a redis:// node (owner: the same server, so the difference is the "
        "library's); and one standalone master (master: the difference from owner is the "
        "server's own cost of cluster mode).", "node", cluster, ("master", "owner", "cluster"))


def paired(res, a, b, n):
    """a's cycle median against b's at N=n: the median of their pairs' ratios
    when they ran in pairs, else of the latency runs' medians."""
    pairs = res.get("pairs", {})
    ours, other = pairs.get(f"{a}@{b}|{n}"), pairs.get(f"{b}@{a}|{n}")
    if ours and other:
        return ratio(ours, other, "cycle_median_us")
    return ratio(res["latency"].get(f"{a}|{n}"), res["latency"].get(f"{b}|{n}"),
                 "cycle_median_us")


def targets(res):
    """(target, measured, verdict) for each target of the issue."""
    lat, multi, strag = res["latency"], res["multi"], res["straggler"]
    out = []
    r = paired(res, "ours-c", "floor", 5)
    out.append(("C lock+unlock, N=5, within 1.10x of the floor", fmt_ratio(r), verdict(r, 1.10)))
    peers = {p: med(lat.get(f"{p}|5"), "cycle_median_us") for p in PEERS}
    peers = {p: v for p, v in peers.items() if v}
    if peers:
        best = min(peers, key=peers.get)
        r = ratio(lat.get("ours-c|5"), lat.get(f"{best}|5"), "cycle_median_us")
        out.append((f"C lock+unlock, N=5, at most 0.8x of the fastest peer ({best})",
                    fmt_ratio(r), verdict(r, 0.8)))
    for n in (1, 3, 5, 7, 9):
        r = paired(res, "ours-c", "floor", n)
        out.append((f"latency within 1.10x of the floor, N={n}", fmt_ratio(r), verdict(r, 1.10)))
    r = ratio(lat.get("ours-c|5"), lat.get("floor|5"), "cpu_us")
    out.append(("client CPU per cycle within 1.1x of the floor's", fmt_ratio(r), verdict(r, 1.1)))
    users = {p: med(lat.get(f"{p}|5"), "user_us") for p in PEERS}
    users = {p: v for p, v in users.items() if v}
    if users:
        cheapest = min(users, key=users.get)
        r = ratio(lat.get("ours-c|5"), lat.get(f"{cheapest}|5"), "user_us")
        out.append((f"user CPU at most a fifth of the cheapest peer's ({cheapest})",
                    fmt_ratio(r), verdict(r, 0.2)))
    r = ratio(multi.get("ours-c|100"), multi.get("ours-c|1"), "cycle_median_us")
    out.append(("multi-lock of 100 within 2x of single", fmt_ratio(r), verdict(r, 2.0)))
    r = ratio(multi.get("redisson-multilock|100"), multi.get("ours-c|100"), "cycle_median_us")
    out.append(("multi-lock of 100 >= 10x faster than Redisson's MultiLock", fmt_ratio(r),
                verdict(r, 10.0, at_most=False)))
    r = ratio(strag.get("ours-c"), res["proxied"].get("ours-c"), "lock_median_us")
    out.append(("straggler: ours within 1.5x of no-fault", fmt_ratio(r), verdict(r, 1.5)))
    for p in ("redisson-redlock", "redsync", "floor-all"):
        ms = med(strag.get(p), "lock_median_us")
        if ms is not None:
            out.append((f"straggler: {p} (waits for every node) takes >= 50 ms",
                        f"{ms / 1000:.1f} ms", verdict(ms / 1000, 50.0, at_most=False)))
    stalled = res.get("stalled", {})
    r = ratio(stalled.get("one"), stalled.get("none"), "cycle_median_us")
    out.append(("one of 5 nodes stopped (SIGSTOP): lock+unlock within 1.2x of no-fault",
                fmt_ratio(r), verdict(r, 1.2)))
    r = ratio(stalled.get("two"), stalled.get("none"), "cycle_median_us")
    out.append(("two of 5 nodes stopped (SIGSTOP): lock+unlock within 1.5x of no-fault",
                fmt_ratio(r), verdict(r, 1.5)))
    for key, label in (("one", "one of 5"), ("two", "two of 5")):
        r = ratio(stalled.get(f"floor {key}"), stalled.get("floor none"), "cycle_median_us")
        out.append((f"for comparison, {label} stopped: the floor on the live nodes against its "
                    "no-fault", fmt_ratio(r), "info" if r is not None else "n/a"))
    r = ratio(res["threads"].get("16"), res.get("threads_floor", {}).get("16"), "per_s")
    out.append(("16 threads on one client >= 0.9x the acquisitions/s of 16 floor clients",
                fmt_ratio(r), verdict(r, 0.9, at_most=False)))
    for b in BINDINGS:
        r = paired(res, b, "ours-c", 5)
        limit = BINDING_LIMIT.get(b, 1.2)
        out.append((f"{b} within {limit}x of C", fmt_ratio(r), verdict(r, limit)))
    for loop, blocking in EVENT_LOOP:
        r = paired(res, loop, blocking, 5)
        out.append((f"{loop} within 1.5x of {blocking}", fmt_ratio(r), verdict(r, 1.5)))
    r = ratio(res["fencing"].get("on"), res["fencing"].get("off"), "lock_median_us")
    out.append(("acquisition with fencing within 1.15x of without", fmt_ratio(r),
                verdict(r, 1.15)))
    rw = res.get("readwrite", {})
    r = ratio(rw.get("read"), rw.get("plain"), "lock_median_us")
    out.append(("read acquisition within 1.2x of a plain one", fmt_ratio(r), verdict(r, 1.2)))
    r = ratio(rw.get("permit"), rw.get("plain"), "lock_median_us")
    out.append(("a permit (of 2) within 1.5x of a plain lock", fmt_ratio(r), verdict(r, 1.5)))
    sentinel = res.get("sentinel", {})
    r = ratio(sentinel.get("sentinel"), sentinel.get("master"), "cycle_median_us")
    out.append(("lock+unlock on Sentinel nodes within 1.1x of their masters as redis://",
                fmt_ratio(r), verdict(r, 1.1)))
    cluster = res.get("cluster", {})
    r = ratio(cluster.get("cluster"), cluster.get("owner"), "cycle_median_us")
    out.append(("lock+unlock on a Cluster node within 1.1x of its master as a redis:// node",
                fmt_ratio(r), verdict(r, 1.1)))
    r = ratio(cluster.get("cluster"), cluster.get("master"), "cycle_median_us")
    out.append(("lock+unlock on a Cluster node within 1.1x of a standalone server",
                fmt_ratio(r), verdict(r, 1.1)))
    return out + handoff_targets(res)


def charts(out_dir, res):
    lat = res["latency"]
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, name in enumerate(clients_in(lat)):
        ns = sorted(int(k.split("|")[1]) for k in lat if k.split("|")[0] == name)
        ys = [med(lat[f"{name}|{n}"], "cycle_median_us") / 1000 for n in ns]
        ax.plot(ns, ys, marker="o", label=name, color=plt.cm.tab20.colors[2 * i % 20 + i // 10],
                linestyle="--" if name.startswith("floor") else "-")
    ax.set_yscale("log")
    ax.set_xlabel("nodes (N)")
    ax.set_ylabel("lock+unlock, median (ms, log scale)")
    ax.set_title("Latency of one lock+unlock cycle against N")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "latency_vs_n.png"), dpi=110)
    plt.close(fig)

    strag = res["straggler"]
    if strag:
        names = list(strag)
        base = [ms(res["proxied"].get(n), "lock_median_us") or 0 for n in names]
        late = [med(strag[n], "lock_median_us") / 1000 for n in names]
        fig, ax = plt.subplots(figsize=(8, 5))
        xs = range(len(names))
        ax.bar([x - 0.2 for x in xs], base, width=0.4, label="no fault")
        ax.bar([x + 0.2 for x in xs], late, width=0.4, label="node 5 answers 50 ms late")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names, rotation=30, ha="right")
        ax.set_yscale("log")
        ax.set_ylabel("lock (acquire), median (ms, log scale)")
        ax.set_title("Acquiring with a straggler among 5 nodes")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "straggler.png"), dpi=110)
        plt.close(fig)

    if res["threads"]:
        fig, ax = plt.subplots(figsize=(8, 5))
        for mode, label in (("threads", "each thread its own resource"),
                            ("contend", "all threads on one resource")):
            ts = sorted(int(t) for t in res[mode])
            ax.plot(ts, [med(res[mode][str(t)], "per_s") for t in ts], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("threads sharing one client")
        ax.set_ylabel("acquisitions per second")
        ax.set_title("Throughput of one client (ours, C, N=5)")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "throughput.png"), dpi=110)
        plt.close(fig)


def write(out_dir, res, missing, settings, seconds):
    lat = res["latency"]
    parts = [
        "# redlock benchmarks\n\n",
        f"Made by `bench/run` on {datetime.date.today().isoformat()} in {seconds / 60:.1f} minutes: "
        f"{settings['repeat']} round(s); {settings['cycles']} measured cycles per latency run "
        f"after {settings['warmup']} warm-up cycles ({settings['multi_cycles']} for multi-lock and "
        f"{settings['straggler_cycles']} for the straggler); lease {settings['lease']} ms; every client one "
        "attempt per lock, no retries (but in the handoff and fairness scenarios, which are "
        "about waiting); all nodes local `redis-server` processes on loopback, the "
        "same nodes and resource names for every client.\n\n",
        table(["", ""], machine()) + "\n",
    ]
    if settings.get("only") and len(settings["only"]) < len(SCENARIOS):
        parts.append(f"Only these scenarios ran (`--only`): {', '.join(settings['only'])}.\n\n")
    if missing:
        parts.append("Not available in this run: "
                     + "; ".join(f"{k} (missing {', '.join(v)})" for k, v in missing.items())
                     + ".\n\n")
    parts.append("## Targets\n\n" + table(["target", "measured", ""], targets(res)) + "\n")
    if lat:
        parts += [section_headline(lat), "\n![latency against N](latency_vs_n.png)\n\n",
                  section_latency(lat), "\n", section_cpu(lat), "\n"]
    if res.get("pairs"):
        parts += [section_pairs(res["pairs"]), "\n"]
    if res["multi"]:
        parts += [section_multi(res["multi"]), "\n"]
    if res["straggler"]:
        parts += [section_straggler(res["straggler"], res["proxied"]),
                  "\n![straggler](straggler.png)\n\n"]
    if res.get("stalled"):
        parts += [section_stalled(res["stalled"]), "\n"]
    if res["threads"]:
        parts += [section_threads(res["threads"], res["contend"], res.get("threads_floor", {})),
                  "\n![throughput](throughput.png)\n\n"]
    if res["handoff"]:
        parts += [section_handoff(res["handoff"], settings), "\n"]
    if res["fairness"]:
        parts += [section_fairness(res["fairness"], settings), "\n"]
    if res["fencing"]:
        parts += [section_fencing(res["fencing"]), "\n"]
    if res.get("readwrite"):
        parts += [section_readwrite(res["readwrite"]), "\n"]
    if res.get("sentinel"):
        parts += [section_sentinel(res["sentinel"]), "\n"]
    if res.get("cluster"):
        parts += [section_cluster(res["cluster"]), "\n"]
    if lat:
        parts.append(section_bindings(lat))
    with open(os.path.join(out_dir, "REPORT.md"), "w") as f:
        f.write("".join(parts))
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump({"settings": settings, "results": res, "missing": missing}, f, indent=1)
    if lat:
        charts(out_dir, res)
