"""Fixtures: real redis-server nodes, started here and stopped at the end."""

import asyncio
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, NamedTuple

import pytest

import redlock

ROOT = Path(__file__).resolve().parents[3]
NODES_SCRIPT = ROOT / "scripts" / "redis-nodes.sh"
CERTS_SCRIPT = ROOT / "tests" / "support" / "tls-certs.sh"


class Nodes(NamedTuple):
    dir: Path
    uris: List[str]  # redis://127.0.0.1:PORT
    sockets: List[str]  # unix:///.../redis.sock, the same nodes


def start_nodes(path: Path, n: int, **env: str) -> Nodes:
    """Starts n nodes in path with scripts/redis-nodes.sh, env added to its
    environment (REDIS_NO_SCRIPTING, say)."""
    subprocess.run([str(NODES_SCRIPT), "start", str(path), str(n)], check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, **env})
    return Nodes(path, (path / "uris").read_text().split(),
                 (path / "sockets").read_text().split())


def stop_nodes(nodes: Nodes) -> None:
    subprocess.run([str(NODES_SCRIPT), "stop", str(nodes.dir)], check=True)


@pytest.fixture(scope="session")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    """Five independent nodes for the whole session."""
    started = start_nodes(tmp_path_factory.mktemp("nodes"), 5)
    try:
        yield started
    finally:
        stop_nodes(started)


@pytest.fixture(scope="session")
def tls_certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The TLS tests' certificates (tests/support/tls-certs.sh says which)."""
    path = tmp_path_factory.mktemp("certs")
    subprocess.run(["bash", str(CERTS_SCRIPT), str(path)], check=True)
    return path


@pytest.fixture(scope="session")
def tls_nodes(tmp_path_factory: pytest.TempPathFactory, tls_certs: Path) -> Iterator[Callable[..., Nodes]]:
    """A factory of TLS-only nodes (rediss:// URIs): tls_nodes(n, "valid" |
    "expired" | "mutual"), started once per kind for the session."""
    started: Dict[str, Nodes] = {}

    def start(n: int = 3, kind: str = "valid") -> Nodes:
        if kind not in started:
            path = tmp_path_factory.mktemp(f"tls-{kind}")
            env = dict(os.environ)
            if kind == "expired":
                env["NODES_TLS_CERT"] = str(tls_certs / "expired.crt")
            args = ["--tls-auth-clients"] if kind == "mutual" else []
            subprocess.run([str(NODES_SCRIPT), "start", str(path), str(n), "--tls",
                            str(tls_certs), *args], check=True, stdout=subprocess.DEVNULL,
                           env=env)
            started[kind] = Nodes(path, (path / "uris").read_text().split(),
                                  (path / "sockets").read_text().split())
        return started[kind]

    yield start
    for nodes in started.values():
        subprocess.run([str(NODES_SCRIPT), "stop", str(nodes.dir)], check=True)


def redis_cli(uri: str, *command: str) -> str:
    """Runs one command on a node and returns its reply as text."""
    return subprocess.run(["redis-cli", "-u", uri, *command], check=True,
                          capture_output=True, text=True).stdout.strip()


def on_every_node(nodes: Nodes, *command: str) -> List[str]:
    return [redis_cli(uri, *command) for uri in nodes.uris]


def record_group(nodes: Nodes, prefix: str) -> None:
    """Writes the nodes' records of each other under prefix (restart_records'
    <prefix>redlock:members), as a group in use holds them: the first lock
    is then taken in one round, as any later one."""
    ids = [line.split(":", 1)[1] for info in on_every_node(nodes, "INFO", "server")
           for line in info.splitlines() if line.startswith("run_id:")]
    on_every_node(nodes, "SET", prefix + "redlock:members", " ".join(ids))


@pytest.fixture
def prefix(request: pytest.FixtureRequest) -> str:
    """A key prefix of this test's own, so tests never share keys."""
    return f"{request.node.name}:"


@pytest.fixture
def client(nodes: Nodes, prefix: str) -> Iterator[redlock.Redlock]:
    with redlock.Redlock(nodes.uris, key_prefix=prefix) as c:
        yield c


@pytest.fixture
def other(nodes: Nodes, prefix: str) -> Iterator[redlock.Redlock]:
    """A second, independent client on the same nodes and keys."""
    with redlock.Redlock(nodes.uris, key_prefix=prefix) as c:
        yield c


@pytest.fixture
def missing_sockets(tmp_path: Path) -> List[str]:
    """URIs of nodes that do not exist: connecting fails at once."""
    return [f"unix://{tmp_path}/missing{i}.sock" for i in range(3)]


class ExtraNode:
    """One more redis-server with extra settings, on a unix socket."""

    def __init__(self, path: Path, *args: str) -> None:
        path.mkdir()
        self.socket = path / "redis.sock"
        self.process = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", str(self.socket),
             "--dir", str(path), "--save", "", "--appendonly", "no", *args],
            stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not self.listening():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("redis-server did not start")
            time.sleep(0.01)

    def listening(self) -> bool:
        # The socket's file appears when it is bound, before the server
        # listens: until then a connection is refused.
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(str(self.socket))
            except OSError:
                return False
        return True

    def uri(self, credentials: str = "") -> str:
        return f"unix://{credentials}{self.socket}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def extra_node(tmp_path: Path) -> Iterator[Callable[..., ExtraNode]]:
    """A factory of ExtraNode, stopping every node it made."""
    made: List[ExtraNode] = []

    def start(*args: str) -> ExtraNode:
        node = ExtraNode(tmp_path / f"extra{len(made)}", *args)
        made.append(node)
        return node

    yield start
    for node in made:
        node.stop()


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> Dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    """The async tests run on asyncio's own loop and on uvloop."""
    import uvloop

    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
