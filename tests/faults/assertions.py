"""What the fault scenarios share: the clients' deadlines, and checks."""

from __future__ import annotations

import contextlib
import time
from typing import Iterator, List

import pytest

import redlock

# Deadlines of the clients under test. A failure is expected to take about
# one of them; SLACK covers a machine busy with other builds.
NODE_TIMEOUT_MS = 250
CONNECT_TIMEOUT_MS = 250
SLACK = 1.0

# How long a fault lasts where a test must not wait for its end: far longer
# than any bound asserted while it lasts.
LONG_FAULT_MS = 8000


@contextlib.contextmanager
def timed() -> Iterator[List[float]]:
    """with timed() as t: ...; t[0] is the block's duration in seconds."""
    result: List[float] = []
    start = time.monotonic()
    try:
        yield result
    finally:
        result.append(time.monotonic() - start)


def expect_failure(client: redlock.Redlock, name: str, error: type, lease: float = 10.0,
                   wait: float = 0.0) -> str:
    """Asserts that acquiring name fails with error (a redlock.LockError
    class); returns the library's detail. try_lock would say only False."""
    with pytest.raises(error) as caught:
        with client.lock(name, lease=lease, wait=wait):
            pass
    return str(caught.value)
