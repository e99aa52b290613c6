"""No event the Python binding logs, at any level, shows a password or a
whole token; nor does client.health(). A session with a password goes
through what produces events: locks, a kept lock renewed then lost, nodes
paused, stopped and restarted, a wrong password, ping.

Run by CTest with PYTHONPATH naming the built package; starts its own nodes."""

import logging
import re
import subprocess
import time
from pathlib import Path

import pytest

import redlock
import redlock.asyncio

ROOT = Path(__file__).resolve().parents[2]
NODES_SCRIPT = ROOT / "scripts" / "redis-nodes.sh"
PASSWORD = "Py-p@ss:w/rd x#9"
ENCODED = "Py-p%40ss%3Aw%2Frd%20x%239"
SECRETS = [PASSWORD, ENCODED, "w/rd x#9", "w%2Frd"]
HEX_RUN = re.compile(r"[0-9a-fA-F]{32}")


class Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.getMessage()} {record.__dict__}")


@pytest.fixture
def nodes(tmp_path: Path):
    path = tmp_path / "nodes"
    subprocess.run([str(NODES_SCRIPT), "start", str(path), "3"], check=True,
                   stdout=subprocess.DEVNULL)
    for i in (1, 2, 3):
        subprocess.run(["redis-cli", "-s", str(path / str(i) / "redis.sock"), "CONFIG", "SET",
                        "requirepass", PASSWORD], check=True, stdout=subprocess.DEVNULL)
    try:
        yield path
    finally:
        subprocess.run([str(NODES_SCRIPT), "stop", str(path)], check=True)


def cli(path: Path, i: int, *command: str) -> None:
    subprocess.run(["redis-cli", "-s", str(path / str(i) / "redis.sock"), "--no-auth-warning",
                    "-a", PASSWORD, *command], check=True, stdout=subprocess.DEVNULL)


def test_no_event_nor_health_shows_a_password_or_a_token(nodes: Path) -> None:
    logger = logging.getLogger("redlock")
    handler = Everything()
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    uris = [u.replace("redis://", f"redis://:{ENCODED}@")
            for u in (nodes / "uris").read_text().split()]
    wrong = [u.replace("redis://", f"redis://:x{ENCODED}@")
             for u in (nodes / "uris").read_text().split()]
    tokens = []
    try:
        with redlock.Redlock(uris, watchdog_lease_ms=900, node_timeout_ms=300,
                             retry_delay_ms=20) as client, \
                redlock.Redlock(wrong, node_timeout_ms=300) as refused:
            lock = client.get_lock("secret")
            assert lock.try_lock(lease=30.0)
            tokens.append(lock.token)
            lock.extend(30.0)
            assert client.ping() == 3
            with pytest.raises(redlock.AuthError):
                refused.get_lock("secret").try_lock()
            kept = client.get_lock("kept")
            assert kept.try_lock()
            tokens.append(kept.token)
            for i in (1, 2):
                cli(nodes, i, "CLIENT", "PAUSE", "2500", "ALL")
            end = time.monotonic() + 4
            while not kept.lost and time.monotonic() < end:
                time.sleep(0.01)
            assert kept.lost
            time.sleep(2.6)   # the pause ends
            subprocess.run([str(NODES_SCRIPT), "stop-node", str(nodes), "3"], check=True)
            assert client.ping() == 2
            subprocess.run([str(NODES_SCRIPT), "start-node", str(nodes), "3"], check=True)
            cli(nodes, 3, "CONFIG", "SET", "requirepass", PASSWORD)
            time.sleep(1.1)
            client.ping()
            lock.unlock()
            health = str(client.health()) + str(refused.health())
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    events = {line.split()[1] for line in handler.lines}
    assert {"acquired", "extended", "released", "auth_refused", "renewal_failed", "lost",
            "node_down", "node_back", "node_restarted"} <= events, events
    for line in handler.lines:
        for secret in SECRETS + tokens:
            assert secret not in line, line
        assert not HEX_RUN.search(line), line
    for secret in SECRETS + tokens:
        assert secret not in health, health
    assert "auth_refused" in health


def test_a_uri_error_shows_nothing_before_the_last_at() -> None:
    with pytest.raises(redlock.InvalidArgument) as refused:
        redlock.Redlock(["redis://:Xy@SecretTail/9@host/x"])
    message = str(refused.value)
    assert "Xy" not in message and "Secret" not in message, message
    assert "'redis://***@host/x': db must be a number" in message, message
    with pytest.raises(redlock.InvalidArgument) as refused:
        redlock.asyncio.Redlock(["rediss://u:Xy@Secret?Tail@host:0"])
    assert "Secret" not in str(refused.value) and "***@host:0" in str(refused.value)


def test_events_escape_a_names_control_bytes(tmp_path: Path) -> None:
    path = tmp_path / "nodes"
    subprocess.run([str(NODES_SCRIPT), "start", str(path), "1"], check=True,
                   stdout=subprocess.DEVNULL)
    logger = logging.getLogger("redlock")
    handler = Everything()
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with redlock.Redlock((path / "uris").read_text().split()) as client:
            lock = client.get_lock("job\n[error] lost\x1b[31m\x7f")
            assert lock.try_lock(lease=10.0)
            lock.unlock()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        subprocess.run([str(NODES_SCRIPT), "stop", str(path)], check=True)
    acquired = [line for line in handler.lines if " acquired " in line]
    assert acquired and "resource=job\\n[error] lost\\x1b[31m\\x7f" in acquired[0], acquired
    for line in handler.lines:
        assert not any(ord(c) < 0x20 or ord(c) == 0x7F for c in line), line
