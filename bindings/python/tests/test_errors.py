"""Each failure raises its own exception, with the code and the detail."""

import logging
import math
import re
import threading
import time

import pytest

import redlock
from redlock import capi
from redlock.errors import ERRORS
from conftest import on_every_node


def test_every_status_code_has_its_exception():
    codes = {getattr(capi, name) for name in dir(capi)
             if name.startswith("REDLOCK_E")}
    assert set(ERRORS) == codes
    for code, error in ERRORS.items():
        assert issubclass(error, redlock.LockError)
        exc = error(code, "detail")
        assert exc.code == code and str(exc) == "detail"
    assert len(set(ERRORS.values())) == len(ERRORS)


def test_python_exception_bases():
    assert issubclass(redlock.InvalidArgument, ValueError)
    assert issubclass(redlock.LockNotHeld, RuntimeError)
    assert issubclass(redlock.OutOfMemory, MemoryError)
    assert issubclass(redlock.SystemCallError, OSError)


def test_without_detail_the_message_is_the_code_description():
    assert str(redlock.LockError(capi.REDLOCK_ENOQUORUM)) == capi.redlock_strerror(
        capi.REDLOCK_ENOQUORUM)


@pytest.mark.parametrize("uri, words", [
    ("redis://", "no host"),
    ("redis://127.0.0.1:99999", "port"),
    ("http://127.0.0.1", "scheme"),
    ("unix://relative.sock", "absolute"),
])
def test_bad_uri(uri, words):
    with pytest.raises(redlock.InvalidArgument) as failed:
        redlock.Redlock([uri])
    assert failed.value.code == capi.REDLOCK_EINVAL
    assert words in str(failed.value)


def test_rediss_uris_take_the_same_form():
    redlock.Redlock(["rediss://user:pw@127.0.0.1:6380/1"]).close()
    with pytest.raises(redlock.InvalidArgument, match="bad rediss:// URI"):
        redlock.Redlock(["rediss://127.0.0.1:0"])
    assert redlock.errors.error_for(capi.REDLOCK_ETLS, "x").__class__ is redlock.TLSError


def test_same_node_twice(nodes):
    with pytest.raises(redlock.InvalidArgument, match="same"):
        redlock.Redlock([nodes.uris[0], nodes.uris[0]])


def test_no_nodes():
    with pytest.raises(redlock.InvalidArgument):
        redlock.Redlock([])


def test_unknown_option(nodes):
    with pytest.raises(redlock.InvalidArgument, match="lease_ms") as failed:
        redlock.Redlock(nodes.uris, lease_ms=10)
    assert failed.value.code == capi.REDLOCK_EINVAL


@pytest.mark.parametrize("value", ["abc", -5, 1.5])
def test_bad_option_value(nodes, value):
    with pytest.raises(redlock.InvalidArgument, match="node_timeout_ms"):
        redlock.Redlock(nodes.uris, node_timeout_ms=value)


@pytest.mark.parametrize("value", [None, True, [1], b"10"])
def test_option_value_of_wrong_type(nodes, value):
    with pytest.raises(TypeError, match="node_timeout_ms"):
        redlock.Redlock(nodes.uris, node_timeout_ms=value)


def test_options_are_applied(nodes, prefix):
    with redlock.Redlock(nodes.uris, key_prefix=prefix + "p:", node_timeout_ms=200,
                         drift_factor=0.02, pool_size=2) as client:
        lock = client.get_lock("job")
        assert lock.try_lock(lease=10.0)
        assert on_every_node(nodes, "GET", prefix + "p:job") == [lock.token] * 5
        # drift: 10 s * 0.02 + 2 ms are taken off the validity.
        assert lock.validity <= 10.0 - 0.2
        lock.unlock()


def test_wrong_password(extra_node):
    node = extra_node("--requirepass", "s3cret")
    with redlock.Redlock([node.uri(":Hunter2x@")]) as client:
        with pytest.raises(redlock.AuthError) as failed:
            client.get_lock("job").try_lock()
    assert failed.value.code == capi.REDLOCK_EAUTH
    assert str(node.socket) in str(failed.value)
    assert "Hunter2x" not in str(failed.value)

    with redlock.Redlock([node.uri(":s3cret@")]) as client:
        assert client.get_lock("job").try_lock()


def test_key_of_another_type(client, nodes, prefix):
    on_every_node(nodes, "HSET", prefix + "job", "field", "value")
    with pytest.raises(redlock.WrongTypeError) as failed:
        client.get_multi_lock("job", "other").try_lock()
    assert failed.value.code == capi.REDLOCK_EWRONGTYPE
    assert "WRONGTYPE" in str(failed.value)


def test_redis_error(extra_node):
    node = extra_node("--maxmemory", "1", "--maxmemory-policy", "noeviction")
    with redlock.Redlock([node.uri()]) as client:
        with pytest.raises(redlock.RedisError) as failed:
            client.get_lock("job").try_lock()
    assert failed.value.code == capi.REDLOCK_EREDIS
    assert "OOM" in str(failed.value)


def test_lease_used_up_while_acquiring(client):
    # The drift allowance alone (2 ms) is more than a 1 ms lease.
    with pytest.raises(redlock.LockExpired) as failed:
        client.get_lock("job").try_lock(lease=0.001)
    assert failed.value.code == capi.REDLOCK_EEXPIRED


@pytest.mark.parametrize("nodes_arg", [None, 5, "redis://127.0.0.1", [None], [b"redis://x"]])
def test_nodes_of_wrong_type(nodes_arg):
    with pytest.raises(TypeError):
        redlock.Redlock(nodes_arg)


@pytest.mark.parametrize("name", [None, 5, b"job"])
def test_name_of_wrong_type(client, name):
    with pytest.raises(TypeError):
        client.get_lock(name)
    with pytest.raises(TypeError):
        client.get_multi_lock("a", name)
    with pytest.raises(TypeError):
        with client.lock(name):
            pass


@pytest.mark.parametrize("name", ["", "x" * 5000, "a\0b"])
def test_bad_name(client, name):
    with pytest.raises(ValueError):
        client.get_lock(name).try_lock()


def test_multi_lock_needs_distinct_names(client):
    # Refused where the mistake is made, not at the first try_lock.
    with pytest.raises(redlock.InvalidArgument, match=r"name 3: 'a' is listed twice \(as name 1\)"):
        client.get_multi_lock("a", "b", "a")
    with pytest.raises(TypeError):
        client.get_multi_lock()


@pytest.mark.parametrize("kwargs, error", [
    ({"wait": -1}, ValueError),
    ({"wait": math.nan}, ValueError),
    ({"wait": math.inf}, ValueError),
    ({"wait": None}, TypeError),
    ({"wait": "1"}, TypeError),
    ({"lease": 0}, ValueError),
    ({"lease": -1.0}, ValueError),
    ({"lease": 3e9}, ValueError),
    ({"lease": "1"}, TypeError),
    ({"lease": True}, TypeError),
])
def test_bad_times(client, kwargs, error):
    lock = client.get_lock("job")
    with pytest.raises(error):
        lock.try_lock(**kwargs)
    if kwargs != {"wait": None}:   # lock()'s default: it waits until acquired
        with pytest.raises(error):
            with client.lock("job", **kwargs):
                pass
    assert not lock.locked()


def test_bad_extend_and_timeout(client):
    lock = client.get_lock("job")
    assert lock.try_lock()
    with pytest.raises(ValueError):
        lock.extend(-1)
    with pytest.raises(TypeError):
        lock.extend(None)
    with pytest.raises(ValueError):
        lock.acquire(timeout=-2)
    lock.unlock()


def test_closed_client(nodes, prefix):
    client = redlock.Redlock(nodes.uris, key_prefix=prefix)
    lock = client.get_lock("job")
    assert lock.try_lock()
    leased = client.get_rlock("leased")
    assert leased.try_lock(lease=30.0)
    client.close()
    client.close()
    # close() released the locks it held, kept or with a lease.
    assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5
    assert on_every_node(nodes, "EXISTS", prefix + "leased") == ["0"] * 5
    # What is read without the nodes answers from what is left.
    assert not lock.is_held() and not lock.lost and lock.validity == 0
    assert lock.token is None
    # Every call raises ClientClosed (a ValueError), the same in every language.
    for call in (lock.unlock, lock.try_lock, lock.locked, lambda: lock.extend(1.0),
                 leased.release, lambda: client.get_lock("job"), client.ping,
                 client.health, lambda: client.get_semaphore("s", 2)):
        with pytest.raises(redlock.ClientClosed, match="closed"):
            call()
    assert issubclass(redlock.ClientClosed, ValueError)


def test_close_while_other_threads_call(nodes, prefix):
    """close() from one thread while others wait for a lock, take, read and
    release locks of the same client: their calls end with ClientClosed (a
    wait without end too, within a moment), never with a crash, and close()
    releases what was held."""
    for _ in range(10):
        client = redlock.Redlock(nodes.uris, key_prefix=prefix)
        holder = client.get_lock("held")
        assert holder.try_lock(lease=30.0)
        failures = []

        def busy(i):
            try:
                while True:
                    lock = client.get_lock(f"busy{i % 3}")
                    if lock.try_lock(wait=0.2, lease=1.0):
                        assert lock.validity > 0 and lock.token
                        lock.unlock()
                    lock.locked()
            except redlock.ClientClosed:
                pass
            except BaseException as exc:  # noqa: B902 - reported below
                failures.append(exc)

        def wait_for_ever():
            try:
                client.get_lock("held").acquire()
            except redlock.ClientClosed:
                pass
            except BaseException as exc:  # noqa: B902 - reported below
                failures.append(exc)

        threads = [threading.Thread(target=busy, args=(i,)) for i in range(5)]
        threads.append(threading.Thread(target=wait_for_ever))
        for thread in threads:
            thread.start()
        time.sleep(0.05)
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 2.0
        for thread in threads:
            thread.join(5.0)
            assert not thread.is_alive()
        assert not failures, failures
        with pytest.raises(redlock.ClientClosed):
            holder.unlock()
        assert on_every_node(nodes, "EXISTS", prefix + "held") == ["0"] * 5


def test_raw_module_refuses_none_and_bad_arguments(nodes):
    ctx = capi.redlock_ctx_new(nodes.uris)
    try:
        with pytest.raises(TypeError):
            capi.redlock_lock(None, "job", 1000, 0)
        with pytest.raises(TypeError):
            capi.redlock_extend(None, 1000)
        with pytest.raises(TypeError):
            capi.redlock_unlock(None)
        with pytest.raises(TypeError):
            capi.redlock_lock(ctx, "job", 1.5, 0)
        with pytest.raises(OverflowError):
            capi.redlock_lock(ctx, "job", 2 ** 70, 0)
        with pytest.raises(TypeError):
            capi.redlock_lock_multi(ctx, "job", 1000, 0)
        with pytest.raises(redlock.InvalidArgument):
            capi.redlock_lock(ctx, "job", -1, 0)
        with pytest.raises(TypeError):
            capi.redlock_handle_validity_ms(None)
        with pytest.raises(TypeError):
            capi.redlock_handle_free(None)
    finally:
        capi.redlock_ctx_free(ctx)


def names_incr(text: str) -> bool:
    """Whether a NOPERM's text names INCR: the node's own words for a
    command refused outright, or, for one refused inside a script (which
    Redis 7.0 does not name), the library's list of what the script calls."""
    return "no permissions to run the 'incr' command" in text or bool(
        re.search(r"script calls [^)]*\bincr\b", text))


def test_a_command_the_acl_forbids_is_not_refused_credentials(nodes, prefix, caplog):
    """A node's NOPERM (its ACL forbids a command the library sends) is
    PermissionDenied, naming the nodes and the command, not AuthError; each
    node's permission_denied event says it too, at ERROR."""
    user, password = "noincr", "pw-noincr-7"
    # Everything locking needs, but +incr (fencing's counter).
    on_every_node(nodes, "ACL", "SETUSER", user, "reset", "on", ">" + password,
                  f"~{prefix}*", "resetchannels", "-@all", "+set", "+get", "+append", "+exists",
                  "+mget", "+del", "+pexpire", "+pttl", "+type", "+eval", "+evalsha",
                  "+script|load", "+info", "+ping")
    uris = [uri.replace("redis://", f"redis://{user}:{password}@") for uri in nodes.uris]
    labels = [uri[len("redis://"):] for uri in nodes.uris]
    caplog.set_level(logging.ERROR, logger="redlock")
    errors = []
    try:
        with redlock.Redlock(uris, key_prefix=prefix) as client:
            lock = client.get_lock("job")
            assert lock.try_lock()
            lock.unlock()
        with redlock.Redlock(uris, key_prefix=prefix, fencing=1) as client:
            # The first attempt goes through a script (the nodes' versions
            # are not known yet), the second is SET and INCR on Redis 7.0+.
            for _ in range(2):
                with pytest.raises(redlock.PermissionDenied) as failed:
                    client.get_lock("job").try_lock()
                errors.append(failed.value)
            health = client.health()
    finally:
        on_every_node(nodes, "ACL", "DELUSER", user)
    for error in errors:
        text = str(error)
        assert error.code == capi.REDLOCK_ENOPERM
        assert not isinstance(error, redlock.AuthError)
        assert names_incr(text), text
        # A quorum of the nodes refused, each named with its refusal.
        assert sum(f"{label}: " in text for label in labels) >= 3, text
        assert password not in text
    denied = [r for r in caplog.records
              if getattr(r, "redlock_event", None) == "permission_denied"]
    assert len(denied) >= 3
    for record in denied:
        assert record.levelno == logging.ERROR
        assert record.getMessage().split()[1] in {"node=" + label for label in labels}
        assert names_incr(record.getMessage()), record.getMessage()
    refused = [node for node in health if node["state"] == "permission_denied"]
    assert len(refused) >= 3, health
    assert all(names_incr(node["last_error"]) for node in refused)
    # Nothing is left behind: the refused acquisitions were undone (on the
    # nodes that had not answered yet, a moment later).
    deadline = time.monotonic() + 5
    while on_every_node(nodes, "EXISTS", prefix + "job") != ["0"] * len(nodes.uris):
        assert time.monotonic() < deadline, "a refused acquisition left its key"
        time.sleep(0.05)


def test_a_list_of_uris_in_one_string_splits_where_a_new_uri_starts():
    assert redlock.split_nodes(
        "redis-sentinel://s1,s2:26380?sentinelMasterId=a, redis://m1:6379,rediss://m2") == [
        "redis-sentinel://s1,s2:26380?sentinelMasterId=a", "redis://m1:6379", "rediss://m2"]
    assert redlock.split_nodes("") == []
    with pytest.raises(TypeError):
        redlock.split_nodes(["redis://a"])
