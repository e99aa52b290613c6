"""Fixtures of the fault scenarios: five fresh redis-server nodes per test,
a Toxiproxy server with one proxy per node, and clients that are closed
after the test. Nothing is left running afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator, List

import pytest

import redlock
from assertions import CONNECT_TIMEOUT_MS, NODE_TIMEOUT_MS
from harness import Nodes, ProxiedNodes, Toxiproxy, toxiproxy_binary


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[Nodes]:
    started = Nodes(tmp_path / "nodes", 5)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def toxiproxy(tmp_path: Path) -> Iterator[Toxiproxy]:
    binary = toxiproxy_binary()
    if binary is None:
        pytest.skip("toxiproxy-server is not installed (scripts/toxiproxy.sh install)")
    proxy = Toxiproxy(binary, tmp_path / "toxiproxy.log")
    try:
        yield proxy
    finally:
        proxy.stop()


@pytest.fixture
def proxied(nodes: Nodes, toxiproxy: Toxiproxy) -> ProxiedNodes:
    return ProxiedNodes(nodes, toxiproxy)


ClientFactory = Callable[..., redlock.Redlock]


@pytest.fixture
def make_client() -> Iterator[ClientFactory]:
    """make_client(uris, **options): a client with short deadlines (unless
    the options say otherwise), closed at the end of the test."""
    made: List[redlock.Redlock] = []

    def make(uris: List[str], **options: object) -> redlock.Redlock:
        options.setdefault("node_timeout_ms", NODE_TIMEOUT_MS)
        options.setdefault("connect_timeout_ms", CONNECT_TIMEOUT_MS)
        client = redlock.Redlock(uris, **options)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()

