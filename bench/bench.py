"""The benchmark driver behind bench/run: starts local nodes, runs every
client in every scenario, and writes bench/results/REPORT.md, summary.json
and the charts. Figures only: it never fails because a target is missed.

Each client is a program that takes the bench command line (--nodes, --cycles,
--warmup, --lease, --keys, --prefix, ...) and prints one JSON object with its
latency samples (ns) and its CPU time (bench/README.md).
"""

import argparse
import glob
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import report

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
LEASE_MS = 10000
NODE_COUNTS = (1, 3, 5, 7, 9)
MULTI_KEYS = (1, 10, 100)
THREADS = (1, 4, 16, 64)
FLOOR_THREADS = 16   # the floor's threads the same run measures, against ours
STRAGGLER_MS = 50
HANDOFF_HOLD_MS = 20     # the waiter has surely started waiting by then
FAIR_THREADS = 16
FAIR_HOLD_MS = 1         # each holds the resource this long per acquisition
# "kept": one client holding many kept locks (not in the default run: --only kept).
JVM_WARMUP = 20000       # cycles a JVM client warms up at least (Runner.run)
KEPT_LOCKS = (10000, 100000)
KEPT_NODES = (3, 5)
KEPT_LEASE_MS = 30000    # the default watchdog_lease_ms: renewed about every 9 s
KEPT_SECONDS = 40.0     # the first half (CPU) and the second (lag) each see two waves
KEPT_CLIENTS = ("ours-c", "ours-python", "ours-python-asyncio", "ours-java")
# Redisson holding the same number of lock()ed RLocks (its watchdog renews
# them), on the first node: its RLock is a single master.
KEPT_PEER = "redisson-rlock"
# One thread taking many kept locks on one node, ours in Python and Redisson
# in Java: (client, locks).
KEPT_ACQUIRE = (("ours-python", 20000), (KEPT_PEER, 20000))


def client_table(build):
    """Every client: its command line, extra environment, and what it needs."""
    py = sys.executable
    jar_dir = os.path.join(build, "bindings", "java", "maven")
    jars = [os.path.join(jar_dir, f) for f in sorted(os.listdir(jar_dir))
            if f.startswith("redlock-") and f.endswith(".jar")] if os.path.isdir(jar_dir) else []
    redisson_cp = ":".join([os.path.join(BENCH, "peers/redisson/target/classes"),
                            os.path.join(BENCH, "peers/redisson/target/dependency/*")])
    lua_dir = os.path.join(build, "bindings", "lua", "luajit")
    php_ext = os.path.join(build, "bindings", "php", "redlock.so")
    php_lib = os.path.join(build, "bindings", "php", "lib")
    ours_java_cp = ":".join([os.path.join(build, "bench", "java")] + jars[:1])
    ours_java_needs = [os.path.join(build, "bench", "java", "bench", "OursBench.class"),
                       jars[0] if jars else os.path.join(jar_dir, "redlock-*.jar")]
    tools = os.path.join(BENCH, ".tools")
    py_path = os.path.join(build, "bindings", "python") + ":" + os.path.join(BENCH, "clients/python")
    return {
        "floor": ([os.path.join(build, "bench", "floor")], {}, [os.path.join(build, "bench", "floor")]),
        "floor-all": ([os.path.join(build, "bench", "floor"), "--wait-all"], {},
                      [os.path.join(build, "bench", "floor")]),
        "ours-c": ([os.path.join(build, "bench", "ours")], {}, [os.path.join(build, "bench", "ours")]),
        "ours-python": ([py, os.path.join(BENCH, "clients/python/ours.py")],
                        {"PYTHONPATH": py_path},
                        [os.path.join(build, "bindings", "python", "redlock", "capi.py")]),
        "ours-python-asyncio": ([py, os.path.join(BENCH, "clients/python/ours_asyncio.py")],
                                {"PYTHONPATH": py_path},
                                [os.path.join(build, "bindings", "python", "redlock", "asyncio.py")]),
        "ours-python-uvloop": ([py, os.path.join(BENCH, "clients/python/ours_asyncio.py"),
                                "--loop", "uvloop"], {"PYTHONPATH": py_path},
                               [os.path.join(build, "bindings", "python", "redlock", "asyncio.py")]),
        "floor-python-asyncio": ([py, os.path.join(BENCH, "clients/python/floor_asyncio.py")],
                                 {"PYTHONPATH": py_path},
                                 [os.path.join(BENCH, "clients/python/floor_asyncio.py")]),
        "floor-python-uvloop": ([py, os.path.join(BENCH, "clients/python/floor_asyncio.py"),
                                 "--loop", "uvloop"], {"PYTHONPATH": py_path},
                                [os.path.join(BENCH, "clients/python/floor_asyncio.py")]),
        "ours-java": (["java", "-cp", ours_java_cp, "bench.OursBench"], {}, ours_java_needs),
        "ours-lua": (["luajit", os.path.join(BENCH, "clients/lua/ours.lua")],
                     {"LUA_PATH": lua_dir + "/?.lua;" + os.path.join(BENCH, "clients/lua/?.lua;;"),
                      "LUA_CPATH": lua_dir + "/?.so;;"},
                     [os.path.join(lua_dir, "redlock_core.so")]),
        "ours-php": (["php", "-d", "extension=" + php_ext, os.path.join(BENCH, "clients/php/ours.php")],
                     {"REDLOCK_PHP_LIB": php_lib}, [php_ext, os.path.join(php_lib, "autoload.php")]),
        "ours-php-swoole": (["php", "-d", "extension=" + php_ext, os.path.join(BENCH, "clients/php/ours.php"),
                             "--swoole"], {"REDLOCK_PHP_LIB": php_lib},
                            [php_ext, os.path.join(php_lib, "autoload.php")]),
        "ours-openresty": ([py, os.path.join(BENCH, "clients/lua/openresty.py")],
                           {"REDLOCK_LUA_DIR": lua_dir},
                           [os.path.join(lua_dir, "redlock_core.so"), "/usr/sbin/nginx"]),
        "floor-openresty": ([py, os.path.join(BENCH, "clients/lua/openresty.py"), "--floor", "1"],
                            {"REDLOCK_LUA_DIR": lua_dir},
                            [os.path.join(lua_dir, "redlock_core.so"), "/usr/sbin/nginx"]),
        "floor-openresty-pooled": ([py, os.path.join(BENCH, "clients/lua/openresty.py"), "--floor",
                                    "pooled"], {"REDLOCK_LUA_DIR": lua_dir},
                                   [os.path.join(lua_dir, "redlock_core.so"), "/usr/sbin/nginx"]),
        "redisson-redlock": (["java", "-cp", redisson_cp, "bench.RedissonBench", "--variant", "redlock"],
                             {}, [os.path.join(BENCH, "peers/redisson/target/classes")]),
        "redisson-rlock": (["java", "-cp", redisson_cp, "bench.RedissonBench", "--variant", "rlock"],
                           {}, [os.path.join(BENCH, "peers/redisson/target/classes")]),
        "redisson-multilock": (["java", "-cp", redisson_cp, "bench.RedissonBench", "--variant",
                                "multilock"], {}, [os.path.join(BENCH, "peers/redisson/target/classes")]),
        "redsync": ([os.path.join(tools, "redsync-bench")], {}, [os.path.join(tools, "redsync-bench")]),
        "redsync-failfast": ([os.path.join(tools, "redsync-bench"), "--variant", "failfast"], {},
                             [os.path.join(tools, "redsync-bench")]),
        "node-redlock": (["node", os.path.join(BENCH, "peers/node-redlock/bench.js")], {},
                         [os.path.join(BENCH, "peers/node-redlock/node_modules/redlock")]),
        "pottery": ([py, os.path.join(BENCH, "peers/pottery/bench.py")],
                    {"PYTHONPATH": os.path.join(BENCH, "clients/python")}, []),
    }


class Runner:
    """Runs clients against the nodes and keeps what each run measured."""

    def __init__(self, build, quick=False):
        self.clients = client_table(build)
        self.quick = quick
        self.missing = {}   # what each unavailable client lacks, as the report shows it
        for name, (_, _, needs) in self.clients.items():
            absent = [p for p in needs if not os.path.exists(p)]
            if name == "pottery" and not _importable("pottery"):
                absent.append("the pottery package (bench/setup.sh)")
            if name == "ours-php-swoole" and not _php_has("swoole"):
                absent.append("PHP's swoole extension (scripts/swoole.sh)")
            if absent:
                self.missing[name] = [shown(p, build) for p in absent]
                print(f"bench: {name}: not available (missing {', '.join(absent)})", flush=True)

    def available(self, name):
        return name not in self.missing

    def run(self, name, nodes, prefix, extra=(), stopped=(), warm_jit=False):
        cmd, env, _ = self.clients[name]
        flush([n for n in nodes if n not in stopped])   # a stopped node would not answer
        full = cmd + ["--nodes", ",".join(nodes), "--lease", str(LEASE_MS), "--prefix", prefix]
        extra = [str(x) for x in extra]
        # A JVM client's cycle of one resource warms up until the JIT has
        # compiled it (after about 10,000 calls): fewer measure the
        # interpreter (ours-java was 1.42x of C after 200, 0.95x after
        # 20,000). Only ours, where the caller asks (the latency runs: short
        # cycles), and not in a smoke run: a peer's cycle of milliseconds
        # would make its warm-up take minutes a run.
        if (name.startswith("ours-java") and warm_jit and "--warmup" in extra
                and not self.quick):
            at = extra.index("--warmup") + 1
            extra[at] = str(max(int(extra[at]), JVM_WARMUP))
        full += extra
        busy0 = machine_busy()
        try:
            proc = subprocess.run(full, capture_output=True, text=True, timeout=600,
                                  env={**os.environ, **env})
        except subprocess.TimeoutExpired:
            print(f"bench: {name} took over 600 s; its run is left out", flush=True)
            return None
        busy1 = machine_busy()
        if proc.returncode != 0 or not proc.stdout.strip():
            print(f"bench: {name} failed ({proc.returncode}): {proc.stderr.strip()[-400:]}", flush=True)
            return None
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        res["machine_busy"] = (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1])
        return res


def shown(path, build):
    """A path as the report shows it: from the build directory or the repository,
    not where they are on this machine."""
    for base, label in ((build, "<build>"), (ROOT, "")):
        if path.startswith(base + os.sep):
            return os.path.join(label, os.path.relpath(path, base))
    return path


def machine_busy():
    """(busy, total) CPU ticks of the whole machine so far, from /proc/stat."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    idle = ticks[3] + ticks[4]
    return sum(ticks) - idle, sum(ticks)


def _importable(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def _php_has(extension):
    """Whether the php command loads extension."""
    try:
        run = subprocess.run(["php", "-r", f"exit(extension_loaded('{extension}') ? 0 : 1);"],
                             capture_output=True, timeout=30)
    except OSError:
        return False
    return run.returncode == 0


def flush(nodes):
    """FLUSHALL on every node, so no run finds keys another one left."""
    for uri in nodes:
        if not uri.startswith("redis://"):
            continue   # a Sentinel group: its master is flushed as a redis:// node
        host, port = uri[len("redis://"):].split(":")
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(b"*1\r\n$8\r\nFLUSHALL\r\n")
            if not s.recv(16).startswith(b"+OK"):
                raise RuntimeError(f"FLUSHALL failed on {uri}")


def summarize(res):
    """The figures of one run: latency percentiles (us) and CPU per cycle (us)."""
    if not res or not res.get("ok"):
        return None
    out = {"ok": res["ok"], "failed": res["failed"], "wall_s": res["wall_s"],
           "machine_busy": res["machine_busy"]}
    if "nodes_cores" in res:
        out["nodes_cores"] = res["nodes_cores"]
    for kind in ("lock", "cycle", "handoff"):
        xs = sorted(res.get(kind + "_ns", []))
        if xs:
            out[kind + "_median_us"] = statistics.median(xs) / 1000
            out[kind + "_p99_us"] = xs[min(len(xs) - 1, int(len(xs) * 0.99))] / 1000
    out["cpu_us"] = (res["cpu_user_us"] + res["cpu_sys_us"]) / res["ok"]
    out["user_us"] = res["cpu_user_us"] / res["ok"]
    out["sys_us"] = res["cpu_sys_us"] / res["ok"]
    if "per_thread" in res:
        counts = res["per_thread"]
        out["per_thread"] = counts
        out["per_s"] = res["ok"] / res["wall_s"]
        out["min"], out["max"] = min(counts), max(counts)
        total = sum(counts)
        squares = sum(c * c for c in counts)
        out["jain"] = total * total / (len(counts) * squares) if squares else 0.0
    return out


def node_pid(uri):
    """The process id of a node, from its INFO."""
    host, port = uri[len("redis://"):].split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")
        text = b""
        while b"process_id:" not in text or not text.endswith(b"\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            text += chunk
    for line in text.decode(errors="replace").splitlines():
        if line.startswith("process_id:"):
            return int(line.split(":", 1)[1])
    raise RuntimeError(f"no process_id in the INFO of {uri}")


def node_ticks(pids):
    """CPU time (clock ticks, user and system) the node processes have used so far."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])   # utime, stime
    return total


def with_node_cpu(pids, run):
    """run()'s result with nodes_cores: how many CPUs the nodes kept busy meanwhile."""
    t0, w0 = node_ticks(pids), time.monotonic()
    res = run()
    if res:
        res["nodes_cores"] = ((node_ticks(pids) - t0) / os.sysconf("SC_CLK_TCK")
                              / max(1e-9, time.monotonic() - w0))
    return res


def run_stalled(args, runner, nodes, keep):
    """ours-c on 5 nodes with none, one and two of them stopped by SIGSTOP (they
    take bytes and answer nothing), the three interleaved in each round, so
    that the machine's load falls on all three alike; each followed by the
    floor on the nodes still running, waiting for the same quorum of 3."""
    pids = [node_pid(uri) for uri in nodes[3:5]]
    try:
        for _ in range(args.stalled_rounds):
            for key, stopped in (("none", 0), ("one", 1), ("two", 2)):
                for pid in pids[2 - stopped:]:
                    os.kill(pid, signal.SIGSTOP)
                try:
                    keep("stalled", key, runner.run(
                        "ours-c", nodes[:5], "bench:stall",
                        ["--cycles", args.cycles, "--warmup", args.warmup],
                        stopped=nodes[5 - stopped:5]))
                    # The floor told which nodes are stopped: it sends them
                    # nothing and waits for 3 of the live ones, what the
                    # quorum costs on this machine without them.
                    if runner.available("floor"):
                        keep("stalled", f"floor {key}", runner.run(
                            "floor", nodes[:5 - stopped], "bench:stall",
                            ["--cycles", args.cycles, "--warmup", args.warmup, "--of", 5]))
                finally:
                    for pid in pids:
                        os.kill(pid, signal.SIGCONT)
                # What the stopped nodes were sent is theirs to run before the next run.
                time.sleep(0.2)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


class Toxiproxy:
    """A Toxiproxy server with one proxy in front of a node; add_latency()
    then delays every reply of that node."""

    def __init__(self, binary, upstream, workdir):
        self.api_port = free_port()
        self.log = open(os.path.join(workdir, "toxiproxy.log"), "w")
        self.proc = subprocess.Popen([binary, "-host", "127.0.0.1", "-port", str(self.api_port)],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.listen_port = free_port()
        for _ in range(200):
            try:
                self._post("/proxies", {"name": "straggler", "enabled": True,
                                        "listen": f"127.0.0.1:{self.listen_port}",
                                        "upstream": upstream[len("redis://"):]})
                break
            except OSError:
                time.sleep(0.05)
        else:
            self.stop()
            raise RuntimeError("toxiproxy did not start")
        self.uri = f"redis://127.0.0.1:{self.listen_port}"

    def add_latency(self, latency_ms):
        self._post("/proxies/straggler/toxics", {"name": "late", "type": "latency",
                                                  "stream": "downstream",
                                                  "attributes": {"latency": latency_ms, "jitter": 0}})

    def _post(self, path, body):
        req = urllib.request.Request(f"http://127.0.0.1:{self.api_port}{path}",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as r:
            r.read()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nodes(workdir, n):
    out = subprocess.run([os.path.join(ROOT, "scripts", "redis-nodes.sh"), "start", workdir, str(n)],
                         capture_output=True, text=True, check=True)
    return out.stdout.split()


def stop_nodes(workdir):
    subprocess.run([os.path.join(ROOT, "scripts", "redis-nodes.sh"), "stop", workdir], check=False)


LATENCY_CLIENTS = ("floor", "floor-all", "ours-c", "ours-python", "ours-python-asyncio",
                   "ours-python-uvloop", "ours-java", "ours-lua", "ours-openresty", "ours-php",
                   "ours-php-swoole",
                   "redisson-redlock", "redsync", "redsync-failfast", "node-redlock", "pottery")
# The event-loop drivers' floors, on 5 nodes only.
LOOP_FLOOR_CLIENTS = ("floor-python-asyncio", "floor-python-uvloop", "floor-openresty",
                      "floor-openresty-pooled")
MULTI_CLIENTS = ("ours-c", "redisson-multilock", "node-redlock")
STRAGGLER_CLIENTS = ("floor", "floor-all", "ours-c", "redisson-redlock", "redsync",
                     "redsync-failfast", "node-redlock", "pottery")
# (client, nodes): Redisson's RLock is a single master, the first node.
HANDOFF_CLIENTS = (("ours-c", 5), ("ours-c", 1), ("redisson-rlock", 1), ("redisson-redlock", 5))
FAIR_CLIENTS = (("ours-c", 5), ("redisson-rlock", 1), ("redisson-redlock", 5))


def start_sentinel_groups(workdir, n=3):
    """n Sentinel groups (a master, a replica, three sentinels each, by
    scripts/redis-topo.sh): their redis-sentinel:// URIs and their masters'
    redis:// URIs."""
    script = os.path.join(ROOT, "scripts", "redis-topo.sh")
    out = {"uris": [], "masters": [], "dirs": []}
    for i in range(n):
        d = os.path.join(workdir, f"sentinel{i}")
        out["dirs"].append(d)
        run = lambda *a: subprocess.run([script, a[0], d, *a[1:]], capture_output=True,
                                        text=True, check=True).stdout.strip()
        out["uris"].append(run("sentinel", "1", "3", f"bench{i}"))
        out["masters"].append("redis://" + run("master"))
    return out


def start_cluster(workdir):
    """A Redis Cluster of three masters, no replicas (scripts/redis-topo.sh):
    its redis-cluster:// URI and its masters' redis:// URIs."""
    script = os.path.join(ROOT, "scripts", "redis-topo.sh")
    d = os.path.join(workdir, "cluster")
    run = lambda *a: subprocess.run([script, a[0], d, *a[1:]], capture_output=True,
                                    text=True, check=True).stdout.strip()
    uri = run("cluster", "3", "0")
    masters = ["redis://" + line.split()[2] for line in run("addrs").splitlines()]
    # The script's servers write every command to disk (appendfsync always,
    # for its tests of restarts); the standalone nodes compared write
    # nothing: the same here.
    for m in masters:
        host, port = m[len("redis://"):].split(":")
        subprocess.run(["redis-cli", "-h", host, "-p", port, "CONFIG", "SET", "appendonly", "no"],
                       capture_output=True, check=True)
    return {"uri": uri, "masters": masters, "dir": d}


def slot_owner(masters, key):
    """The redis:// URI of the Cluster master that serves key's slot."""
    host, port = masters[0][len("redis://"):].split(":")
    cli = lambda *a: subprocess.run(["redis-cli", "-h", host, "-p", port, *a], capture_output=True,
                                    text=True, check=True).stdout
    slot = int(cli("CLUSTER", "KEYSLOT", key))
    for line in cli("CLUSTER", "NODES").splitlines():
        fields = line.split()
        if "master" not in fields[2].split(","):
            continue
        for served in fields[8:]:
            first, _, last = served.partition("-")
            if not served.startswith("[") and int(first) <= slot <= int(last or first):
                return "redis://" + fields[1].split("@")[0]
    raise RuntimeError(f"no master serves slot {slot}")


def stop_cluster(workdir):
    script = os.path.join(ROOT, "scripts", "redis-topo.sh")
    d = os.path.join(workdir, "cluster")
    if os.path.isdir(d):
        subprocess.run([script, "stop", d], capture_output=True)


def stop_sentinel_groups(workdir):
    script = os.path.join(ROOT, "scripts", "redis-topo.sh")
    for d in glob.glob(os.path.join(workdir, "sentinel*")):
        subprocess.run([script, "stop", d], capture_output=True)


def kept_commands(build):
    """The kept scenario's clients: bench/c/kept.c (built here, against the
    build's library) and bench/clients/python/kept.py, sync and asyncio."""
    exe = os.path.join(build, "bench", "kept")
    src = os.path.join(BENCH, "c", "kept.c")
    lib = os.path.join(build, "core")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        os.makedirs(os.path.dirname(exe), exist_ok=True)
        subprocess.run(["cc", "-std=c11", "-O2", "-D_DEFAULT_SOURCE", "-I", os.path.join(ROOT, "abi"),
                        src, "-o", exe, "-L", lib, "-lredlock", "-pthread", f"-Wl,-rpath,{lib}"],
                       check=True)
    py = sys.executable
    env = {"PYTHONPATH": os.path.join(build, "bindings", "python")}
    script = os.path.join(BENCH, "clients", "python", "kept.py")
    redisson_cp = ":".join([os.path.join(BENCH, "peers/redisson/target/classes"),
                            os.path.join(BENCH, "peers/redisson/target/dependency/*")])
    jars = glob.glob(os.path.join(build, "bindings", "java", "maven", "redlock-*.jar"))
    ours_java_cp = ":".join([os.path.join(build, "bench", "java")] + jars[:1])
    return {"ours-c": ([exe], {}), "ours-python": ([py, script], env),
            "ours-python-asyncio": ([py, script, "--asyncio"], env),
            "ours-java": (["java", "-cp", ours_java_cp, "bench.OursKept"], {}),
            KEPT_PEER: (["java", "-cp", redisson_cp, "bench.RedissonKept"], {})}


def run_kept(args, nodes):
    """The kept scenario: each client holds KEPT_LOCKS kept locks on 3 and 5
    nodes; {client|nodes|locks: [figures per repeat]}."""
    commands = kept_commands(os.path.abspath(args.build))
    peer = os.path.exists(os.path.join(BENCH, "peers/redisson/target/classes/bench/RedissonKept.class"))
    runs = [(name, n, locks, args.kept_seconds) for n in KEPT_NODES for locks in args.kept_locks
            for name in KEPT_CLIENTS]
    runs += [(KEPT_PEER, 1, locks, args.kept_seconds) for locks in args.kept_locks if peer]
    # The acquisitions alone: held a moment.
    runs += [(name, 1, locks, 2.0) for name, locks in KEPT_ACQUIRE if peer or name != KEPT_PEER]
    out = {}
    for rep in range(args.repeat):
        for name, n, locks, seconds in runs:
            cmd, env = commands[name]
            flush(nodes[:n])
            full = cmd + ["--nodes", ",".join(nodes[:n]), "--locks", str(locks),
                          "--lease", str(KEPT_LEASE_MS), "--seconds", str(seconds),
                          "--prefix", "bench:kept"]
            proc = subprocess.run(full, capture_output=True, text=True, timeout=900,
                                  env={**os.environ, **env})
            lines = proc.stdout.strip().splitlines()
            if not lines:
                print(f"bench: kept {name} {n} nodes {locks} locks failed "
                      f"({proc.returncode}): {proc.stderr.strip()[-400:]}", flush=True)
                continue
            res = json.loads(lines[-1])
            print(f"bench: kept {name} {n} nodes {locks} locks: {res}", flush=True)
            out.setdefault(f"{name}|{n}|{locks}", []).append(res)
    return out


def write_kept(out_dir, kept, settings):
    """kept.json and kept.md: the medians of the repeats, one row per run."""
    rows = []
    fields = ("lost", "renewal_failed", "bytes_per_lock", "max_sockets", "cpu_ms_per_s",
              "cpu_ms_per_1000_renewals", "worst_renewal_lag_ms", "min_validity_ms",
              "acquire_s", "release_s")
    for key, runs in kept.items():
        name, n, locks = key.split("|")
        med = {f: statistics.median(r[f] for r in runs if f in r) if any(f in r for r in runs)
               else None for f in fields}
        med["lost"] = max(r["lost"] for r in runs)   # the worst run, not the median
        rows.append((name, int(n), int(locks), len(runs), med))
    with open(os.path.join(out_dir, "kept.json"), "w") as f:
        json.dump({"settings": settings, "runs": kept}, f, indent=1)
    with open(os.path.join(out_dir, "kept.md"), "w") as f:
        f.write(f"# Kept locks\n\nOne client holding many kept locks, lease {KEPT_LEASE_MS} ms "
                f"(the default watchdog_lease_ms: renewed about every 9 s), held {settings['kept_seconds']} s; medians of "
                f"{settings['repeat']} runs (lost: the worst run). CPU is the client's while it "
                "only held its locks; a renewal's lag is how much later than a third of the "
                "lease after the last one it started.\n\n")
        f.write("| client | nodes | locks | lost | bytes/lock | sockets | CPU ms/s | "
                "CPU ms/1000 renewals | worst lag ms | least validity ms | acquire s |\n")
        f.write("|---|---|---|---|---|---|---|---|---|---|---|\n")
        def cell(value, spec):
            return "-" if value is None else format(value, spec)   # Redisson has no lag

        for name, n, locks, _, m in sorted(rows, key=lambda r: (r[1], r[2], r[0])):
            f.write(f"| {name} | {n} | {locks:,} | {m['lost']} | {cell(m['bytes_per_lock'], '.0f')} | "
                    f"{cell(m['max_sockets'], '.0f')} | {cell(m['cpu_ms_per_s'], '.1f')} | "
                    f"{cell(m['cpu_ms_per_1000_renewals'], '.2f')} | "
                    f"{cell(m['worst_renewal_lag_ms'], '.0f')} | "
                    f"{cell(m['min_validity_ms'], '.0f')} | {cell(m['acquire_s'], '.1f')} |\n")
        f.write("\nRows of 1 node are Redisson's RLock (a single master) and ours on that "
                "node; those held 2 s measure one thread's acquisitions.\n")


def run_all(args, runner, nodes, workdir):
    """Every scenario, args.repeat times; returns {scenario: {key: [figures per repeat]}}."""
    cycles = str(args.cycles)
    warmup = str(args.warmup)
    results = {"latency": {}, "multi": {}, "proxied": {}, "straggler": {}, "threads": {},
               "threads_floor": {}, "pairs": {}, "contend": {}, "handoff": {}, "fairness": {}, "fencing": {}, "stalled": {},
               "sentinel": {}, "cluster": {}, "readwrite": {}}
    groups = start_sentinel_groups(workdir) if "sentinel" in args.only else None
    cluster = start_cluster(workdir) if "cluster" in args.only else None

    def keep(scenario, key, res):
        fig = summarize(res)
        if fig:
            results[scenario].setdefault(key, []).append(fig)

    for rep in range(args.repeat):
        print(f"bench: round {rep + 1} of {args.repeat}", flush=True)
        for n in NODE_COUNTS if "latency" in args.only else ():
            for name in LATENCY_CLIENTS + (LOOP_FLOOR_CLIENTS if n == 5 else ()):
                if runner.available(name):
                    keep("latency", f"{name}|{n}", runner.run(
                        name, nodes[:n], "bench:lat", ["--cycles", cycles, "--warmup", warmup],
                        warm_jit=True))
        # The comparisons the targets make, in adjacent pairs whose order
        # alternates, so that the machine's swings (its cycle moves between
        # modes from run to run) fall on both runs of a pair alike: each
        # target is the median of its pairs' ratios. Ours against the floor
        # for every N; each binding against C, each event-loop driver
        # against its blocking binding, at N=5 (report.COMPARED). A run is
        # kept as "client@other|N".
        for a, b, n in report.COMPARED if "latency" in args.only else ():
            if not (runner.available(a) and runner.available(b)):
                continue
            for pair in range(args.floor_pairs):
                for name, other in ((a, b), (b, a)) if pair % 2 else ((b, a), (a, b)):
                    keep("pairs", f"{name}@{other}|{n}", runner.run(
                        name, nodes[:n], "bench:pair", ["--cycles", cycles, "--warmup", warmup],
                        warm_jit=True))
        for k in MULTI_KEYS if "multi" in args.only else ():
            for name in MULTI_CLIENTS:
                if runner.available(name):
                    keep("multi", f"{name}|{k}", runner.run(
                        name, nodes[:5], "bench:multi",
                        ["--cycles", args.multi_cycles, "--warmup", args.multi_warmup, "--keys", k]))
        if args.toxiproxy and "straggler" in args.only:
            # The no-fault baseline goes through the same proxy, without the delay.
            proxy = Toxiproxy(args.toxiproxy, nodes[4], workdir)
            try:
                late = nodes[:4] + [proxy.uri]
                for scenario in ("proxied", "straggler"):
                    if scenario == "straggler":
                        proxy.add_latency(STRAGGLER_MS)
                    for name in STRAGGLER_CLIENTS:
                        if runner.available(name):
                            keep(scenario, name, runner.run(
                                name, late, "bench:late",
                                ["--cycles", args.straggler_cycles, "--warmup", args.straggler_warmup]))
            finally:
                proxy.stop()
        if runner.available("ours-c") and "stalled" in args.only:
            run_stalled(args, runner, nodes, keep)
        if runner.available("ours-c") and "threads" in args.only:
            pids = [node_pid(uri) for uri in nodes[:5]]
            for mode in ("threads", "contend"):
                for t in THREADS:
                    keep(mode, str(t), with_node_cpu(pids, lambda: runner.run(
                        "ours-c", nodes[:5], f"bench:{mode}",
                        ["--mode", mode, "--threads", t, "--seconds", args.seconds])))
                    # The floor's own threads right after ours: as many floor
                    # clients, each with its own connections and resource.
                    if mode == "threads" and t == FLOOR_THREADS:
                        keep("threads_floor", str(t), with_node_cpu(pids, lambda: runner.run(
                            "floor", nodes[:5], "bench:fthreads",
                            ["--mode", "threads", "--threads", t, "--seconds", args.seconds])))
        # Fencing off and on, one after the other on the same nodes: steady
        # state (every node counted every acquisition, so no write-back).
        for fenced in (False, True) if "fencing" in args.only and runner.available("ours-c") else ():
            keep("fencing", "on" if fenced else "off", runner.run(
                "ours-c", nodes[:5], "bench:fence",
                ["--cycles", cycles, "--warmup", warmup] + (["--fencing"] if fenced else [])))
        # A read-write lock's read and write locks, and a permit of a
        # semaphore of 2 (held on 4 of the 5 nodes), against a plain lock, one
        # after the other on the same nodes.
        for kind in ("plain", "read", "write", "permit") if "readwrite" in args.only \
                and runner.available("ours-c") else ():
            keep("readwrite", kind, runner.run(
                "ours-c", nodes[:5], f"bench:rw-{kind}",
                ["--cycles", cycles, "--warmup", warmup]
                + ({"plain": [], "permit": ["--permits", "2"]}.get(kind, [f"--{kind}"]))))
        for name, n in HANDOFF_CLIENTS if "handoff" in args.only else ():
            if runner.available(name):
                keep("handoff", f"{name}|{n}", runner.run(
                    name, nodes[:n], "bench:handoff",
                    ["--mode", "handoff", "--cycles", args.handoff_cycles,
                     "--warmup", args.handoff_warmup, "--hold-ms", args.handoff_hold_ms]))
        # The same handoff between two fair waiters (the waiter is queued,
        # and woken on its own channel).
        if "handoff" in args.only and runner.available("ours-c"):
            keep("handoff", "ours-c fair|5", runner.run(
                "ours-c", nodes[:5], "bench:handoff-fair",
                ["--mode", "handoff", "--cycles", args.handoff_cycles, "--fair",
                 "--warmup", args.handoff_warmup, "--hold-ms", args.handoff_hold_ms]))
        # The same three masters as Sentinel nodes (resolved once, then
        # checked every sentinel_poll_ms) and as redis:// nodes, one after
        # the other in each round.
        for kind, uris in (("master", groups["masters"]), ("sentinel", groups["uris"])) \
                if groups and runner.available("ours-c") else ():
            flush(groups["masters"])   # the guard's record too: each run meets fresh nodes
            keep("sentinel", kind, runner.run(
                "ours-c", uris, "bench:sentinel", ["--cycles", cycles, "--warmup", warmup]))
        # One Cluster of three masters as the one node; the master of the
        # resource's slot as a redis:// node (the same server: the library's
        # own cost); and one standalone master (the server's cost of cluster
        # mode too), one after the other in each round.
        owner = slot_owner(cluster["masters"], "bench:cluster:0") if cluster else None
        for kind, uris in (("master", nodes[:1]), ("owner", [owner]),
                           ("cluster", [cluster["uri"]])) \
                if cluster and runner.available("ours-c") else ():
            flush(nodes[:1] + cluster["masters"])   # the guard's record too
            keep("cluster", kind, runner.run(
                "ours-c", uris, "bench:cluster", ["--cycles", cycles, "--warmup", warmup]))
        for name, n in FAIR_CLIENTS if "fairness" in args.only else ():
            # --quick: ours only (a JVM's start would take longer than the run).
            if runner.available(name) and (name == "ours-c" or not args.quick):
                keep("fairness", f"{name}|{n}", runner.run(
                    name, nodes[:n], "bench:fair",
                    ["--mode", "contend", "--threads", args.fair_threads,
                     "--seconds", args.fair_seconds, "--hold-ms", args.fair_hold_ms]))
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True, help="the CMake build directory (bench/run's)")
    p.add_argument("--quick", action="store_true", help="a smoke run: few cycles, one round")
    p.add_argument("--repeat", type=int, default=3, help="rounds; figures are their medians")
    p.add_argument("--cycles", type=int, default=1000)
    p.add_argument("--out", default=os.path.join(BENCH, "results"))
    p.add_argument("--only", default=",".join(report.SCENARIOS),
                   help="the scenarios to run, comma-separated: " + ", ".join(report.SCENARIOS)
                   + "; and kept (many kept locks: only when named)")
    args = p.parse_args()
    args.only = args.only.split(",")
    unknown = [s for s in args.only if s not in report.SCENARIOS + ("kept",)]
    if unknown:
        p.error(f"--only: unknown scenario {', '.join(unknown)} (of {', '.join(report.SCENARIOS)})")
    if args.quick:
        args.repeat, args.cycles = 1, 30
    args.warmup = max(10, args.cycles // 5)
    args.floor_pairs = 1 if args.quick else 4
    args.multi_cycles = max(5, args.cycles // 20)
    args.multi_warmup = max(5, args.multi_cycles // 5)
    args.straggler_cycles = max(5, args.cycles // 20)
    args.straggler_warmup = max(5, args.straggler_cycles // 5)
    args.stalled_rounds = 1 if args.quick else 3
    args.seconds = 0.3 if args.quick else 2.0
    args.handoff_cycles = 20 if args.quick else 200
    args.handoff_warmup = 3 if args.quick else 10
    args.handoff_hold_ms = HANDOFF_HOLD_MS
    args.fair_threads, args.fair_hold_ms = FAIR_THREADS, FAIR_HOLD_MS
    args.fair_seconds = 1.0 if args.quick else 5.0
    args.lease = LEASE_MS
    args.kept_locks = (1000,) if args.quick else KEPT_LOCKS
    args.kept_seconds = 4.0 if args.quick else KEPT_SECONDS
    args.toxiproxy = shutil.which("toxiproxy-server", path=os.path.join(BENCH, ".tools"))
    if not args.toxiproxy and "straggler" in args.only:
        print("bench: straggler: not available (toxiproxy-server: run bench/setup.sh)", flush=True)

    runner = Runner(os.path.abspath(args.build), args.quick)
    workdir = tempfile.mkdtemp(prefix="redlock-bench-")
    started = time.time()
    try:
        nodes = start_nodes(os.path.join(workdir, "nodes"), max(NODE_COUNTS))
        kept = run_kept(args, nodes) if "kept" in args.only else None
        args.only = [s for s in args.only if s != "kept"]
        results = run_all(args, runner, nodes, workdir) if args.only else None
    finally:
        stop_nodes(os.path.join(workdir, "nodes"))
        stop_sentinel_groups(workdir)
        stop_cluster(workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    # The settings of the run, without this machine's paths.
    settings = {k: v for k, v in vars(args).items() if k not in ("build", "out", "toxiproxy")}
    if kept is not None:
        write_kept(args.out, kept, settings)
        print(f"bench: wrote {os.path.join(args.out, 'kept.md')}", flush=True)
    if results is None:
        return
    report.write(args.out, results, runner.missing, settings, time.time() - started)
    print(f"bench: wrote {os.path.join(args.out, 'REPORT.md')}", flush=True)
    # The issue's handoff and fairness targets, said here too when missed.
    note = " (a --quick run: too few samples to judge)" if args.quick else ""
    for target, measured, verdict in report.handoff_targets(results):
        if verdict == "missed":
            print(f"bench: TARGET MISSED{note}: {target}: measured {measured}", flush=True)


if __name__ == "__main__":
    main()
