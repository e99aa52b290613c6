"""What the binding checks and decodes through the library (its 1.3 calls):
the same message for the same bad input as in every language, the health's
"none" as None, the options and their defaults from the library's table."""

import math

import pytest

import redlock
import redlock.asyncio
from redlock import capi

LEASE_RULE = "lease must be a time above 0 ms and at most 2147483647 ms, not "
WAIT_RULE = "wait must be a finite time of 0 ms or more, not "
PERMITS_RULE = "permits must be a whole number from 1 to 10000, not "

# The inputs that every binding's tests give, in seconds here, and the
# library's words for them (tests/cross/test_parity.py runs them in each).
BAD_TIMES = [
    ({"lease": -1.0}, LEASE_RULE + "-1000 ms"),
    ({"lease": 0}, LEASE_RULE + "0 ms"),
    ({"lease": 2592000}, LEASE_RULE + "2592000000 ms"),
    ({"lease": math.nan}, LEASE_RULE + "NaN"),
    ({"wait": -1.0}, WAIT_RULE + "-1000 ms"),
    ({"wait": math.nan}, WAIT_RULE + "NaN"),
    ({"wait": math.inf}, WAIT_RULE + "infinity"),
]


@pytest.fixture
def lonely():
    """A client of a node nobody listens on: the checks come before any I/O."""
    with redlock.Redlock(["redis://127.0.0.1:1"]) as client:
        yield client


@pytest.mark.parametrize("kwargs, message", BAD_TIMES)
def test_a_bad_time_has_the_library_s_message(lonely, kwargs, message):
    with pytest.raises(redlock.InvalidArgument) as refused:
        lonely.get_lock("job").try_lock(**kwargs)
    assert str(refused.value) == message
    assert refused.value.code == capi.REDLOCK_EINVAL


@pytest.mark.asyncio
@pytest.mark.parametrize("kwargs, message", BAD_TIMES)
async def test_a_bad_time_has_the_same_message_in_asyncio(kwargs, message):
    async with redlock.asyncio.Redlock(["redis://127.0.0.1:1"]) as client:
        with pytest.raises(redlock.InvalidArgument) as refused:
            await client.get_lock("job").try_lock(**kwargs)
    assert str(refused.value) == message


def test_times_round_up_to_a_whole_millisecond(lonely):
    lock = lonely.get_lock("job")
    with pytest.raises(redlock.InvalidArgument, match="timeout must be a finite time"):
        lock.acquire(timeout=-2)
    with pytest.raises(redlock.InvalidArgument, match="not -500 ms"):
        lock.extend(-0.5)
    assert redlock._front._lease_ms(1.1) == 1100      # not 1101 from 1100.0000000000002
    assert redlock._front._lease_ms(0.0001) == 1
    assert redlock._front._millis(10**30, "wait") == 2**62          # as long as it takes
    with pytest.raises(redlock.InvalidArgument, match="not infinity"):
        redlock._front._millis(10**400, "wait")                     # beyond any float


def test_permits_have_the_library_s_message(lonely):
    for permits in (0, -1, 10001):
        with pytest.raises(redlock.InvalidArgument) as refused:
            lonely.get_semaphore("s", permits)
        assert str(refused.value) == PERMITS_RULE + str(permits)
    for permits in (True, "2", 2.0, None):
        with pytest.raises(redlock.InvalidArgument, match="permits must be an int, not"):
            lonely.get_semaphore("s", permits)


def test_an_empty_uri_in_a_list_is_refused():
    with pytest.raises(redlock.InvalidArgument) as refused:
        redlock.split_nodes(" ,redis://a")
    assert str(refused.value) == "URI 1 of the list of nodes is empty"
    assert redlock.split_nodes(" \t") == []
    assert redlock.split_nodes("  redis://a ,\tredis://b  ") == ["redis://a", "redis://b"]


def test_health_maps_none_to_none():
    with redlock.Redlock(["redis://127.0.0.1:1",
                          "redis-sentinel://127.0.0.1:1/?sentinelMasterId=m"]) as client:
        master, group = client.health()
    assert master["state"] == "unknown"
    assert master["rtt_ms"] is None and master["last_error"] is None
    assert master["server"] == "127.0.0.1:1"
    assert group["kind"] == "sentinel" and group["server"] is None
    assert isinstance(master["conns"], int) and isinstance(master["for_ms"], int)
    assert list(master) == list(redlock._front._HEALTH_FIELDS)


def test_options_and_defaults_come_from_the_library(lonely):
    defaults = redlock.option_defaults()
    assert list(defaults)[0] == "node_timeout_ms"
    assert len(defaults) == capi.redlock_option_count()
    assert defaults["watchdog_lease_ms"] == "30000"
    assert redlock.DEFAULT_LEASE == 30.0
    for name, value in defaults.items():
        if name != "sentinel_password":   # write-only
            assert lonely.get_option(name) == value


def test_a_bool_option_takes_a_bool():
    with redlock.Redlock(["redis://127.0.0.1:1"], fencing=True, restart_guard=False) as client:
        assert client.get_option("fencing") == "1"
        assert client.get_option("restart_guard") == "0"
    with pytest.raises(TypeError):
        redlock.Redlock(["redis://127.0.0.1:1"], pool_size=True)
    with pytest.raises(redlock.InvalidArgument, match="unknown option"):
        redlock.Redlock(["redis://127.0.0.1:1"], no_such_option=True)
