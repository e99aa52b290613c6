"""rediss:// nodes from Python, sync (the C library's TLS, with the
system's OpenSSL 3 loaded at run time) and asyncio (the loop's own
ssl.SSLContext), against TLS-only redis-server nodes with certificates made
for the test: locks work; a wrong CA, an expired certificate and a name
that does not match are TLSError naming each node and the certificate
problem; tls_verify=0 takes any certificate; a node that requires client
certificates gets one from tls_cert_file and tls_key_file."""

import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

import redlock
import redlock.asyncio as aredlock


def values(nodes, key: str) -> List[str]:
    """key's value on every node, read over its unix socket (in the clear)."""
    return [subprocess.run(["redis-cli", "-s", socket.replace("unix://", ""), "GET", key],
                           check=True, capture_output=True, text=True).stdout.strip()
            for socket in nodes.sockets]


def options(certs: Path, ca: str = "ca.crt", **more: Any) -> Dict[str, Any]:
    return dict(tls_ca_file=str(certs / ca), connect_timeout_ms=5000, node_timeout_ms=2000,
                **more)


def assert_refused(error: redlock.TLSError, nodes, problem: str) -> None:
    message = str(error)
    assert error.code == redlock.capi.REDLOCK_ETLS
    for uri in nodes.uris:
        assert uri.replace("rediss://", "") in message, message
    assert problem in message, message


def test_sync_locks_over_tls(tls_nodes, tls_certs, prefix):
    nodes = tls_nodes()
    assert all(uri.startswith("rediss://") for uri in nodes.uris)
    with redlock.Redlock(nodes.uris, key_prefix=prefix, **options(tls_certs)) as client:
        lock = client.get_lock("job")
        assert lock.try_lock(lease=10.0)
        assert values(nodes, prefix + "job") == [lock.token] * 3
        lock.extend(20.0)
        assert lock.locked()
        lock.unlock()
        with client.lock("scoped", lease=5.0):
            pass


@pytest.mark.parametrize("kind,ca,extra,problem", [
    ("valid", "other-ca.crt", {}, "TLS certificate check failed: "),
    ("expired", "ca.crt", {}, "TLS certificate check failed: certificate has expired"),
    ("valid", "ca.crt", {"tls_server_name": "not-this-node.example"},
     "TLS certificate check failed: hostname mismatch"),
], ids=["wrong-ca", "expired", "name-mismatch"])
def test_sync_certificate_problems_are_tls_errors(tls_nodes, tls_certs, prefix, kind, ca,
                                                  extra, problem):
    nodes = tls_nodes(1 if kind == "expired" else 3, kind)
    with redlock.Redlock(nodes.uris, key_prefix=prefix, **options(tls_certs, ca, **extra)) as c:
        with pytest.raises(redlock.TLSError) as failed:
            c.get_lock("job").try_lock(wait=1.0, lease=10.0)
        assert_refused(failed.value, nodes, problem)


def test_sync_verification_off_and_client_certificates(tls_nodes, tls_certs, prefix):
    nodes = tls_nodes()
    with redlock.Redlock(nodes.uris, key_prefix=prefix,
                         **options(tls_certs, "other-ca.crt", tls_verify=0)) as client:
        assert client.get_lock("job").try_lock(lease=10.0)
    mutual = tls_nodes(1, "mutual")
    with redlock.Redlock(mutual.uris, key_prefix=prefix, **options(tls_certs)) as client:
        with pytest.raises(redlock.TLSError):
            client.get_lock("job").try_lock(lease=10.0)
    with redlock.Redlock(mutual.uris, key_prefix=prefix, **options(
            tls_certs, tls_cert_file=str(tls_certs / "client.crt"),
            tls_key_file=str(tls_certs / "client.key"))) as client:
        lock = client.get_lock("job")
        assert lock.try_lock(lease=10.0)
        lock.unlock()


@pytest.mark.asyncio
async def test_asyncio_locks_over_tls(tls_nodes, tls_certs, prefix):
    nodes = tls_nodes()
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix, **options(tls_certs)) as client:
        lock = client.get_lock("job")
        assert await lock.try_lock(lease=10.0)
        assert values(nodes, prefix + "job") == [lock.token] * 3
        await lock.extend(20.0)
        assert await lock.locked()
        await lock.unlock()
        async with client.lock("scoped", lease=5.0):
            pass
    # The sync and asyncio clients exclude each other over TLS.
    with redlock.Redlock(nodes.uris, key_prefix=prefix, **options(tls_certs)) as sync:
        held = sync.get_lock("shared")
        assert held.try_lock(lease=10.0)
        async with aredlock.Redlock(nodes.uris, key_prefix=prefix, **options(tls_certs)) as other:
            assert not await other.get_lock("shared").try_lock(lease=10.0)
        held.unlock()


@pytest.mark.asyncio
@pytest.mark.parametrize("kind,ca,extra,problem", [
    ("valid", "other-ca.crt", {}, "TLS certificate check failed: "),
    ("expired", "ca.crt", {}, "TLS certificate check failed: certificate has expired"),
    ("valid", "ca.crt", {"tls_server_name": "not-this-node.example"},
     "TLS certificate check failed: Hostname mismatch"),
    ("valid", "missing.crt", {}, "tls_ca_file '"),
], ids=["wrong-ca", "expired", "name-mismatch", "missing-ca-file"])
async def test_asyncio_certificate_problems_are_tls_errors(tls_nodes, tls_certs, prefix, kind,
                                                          ca, extra, problem):
    nodes = tls_nodes(1 if kind == "expired" else 3, kind)
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix,
                                **options(tls_certs, ca, **extra)) as client:
        with pytest.raises(redlock.TLSError) as failed:
            await client.get_lock("job").try_lock(wait=1.0, lease=10.0)
        assert_refused(failed.value, nodes, problem)


@pytest.mark.asyncio
async def test_asyncio_verification_off_and_client_certificates(tls_nodes, tls_certs, prefix):
    nodes = tls_nodes()
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix,
                                **options(tls_certs, "other-ca.crt", tls_verify=0)) as client:
        assert await client.get_lock("job").try_lock(lease=10.0)
    mutual = tls_nodes(1, "mutual")
    async with aredlock.Redlock(mutual.uris, key_prefix=prefix, **options(tls_certs)) as client:
        with pytest.raises(redlock.TLSError):
            await client.get_lock("job").try_lock(lease=10.0)
    async with aredlock.Redlock(mutual.uris, key_prefix=prefix, **options(
            tls_certs, tls_cert_file=str(tls_certs / "client.crt"),
            tls_key_file=str(tls_certs / "client.key"))) as client:
        lock = client.get_lock("job")
        assert await lock.try_lock(lease=10.0)
        await lock.unlock()


@pytest.mark.asyncio
async def test_asyncio_waiter_is_woken_by_the_release_over_tls(tls_nodes, tls_certs, prefix):
    """The subscribers of redlock.asyncio connect over TLS too: a waiter that
    pauses 5 s between attempts gets the lock soon after the release."""
    import asyncio
    import time

    nodes = tls_nodes()
    with redlock.Redlock(nodes.uris, key_prefix=prefix, **options(tls_certs)) as holder:
        held = holder.get_lock("woken")
        assert held.try_lock(lease=10.0)
        async with aredlock.Redlock(nodes.uris, key_prefix=prefix, retry_delay_ms=5000,
                                    retry_jitter_ms=0, **options(tls_certs)) as client:
            waiter = asyncio.ensure_future(client.get_lock("woken").try_lock(wait=8.0,
                                                                             lease=10.0))
            await asyncio.sleep(1.0)
            released = time.monotonic()
            held.unlock()
            assert await waiter
            assert time.monotonic() - released < 3.0
