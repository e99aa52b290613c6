"""Real components for fault tests: local redis-server nodes (through
scripts/redis-nodes.sh) and a Toxiproxy server between clients and nodes.

Everything listens on 127.0.0.1 only and is stopped by its owner's stop().
The fault tests (tests/faults) and the mutual-exclusion run (tests/mutex)
both use this module.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
NODES_SCRIPT = ROOT / "scripts" / "redis-nodes.sh"
TOPO_SCRIPT = ROOT / "scripts" / "redis-topo.sh"
TOXIPROXY_SCRIPT = ROOT / "scripts" / "toxiproxy.sh"


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout} s waiting for {what}")
        time.sleep(0.01)


def _alive(pid: int) -> bool:
    """Running, and not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


class Nodes:
    """n independent redis-server nodes in dir, numbered from 0 here (the
    script numbers them from 1)."""

    def __init__(self, dir: Path, n: int) -> None:
        self.dir = dir
        subprocess.run([str(NODES_SCRIPT), "start", str(dir), str(n)], check=True,
                       stdout=subprocess.DEVNULL)
        self.uris: List[str] = (dir / "uris").read_text().split()
        self.ports = [int(uri.rsplit(":", 1)[1]) for uri in self.uris]

    def __len__(self) -> int:
        return len(self.uris)

    def stop(self) -> None:
        subprocess.run([str(NODES_SCRIPT), "stop", str(self.dir)], check=True)

    def socket(self, i: int) -> str:
        return str(self.dir / str(i + 1) / "redis.sock")

    def cli(self, i: int, *command: str, check: bool = True) -> str:
        """One command on node i over its unix socket; the reply as text
        (an error reply is text too: redis-cli prints it)."""
        result = subprocess.run(["redis-cli", "-s", self.socket(i), *command],
                                capture_output=True, text=True, timeout=30)
        if check and result.returncode != 0:
            raise RuntimeError(f"redis-cli {' '.join(command)} on node {i}: {result.stderr}")
        return result.stdout.strip()

    def pid(self, i: int) -> int:
        return int((self.dir / str(i + 1) / "pid").read_text())

    def running(self, i: int) -> bool:
        pid_file = self.dir / str(i + 1) / "pid"
        return pid_file.exists() and _alive(int(pid_file.read_text()))

    def stop_node(self, i: int) -> None:
        """SIGTERM, then wait (SIGKILL after 3 s): the node is gone."""
        subprocess.run([str(NODES_SCRIPT), "stop-node", str(self.dir), str(i + 1)], check=True)

    def kill_node(self, i: int) -> None:
        """kill -9: no goodbye to anyone."""
        pid = self.pid(i)
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not _alive(pid), 10, f"node {i} to die")

    def shutdown_nosave(self, i: int) -> None:
        """SHUTDOWN NOSAVE: the node exits at once, keeping nothing."""
        pid = self.pid(i)
        self.cli(i, "SHUTDOWN", "NOSAVE", check=False)
        wait_until(lambda: not _alive(pid), 10, f"node {i} to shut down")

    def start_node(self, i: int) -> None:
        """Starts node i again on its port, empty, and waits for PING."""
        subprocess.run([str(NODES_SCRIPT), "start-node", str(self.dir), str(i + 1)], check=True)

    def record(self) -> None:
        """Writes the group's records (restart_records) of the servers running
        now, as a group in use holds them once its new servers have run for
        max_lease_ms: a client counts them at once."""
        subprocess.run([str(NODES_SCRIPT), "record", str(self.dir)], check=True)

    def pause(self, i: int, ms: int) -> None:
        """CLIENT PAUSE ms ALL: node i accepts connections, answers nothing."""
        assert self.cli(i, "CLIENT", "PAUSE", str(ms), "ALL") == "OK"

    def run_id(self, i: int) -> str:
        for line in self.cli(i, "INFO", "server").splitlines():
            if line.startswith("run_id:"):
                return line.split(":", 1)[1].strip()
        raise RuntimeError(f"node {i} has no run_id in INFO")

    def get(self, i: int, key: str) -> str:
        return self.cli(i, "GET", key)

    def holders(self, key: str, value: str) -> List[int]:
        """The nodes on which key holds value."""
        return [i for i in range(len(self)) if self.running(i) and self.get(i, key) == value]

    def having(self, key: str) -> List[int]:
        """The running nodes on which key exists."""
        return [i for i in range(len(self))
                if self.running(i) and self.cli(i, "EXISTS", key) == "1"]


def toxiproxy_binary() -> Optional[str]:
    """$TOXIPROXY_SERVER, toxiproxy-server on PATH, or where
    scripts/toxiproxy.sh installs it; None when there is none."""
    explicit = os.environ.get("TOXIPROXY_SERVER")
    if explicit:
        return explicit
    found = shutil.which("toxiproxy-server")
    if found:
        return found
    result = subprocess.run([str(TOXIPROXY_SCRIPT), "path"], capture_output=True, text=True)
    path = result.stdout.strip()
    return path if result.returncode == 0 and path else None


class Toxiproxy:
    """A toxiproxy-server on a free loopback port, driven through its HTTP API.

    proxy(name, port) makes a proxy in front of 127.0.0.1:port and returns
    the port it listens on. Faults: toxics (latency, bandwidth, timeout,
    reset_peer, limit_data, slow_close, slicer) and disabling a proxy, which
    closes its connections and refuses new ones."""

    def __init__(self, binary: str, log: Path) -> None:
        self.api_port = free_port()
        self._binary = binary
        self._log = open(log, "ab")
        # name -> (listen port, upstream port), to make them again on a restart.
        self._proxies: Dict[str, Tuple[int, int]] = {}
        self._start()

    def _start(self) -> None:
        self._process = subprocess.Popen(
            [self._binary, "-host", "127.0.0.1", "-port", str(self.api_port)],
            stdout=self._log, stderr=subprocess.STDOUT)
        try:
            wait_until(self._ready, 10, "toxiproxy-server to answer")
        except BaseException:
            self.stop()
            raise

    def _ready(self) -> bool:
        if self._process.poll() is not None:
            raise RuntimeError(f"toxiproxy-server exited with {self._process.returncode}")
        try:
            self._call("GET", "/proxies")
            return True
        except OSError:
            return False

    def _end(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def stop(self) -> None:
        self._end()
        self._log.close()

    def _call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None,
              timeout: float = 10) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.api_port}{path}", data=data,
                                         method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"toxiproxy {method} {path}: {exc.code} {exc.read()!r}") from exc
        return json.loads(text) if text.strip() else None

    def proxy(self, name: str, upstream_port: int) -> int:
        # A port picked here may be taken before toxiproxy binds it: retry.
        for _ in range(20):
            port = free_port()
            try:
                self._make_proxy(name, port, upstream_port)
                self._proxies[name] = (port, upstream_port)
                return port
            except RuntimeError:
                continue
        raise RuntimeError(f"could not make proxy {name}")

    def toxic(self, proxy: str, kind: str, stream: str = "downstream",
              toxicity: float = 1.0, **attributes: int) -> str:
        """Adds a toxic to proxy; its name (for remove_toxic)."""
        name = f"{kind}_{stream}"
        self._change("POST", f"/proxies/{proxy}/toxics",
                     {"name": name, "type": kind, "stream": stream, "toxicity": toxicity,
                      "attributes": attributes})
        return name

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._change("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        self._change("POST", f"/proxies/{proxy}", {"enabled": enabled})

    def reset(self) -> None:
        """Every proxy enabled, every toxic removed."""
        self._change("POST", "/reset")

    def _change(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> None:
        """A change to toxics or proxies. Such a change can wedge
        toxiproxy-server's whole API when a link it must interrupt is stuck
        forwarding to a connection that died (Shopify/toxiproxy#558, open):
        then the server is restarted, its proxies are made again on the same
        ports (which closes every proxied connection, as a fault may), and
        the change is made on the fresh server."""
        try:
            self._call(method, path, body, timeout=5)
            return
        except (TimeoutError, urllib.error.URLError) as exc:
            if isinstance(exc, urllib.error.URLError) and not isinstance(exc.reason, TimeoutError):
                raise
        self._end()
        self._start()
        for name, (port, upstream_port) in self._proxies.items():
            self._make_proxy(name, port, upstream_port)
        self._call(method, path, body)

    def _make_proxy(self, name: str, port: int, upstream_port: int) -> None:
        self._call("POST", "/proxies", {"name": name, "listen": f"127.0.0.1:{port}",
                                        "upstream": f"127.0.0.1:{upstream_port}",
                                        "enabled": True})


class ProxiedNodes:
    """Nodes behind one Toxiproxy proxy each: uris go through the proxies,
    nodes.uris straight to the servers."""

    def __init__(self, nodes: Nodes, toxiproxy: Toxiproxy) -> None:
        self.nodes = nodes
        self.toxiproxy = toxiproxy
        self.names = [f"node{i}" for i in range(len(nodes))]
        self.uris = [f"redis://127.0.0.1:{toxiproxy.proxy(name, port)}"
                     for name, port in zip(self.names, nodes.ports)]

    def toxic(self, i: int, kind: str, stream: str = "downstream", **attributes: int) -> str:
        return self.toxiproxy.toxic(self.names[i], kind, stream, **attributes)

    def ports(self, indexes: Iterable[int]) -> List[int]:
        """The proxies' ports of the nodes with these indexes."""
        return [int(self.uris[i].rsplit(":", 1)[1]) for i in indexes]

    def cut(self, i: int) -> None:
        """Closes every connection to node i and refuses new ones."""
        self.toxiproxy.set_enabled(self.names[i], False)

    def heal(self) -> None:
        self.toxiproxy.reset()


# Ways to impair one node, by name, for scenarios that run under each. Each
# lasts until ProxiedNodes.heal() (or the node's restart), and takes far
# longer than any deadline of the clients.
IMPAIRMENTS = ("down", "killed", "paused", "slow", "cut", "blackhole", "reset", "throttled")


def impair(proxied: ProxiedNodes, i: int, how: str, fault_ms: int) -> None:
    nodes, toxiproxy, name = proxied.nodes, proxied.toxiproxy, proxied.names[i]
    if how == "down":
        nodes.stop_node(i)
    elif how == "killed":
        nodes.kill_node(i)
    elif how == "paused":
        nodes.pause(i, fault_ms)
    elif how == "slow":
        toxiproxy.toxic(name, "latency", latency=fault_ms, jitter=0)
    elif how == "cut":
        proxied.cut(i)
    elif how == "blackhole":
        # Data is dropped and the connection stays open: a silent peer.
        toxiproxy.toxic(name, "timeout", "upstream", timeout=0)
    elif how == "reset":
        # Connections are reset (RST) as soon as data arrives.
        toxiproxy.toxic(name, "reset_peer", "upstream", timeout=0)
    elif how == "throttled":
        # Replies trickle through at 1 KB/s.
        toxiproxy.toxic(name, "bandwidth", rate=1)
    else:
        raise ValueError(f"unknown impairment {how}")


class SentinelGroup:
    """A Sentinel group in dir (scripts/redis-topo.sh): a master, `replicas`
    replicas and three sentinels (quorum 2), each on a free loopback port,
    with short failure detection (down after 1 s). uri is the group's
    redis-sentinel:// URI, name its master's name; servers and sentinels
    their ports."""

    def __init__(self, dir: Path, name: str = "mymaster", replicas: int = 1) -> None:
        self.dir = dir
        self.name = name
        self.uri = self._run("sentinel", str(replicas), "3", name)
        rows = [line.split() for line in self._run("addrs").splitlines()]
        self.index = {int(addr.rsplit(":", 1)[1]): int(i) for i, _, addr in rows}
        self.servers = [int(addr.rsplit(":", 1)[1]) for _, kind, addr in rows if kind == "server"]
        self.sentinels = [int(addr.rsplit(":", 1)[1]) for _, kind, addr in rows
                          if kind == "sentinel"]

    def _run(self, command: str, *args: str) -> str:
        out = subprocess.run([str(TOPO_SCRIPT), command, str(self.dir), *args], check=True,
                             stdout=subprocess.PIPE, text=True, timeout=120)
        return out.stdout.strip()

    def cli(self, port: int, *command: str, check: bool = True) -> str:
        result = subprocess.run(["redis-cli", "-p", str(port), *command], capture_output=True,
                                text=True, timeout=30)
        if check and result.returncode != 0:
            raise RuntimeError(f"redis-cli -p {port} {' '.join(command)}: {result.stderr}")
        return result.stdout.strip()

    def pid(self, port: int) -> int:
        return int((self.dir / str(self.index[port]) / "pid").read_text())

    def kill(self, port: int) -> None:
        """kill -9 of the process on port."""
        self._run("kill", str(self.index[port]))

    def restart(self, port: int, data: bool = True) -> None:
        self._run("restart", str(self.index[port]), *([] if data else ["--no-data"]))

    def master(self) -> int:
        """The master's port, as the first sentinel names it."""
        reply = self.cli(self.sentinels[0], "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.name)
        return int(reply.split()[1])

    def role(self, port: int) -> str:
        return self.cli(port, "ROLE").split()[0]

    def settle(self) -> None:
        """Waits until every sentinel names the master and every other
        server replicates it, in sync."""
        self._run("master")
        master = self.master()
        wait_until(lambda: all("master_link_status:up" in self.cli(port, "INFO", "replication",
                                                                    check=False)
                               for port in self.servers if port != master and self.running(port)),
                   60, "the replicas to be in sync")

    def running(self, port: int) -> bool:
        return (self.dir / str(self.index[port]) / "pid").exists()

    def failover(self, settle: bool = True) -> int:
        """SENTINEL FAILOVER, then waits until the first sentinel names the
        new master (and with settle, until every sentinel does and the
        others are its replicas, in sync): the new master's port."""
        if settle:
            return int(self._run("failover").rsplit(":", 1)[1])
        old = self.master()
        assert self.cli(self.sentinels[0], "SENTINEL", "FAILOVER", self.name) == "OK"
        wait_until(lambda: self.master() != old and self.role(self.master()) == "master", 60,
                   "the new master")
        return self.master()

    def kill_master(self) -> int:
        """kill -9 of the master: its port (the sentinels fail over)."""
        port = self.master()
        self.kill(port)
        return port

    def restart_as_replica(self, port: int) -> None:
        """Once the sentinels name another master, starts the server of port
        again, empty: they make it a replica."""
        wait_until(lambda: self.master() != port and self.role(self.master()) == "master", 60,
                   "the sentinels to promote a replica")
        self.restart(port, data=False)

    def stop(self) -> None:
        self._run("stop")


class Cluster:
    """A Redis Cluster in dir (scripts/redis-topo.sh): three masters with
    `replicas` replicas each, on free loopback ports (cluster-node-timeout
    2 s). uri is its redis-cluster:// URI; ports every process's, masters
    the first three."""

    def __init__(self, dir: Path, replicas: int = 1) -> None:
        self.dir = dir
        self.uri = self._run("cluster", "3", str(replicas))
        rows = [line.split() for line in self._run("addrs").splitlines()]
        self.index = {int(addr.rsplit(":", 1)[1]): int(i) for i, _, addr in rows}
        self.ports = [int(addr.rsplit(":", 1)[1]) for _, _, addr in rows]

    def _run(self, command: str, *args: str) -> str:
        out = subprocess.run([str(TOPO_SCRIPT), command, str(self.dir), *args], check=True,
                             stdout=subprocess.PIPE, text=True, timeout=120)
        return out.stdout.strip()

    def cli(self, port: int, *command: str) -> str:
        result = subprocess.run(["redis-cli", "-p", str(port), *command], capture_output=True,
                                text=True, timeout=30, check=True)
        return result.stdout.strip()

    def slot(self, key: str) -> int:
        return int(self.cli(self.ports[0], "CLUSTER", "KEYSLOT", key))

    def node_ids(self) -> Dict[int, str]:
        """Port -> cluster node id, of every process."""
        return {port: self.cli(port, "CLUSTER", "MYID") for port in self.ports}

    def owner(self, key: str) -> int:
        """The port of the master that serves key's slot, as CLUSTER NODES on
        the first process that answers says."""
        slot = self.slot(key)
        for port in self.ports:
            try:
                lines = self.cli(port, "CLUSTER", "NODES").splitlines()
            except subprocess.CalledProcessError:
                continue
            for line in lines:
                fields = line.split()
                if "master" not in fields[2].split(","):
                    continue
                for served in fields[8:]:
                    if served.startswith("["):
                        continue   # a migration under way, not ownership
                    first, _, last = served.partition("-")
                    if int(first) <= slot <= int(last or first):
                        return int(fields[1].split("@")[0].rsplit(":", 1)[1])
        raise RuntimeError(f"no master serves slot {slot}")

    def replica_of(self, master: int) -> int:
        ids = self.node_ids()
        for port in self.ports:
            role = self.cli(port, "ROLE").split()
            if role[0] == "slave" and int(role[2]) == master:
                return port
        raise RuntimeError(f"no replica of {master} ({ids[master]})")

    def failover(self, replica: int) -> None:
        """CLUSTER FAILOVER on replica (its master agrees): waits until it is
        a master and every process's map says so."""
        assert self.cli(replica, "CLUSTER", "FAILOVER") == "OK"
        wait_until(lambda: self.cli(replica, "ROLE").split()[0] == "master", 30,
                   "the replica to be promoted")
        my_id = self.cli(replica, "CLUSTER", "MYID")
        wait_until(lambda: all(f"{my_id} " in self.cli(port, "CLUSTER", "NODES")
                               and any(line.startswith(my_id) and "master" in line
                                       for line in self.cli(port, "CLUSTER", "NODES").splitlines())
                               for port in self.ports), 30, "every process to see the failover")

    def migrate(self, key: str, to: int, finish: bool = True) -> int:
        """Moves key's slot (and its keys) from its master to the master on
        port to, as redis-cli --cluster reshard does: SETSLOT IMPORTING and
        MIGRATING, MIGRATE of every key; with finish, SETSLOT NODE on both.
        Returns the slot."""
        slot = str(self.slot(key))
        source = self.owner(key)
        ids = self.node_ids()
        assert self.cli(to, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[source]) == "OK"
        assert self.cli(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to]) == "OK"
        for name in self.cli(source, "CLUSTER", "GETKEYSINSLOT", slot, "1000").split():
            self.cli(source, "MIGRATE", "127.0.0.1", str(to), name, "0", "5000")
        if finish:
            self.finish(int(slot), source, to)
        return int(slot)

    def kill(self, port: int) -> None:
        """kill -9 of the process on port."""
        self._run("kill", str(self.index[port]))

    def finish(self, slot: int, source: int, to: int) -> None:
        ids = self.node_ids()
        for port in (to, source):
            assert self.cli(port, "CLUSTER", "SETSLOT", str(slot), "NODE", ids[to]) == "OK"

    def stop(self) -> None:
        self._run("stop")
