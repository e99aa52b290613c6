"""What the FFI tests share: three local nodes, and reading a key."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def uris(tmp_path_factory):
    path = tmp_path_factory.mktemp("nodes")
    script = str(ROOT / "scripts" / "redis-nodes.sh")
    out = subprocess.run([script, "start", str(path), "3"], check=True,
                         capture_output=True, text=True).stdout
    try:
        yield out.split()
    finally:
        subprocess.run([script, "stop", str(path)], check=True)


def get_key(uri, key):
    return subprocess.run(["redis-cli", "-u", uri, "GET", key], check=True,
                          capture_output=True, text=True).stdout.strip()
