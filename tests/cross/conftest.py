"""Fixtures of the cross-language tests: five local nodes of their own, and
topologies (a Sentinel group, a Redis Cluster) of their own."""

import subprocess
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

NODES_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "redis-nodes.sh"
TOPO_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "redis-topo.sh"


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[List[str]]:
    """Five redis-server nodes for the module's tests: their URIs."""
    path = tmp_path_factory.mktemp("nodes")
    subprocess.run([str(NODES_SCRIPT), "start", str(path), "5"], check=True,
                   stdout=subprocess.DEVNULL)
    try:
        yield (path / "uris").read_text().split()
    finally:
        subprocess.run([str(NODES_SCRIPT), "stop", str(path)], check=True)


class Topology:
    """A Sentinel group or a Redis Cluster of local processes, started by
    scripts/redis-topo.sh in a directory of its own.

    ``uri`` is what the library takes (redis-sentinel://... or
    redis-cluster://...). Processes are numbered as the script numbers them:
    a Sentinel group's servers (0 the first master), then its sentinels; a
    Cluster's masters, then their replicas.
    """

    def __init__(self, path: Path, kind: str, *args: str) -> None:
        self.path = path
        self.kind = kind
        self.uri = self._run(kind, *args)

    def _run(self, *args: str) -> str:
        command = args[0]
        out = subprocess.run([str(TOPO_SCRIPT), command, str(self.path), *args[1:]],
                             check=True, stdout=subprocess.PIPE, text=True)
        return out.stdout.strip()

    def addrs(self) -> List[Tuple[int, str, str]]:
        """(number, kind, "127.0.0.1:PORT") of every process; kind is
        server, sentinel or node."""
        rows = [line.split() for line in self._run("addrs").splitlines()]
        return [(int(i), kind, addr) for i, kind, addr in rows]

    def master(self) -> str:
        """A Sentinel group's master, as every sentinel names it: host:port."""
        return self._run("master")

    def failover(self) -> str:
        """SENTINEL FAILOVER, waiting until every sentinel names the new master
        and every other server replicates it: its host:port."""
        return self._run("failover")

    def kill(self, i: int) -> None:
        """SIGKILL process i."""
        self._run("kill", str(i))

    def restart(self, i: int, data: bool = True) -> None:
        """Starts process i again on its port: with its data, or empty."""
        self._run("restart", str(i), *([] if data else ["--no-data"]))

    def stop(self) -> None:
        self._run("stop")


@pytest.fixture(scope="module")
def sentinel_group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    """A master, two replicas and three sentinels (quorum 2) watching it as
    "mymaster", for the module's tests."""
    topology = Topology(tmp_path_factory.mktemp("sentinel"), "sentinel", "2", "3", "mymaster")
    try:
        yield topology
    finally:
        topology.stop()


@pytest.fixture(scope="module")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    """A Redis Cluster of three masters with one replica each, for the
    module's tests."""
    topology = Topology(tmp_path_factory.mktemp("cluster"), "cluster", "3", "1")
    try:
        yield topology
    finally:
        topology.stop()
