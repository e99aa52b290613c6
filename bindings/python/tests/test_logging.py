"""The "redlock" logger is a library's: a NullHandler and nothing else, so
an application that configures no logging gets nothing on stderr."""

import logging
import os
import socket
import subprocess
import sys

import redlock  # noqa: F401  (the logger is made on import)

# A lock on one node that nobody listens on: the node_down and no_quorum
# events, both at WARNING, the level logging's last-resort handler prints.
PROGRAM = """
import logging, sys
import redlock
if sys.argv[2] == "configured":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
client = redlock.Redlock([sys.argv[1]], connect_timeout_ms=200)
try:
    client.get_lock("quiet").acquire(blocking=False)
except redlock.NoQuorum:
    print("no quorum")
client.close()
"""


def closed_port_uri() -> str:
    """A 127.0.0.1 port that nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"redis://127.0.0.1:{port}"


def run(how: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROGRAM, closed_port_uri(), how],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))


def test_the_logger_has_a_null_handler_and_nothing_else():
    handlers = logging.getLogger("redlock").handlers
    assert [type(h) for h in handlers] == [logging.NullHandler]


def test_no_logging_configured_prints_nothing():
    quiet = run("unconfigured")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == "no quorum\n"
    assert quiet.stderr == ""
    # The same events do reach an application that configures logging.
    loud = run("configured")
    assert loud.returncode == 0, loud.stderr
    assert "WARNING node_down node=127.0.0.1:" in loud.stderr
    assert "WARNING no_quorum op=lock resource=quiet" in loud.stderr
