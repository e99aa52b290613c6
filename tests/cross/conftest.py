"""Fixtures of the cross-language tests: five local nodes of their own."""

import subprocess
from pathlib import Path
from typing import Iterator, List

import pytest

NODES_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "redis-nodes.sh"


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
