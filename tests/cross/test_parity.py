"""The parity tables (docs/parity.md) are true: every name in them exists where they say.

C names are looked up in abi/redlock.h, Python names on the package's classes
(redlock.asyncio's for the asynchronous table), Lua names on real client and
lock objects (in Lua 5.4 and LuaJIT; OpenResty's are the same objects), Java
names in the jar's classes (javap), PHP names on the classes of namespace
Redlock (method_exists, with the extension REDLOCK_PHP_EXTENSION names; PHP
(Swoole) in the asynchronous table: the same classes inside a coroutine).
Paths come from the environment, as for test_cross_language.py.
"""

import inspect
import os
import re
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

import redlock
import redlock.asyncio

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = ["C", "Python", "Lua", "Java"]
PHP_EXTENSION = os.environ.get("REDLOCK_PHP_EXTENSION", "")


def table_rows(first_column_line: str) -> List[Dict[str, str]]:
    """The rows of the table of docs/parity.md whose header is
    first_column_line, cells by column; the asynchronous table's columns are
    named as the synchronous one's (Python asyncio as Python, OpenResty as Lua,
    PHP (Swoole) as PHP)."""
    section = (ROOT / "docs" / "parity.md").read_text().splitlines()
    first = section.index(first_column_line)
    lines = []
    for line in section[first:]:
        if not line.startswith("|"):
            break
        lines.append(line)
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    header = [{"Python asyncio": "Python", "OpenResty": "Lua", "PHP (Swoole)": "PHP"}.get(h, h)
              for h in header]
    return [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|"))))
            for line in lines[2:]]


def name_in(cell: str) -> Tuple[str, str]:
    """`receiver.member(...)` or `receiver:member(...)` -> (receiver, member)."""
    match = re.match(r"`(\w+)[.:](\w+)", cell)
    assert match, f"cannot read a name from {cell!r}"
    return match.group(1), match.group(2)


SYNC_ROWS = table_rows("| operation | C | Python | Lua | Java | PHP |")
ASYNC_ROWS = table_rows("| operation | C | Python asyncio | OpenResty | Java | PHP (Swoole) |")
ROWS = [("sync", row) for row in SYNC_ROWS] + [("async", row) for row in ASYNC_ROWS]
IDS = [f"{kind}-{row['operation']}" for kind, row in ROWS]


def test_the_tables_cover_the_issue_operations() -> None:
    assert {"client", "lock", "multi-lock", "try", "release", "extend", "time left",
            "scoped use", "keep (no lease: renewed)", "lost?", "when lost", "reentrant lock",
            "holds of this holder", "wait until acquired", "held by anyone (asks the nodes)",
            "holder's time left on the nodes",
            "force unlock (dangerous)", "fencing token",
            "fencing token of a resource", "events (logging)", "health of the nodes",
            "ping the nodes"} <= {row["operation"] for row in SYNC_ROWS}
    assert {"client", "lock", "multi-lock", "try", "wait until acquired", "release", "extend",
            "scoped use", "fencing token", "events (logging)", "health of the nodes",
            "close"} <= {row["operation"] for row in ASYNC_ROWS}
    assert all(set(LANGUAGES) <= set(row) for _, row in ROWS)
    assert all("PHP" in row for _, row in ROWS)


@pytest.mark.parametrize("kind,row", ROWS, ids=IDS)
def test_c_names_are_in_the_header(kind: str, row: Dict[str, str]) -> None:
    cell = row["C"]
    if cell == "—":
        return
    name = cell.strip("`")
    header = (ROOT / "abi" / "redlock.h").read_text() + (ROOT / "abi" / "redlock_engine.h").read_text()
    assert re.search(rf"\b{name}\(", header), name


PYTHON_RECEIVERS = {
    "sync": {"redlock": redlock, "client": redlock.Redlock, "lock": redlock.Lock,
             "rlock": redlock.RLock, "semaphore": redlock.Semaphore,
             "permit": redlock.Permit},
    "async": {"asyncio": redlock.asyncio, "client": redlock.asyncio.Redlock,
              "lock": redlock.asyncio.Lock, "semaphore": redlock.asyncio.Semaphore,
              "permit": redlock.asyncio.Permit},
}


@pytest.mark.parametrize("kind,row", ROWS, ids=IDS)
def test_python_names_exist(kind: str, row: Dict[str, str]) -> None:
    if row["Python"] == "—":
        return
    receiver, member = name_in(row["Python"])
    owner = PYTHON_RECEIVERS[kind][receiver]
    assert hasattr(owner, member), f"{receiver}.{member}"
    if inspect.isclass(owner) and row["Python"].rstrip("`").endswith(")"):
        assert callable(getattr(owner, member)), f"{receiver}.{member} is not callable"


LUA_PROBE = r"""
local dir, nodes = ...
package.path = dir .. "/?.lua;" .. package.path
package.cpath = dir .. "/?.so;" .. package.cpath
local redlock = require "redlock"
local list = {}
for uri in nodes:gmatch("[^,]+") do list[#list + 1] = uri end
local client = assert(redlock.new(list))
local semaphore = client:get_semaphore("parity:semaphore", 1)
local permit = assert(semaphore:try_acquire(0, 10000))
local objects = { redlock = redlock, client = client, lock = client:get_lock("parity"),
                  semaphore = semaphore, permit = permit }
for line in io.lines() do
  local receiver, member = line:match("^(%w+) (%w[%w_]*)$")
  print(receiver .. " " .. member .. " " .. type(objects[receiver][member]))
end
assert(permit:release())
"""


@pytest.mark.parametrize("interpreter,variable", [("lua5.4", "REDLOCK_LUA54_DIR"),
                                                  ("luajit", "REDLOCK_LUAJIT_DIR")])
def test_lua_names_exist(interpreter: str, variable: str, tmp_path: Path,
                         nodes: List[str]) -> None:
    names = sorted({name_in(row["Lua"]) for _, row in ROWS if row["Lua"] != "—"})
    probe = tmp_path / "probe.lua"
    probe.write_text(LUA_PROBE)
    run = subprocess.run([interpreter, str(probe), os.environ[variable], ",".join(nodes)],
                         check=True, text=True,
                         capture_output=True, input="\n".join(f"{r} {m}" for r, m in names))
    kinds = dict(((r, m), k) for r, m, k in (line.split() for line in run.stdout.splitlines()))
    for receiver, member in names:
        assert kinds[(receiver, member)] == "function", f"{receiver}:{member} ({interpreter})"


JAVA_CLASSES = {"Redlock": "io.redlock.Redlock", "client": "io.redlock.Redlock",
                "lock": "io.redlock.RLock", "semaphore": "io.redlock.RPermitExpirableSemaphore"}


def test_java_names_exist() -> None:
    listing = subprocess.run(["javap", "-public", "-cp", os.environ["REDLOCK_JAR"],
                              *sorted(set(JAVA_CLASSES.values()))],
                             check=True, text=True, capture_output=True).stdout
    members: Dict[str, set] = {}
    current = ""
    for line in listing.splitlines():
        declared = re.search(r"class (\S+)", line)
        if declared:
            current = declared.group(1)
            continue
        method = re.search(r"(\w+)\(", line)
        if method:
            members.setdefault(current, set()).add(method.group(1))
    for _, row in ROWS:
        if row["Java"] == "—":
            continue
        receiver, member = name_in(row["Java"])
        assert member in members.get(JAVA_CLASSES[receiver], set()), f"{receiver}.{member}"


PHP_PROBE = r"""<?php
declare(strict_types=1);
require $argv[1] . '/autoload.php';
while (($line = fgets(STDIN)) !== false) {
    [$class, $method] = explode(' ', trim($line));
    echo $class, ' ', $method, ' ', method_exists("Redlock\\$class", $method) ? 'method' : 'missing', "\n";
}
"""

PHP_CLASSES = {"Client": "Client", "client": "Client", "lock": "Lock", "semaphore": "Semaphore",
               "permit": "Permit"}


def php_name_in(cell: str) -> Tuple[str, str]:
    """`$receiver->member(...)`, `Class::member(...)` or `new Redlock\\Class(...)`
    -> (class, member); a constructor's member is __construct."""
    made = re.match(r"`new (?:Redlock\\)?(\w+)\(", cell)
    if made:
        return made.group(1), "__construct"
    match = re.match(r"`\$?(\w+)(?:->|::)(\w+)\(", cell)
    assert match, f"cannot read a name from {cell!r}"
    return PHP_CLASSES[match.group(1)], match.group(2)


def test_php_names_exist(tmp_path: Path) -> None:
    if not PHP_EXTENSION:
        pytest.skip("the PHP extension was not built (php-config missing): no PHP column to check")
    names = sorted({php_name_in(row["PHP"]) for _, row in ROWS if row["PHP"] != "—"})
    probe = tmp_path / "probe.php"
    probe.write_text(PHP_PROBE)
    run = subprocess.run(["php", "-d", f"extension={PHP_EXTENSION}", str(probe),
                          str(ROOT / "bindings" / "php")],
                         check=True, text=True, capture_output=True,
                         input="\n".join(f"{c} {m}" for c, m in names))
    kinds = dict(((c, m), k) for c, m, k in (line.split() for line in run.stdout.splitlines()))
    for name in names:
        assert kinds[name] == "method", f"{name[0]}::{name[1]}"


# ---- The rules (docs/locks.md), the same in every language ----
#
# Each language runs the same scenarios against the same nodes and prints one
# line of observations per rule: Lua 5.4, LuaJIT and Java through their
# contenders ("rules" mode), Python sync and asyncio here. Every language must
# print exactly the expected lines.


RULES = [
    # Reentry keeps the first terms: a kept lock taken again with a short lease
    # keeps its keys' lease and its renewal, and is released in time.
    "reentry-kept again=yes holds=2 ttl_kept=yes held=yes lost=no unlock=ok,ok",
    # The lease that means "kept" (Java RLock.KEPT, -1; Python None; Lua nil)
    # keeps the lock: renewed past its lease.
    "kept-lease held=yes lost=no unlock=ok",
    # A lease taken again with no lease is not renewed: lost once it ran out;
    # only the last unlock reports the loss.
    "reentry-lease again=yes holds=2 ttl_first=yes lost=yes unlock=ok,notheld",
    # Acquiring again after a loss starts afresh: a new acquisition, held once.
    "afresh lost=yes again=ok holds=1 lost=no unlock=ok",
    # try_lock() with no wait makes one attempt; lock() waits until acquired.
    "wait try=locked once=yes lock=ok waited=yes",
    # A multi-lock is locked when any resource is, for the longest.
    "multi free=yes locked=yes longest=yes",
    # close() releases what is held; every later call raises the closed error.
    "closed released=yes get=closed try=closed unlock=closed",
]


def _word(call) -> str:
    try:
        call()
    except redlock.LockNotHeld:
        return "notheld"
    return "ok"


def _yes(cond: bool) -> str:
    return "yes" if cond else "no"


def _closed(call) -> str:
    try:
        call()
    except redlock.ClientClosed:
        return "closed"
    return "open"


async def _aclosed(call) -> str:
    try:
        await call()
    except redlock.ClientClosed:
        return "closed"
    return "open"


def python_rules(nodes: List[str], base: str) -> List[str]:
    import time
    lines = []
    with redlock.Redlock(nodes, watchdog_lease_ms=900) as c, redlock.Redlock(nodes) as other:
        kept = c.get_rlock(base + ":kept")
        kept.acquire()
        again = kept.try_lock(wait=1.0, lease=0.15)
        holds = kept.get_hold_count()
        ttl = kept.remain_time_to_live()
        kept_lease = c.get_lock(base + ":kept-lease")
        assert kept_lease.try_lock(lease=None)
        time.sleep(1.2)
        lines.append(f"reentry-kept again={_yes(again)} holds={holds} "
                     f"ttl_kept={_yes(ttl is not None and ttl > 0.15)} "
                     f"held={_yes(kept.lock.validity > 0)} lost={_yes(kept.lock.lost)} "
                     f"unlock={_word(kept.release)},{_word(kept.release)}")
        lines.append(f"kept-lease held={_yes(kept_lease.validity > 0)} "
                     f"lost={_yes(kept_lease.lost)} unlock={_word(kept_lease.unlock)}")

        leased = c.get_rlock(base + ":leased")
        assert leased.try_lock(lease=0.3)
        again = leased.try_lock()
        holds = leased.get_hold_count()
        ttl = leased.remain_time_to_live()
        time.sleep(0.45)
        lost = leased.lock.lost
        lines.append(f"reentry-lease again={_yes(again)} holds={holds} "
                     f"ttl_first={_yes(ttl is not None and ttl <= 0.3)} lost={_yes(lost)} "
                     f"unlock={_word(leased.release)},{_word(leased.release)}")

        fresh = c.get_rlock(base + ":afresh")
        assert fresh.try_lock(lease=0.3) and fresh.try_lock(lease=0.3)
        time.sleep(0.45)
        lost = fresh.lock.lost
        again = "ok" if fresh.try_lock() else "locked"
        lines.append(f"afresh lost={_yes(lost)} again={again} holds={fresh.get_hold_count()} "
                     f"lost={_yes(fresh.lock.lost)} unlock={_word(fresh.release)}")

        holder = other.get_lock(base + ":wait")
        assert holder.try_lock(lease=0.4)
        waiter = c.get_lock(base + ":wait")
        started = time.monotonic()
        tried = "ok" if waiter.try_lock() else "locked"
        once = time.monotonic() - started < 0.3
        with c.lock(base + ":wait", lease=5.0):
            waited = time.monotonic() - started >= 0.3
        lines.append(f"wait try={tried} once={_yes(once)} lock=ok waited={_yes(waited)}")

        multi = c.get_multi_lock(base + ":ma", base + ":mb", base + ":mc")
        free = not multi.locked()
        b, d = other.get_lock(base + ":mb"), other.get_lock(base + ":mc")
        assert b.try_lock(lease=3.0) and d.try_lock(lease=8.0)
        left = multi.remain_time_to_live()
        lines.append(f"multi free={_yes(free)} locked={_yes(multi.locked())} "
                     f"longest={_yes(left is not None and 7.0 < left <= 8.0)}")
        b.unlock()
        d.unlock()

        closing = redlock.Redlock(nodes)
        held = closing.get_lock(base + ":closed")
        assert held.try_lock(lease=10.0)
        closing.close()
        released = not other.get_lock(base + ":closed").locked()
        lines.append(f"closed released={_yes(released)} "
                     f"get={_closed(lambda: closing.get_lock('x'))} "
                     f"try={_closed(held.try_lock)} unlock={_closed(held.unlock)}")
    return lines


async def asyncio_rules(nodes: List[str], base: str) -> List[str]:
    import asyncio
    import time
    lines = []
    async with redlock.asyncio.Redlock(nodes, watchdog_lease_ms=900) as c, \
            redlock.asyncio.Redlock(nodes) as other:
        kept = c.get_rlock(base + ":kept")
        await kept.acquire()
        again = await kept.try_lock(wait=1.0, lease=0.15)
        holds = kept.get_hold_count()
        ttl = await kept.remain_time_to_live()
        kept_lease = c.get_lock(base + ":kept-lease")
        assert await kept_lease.try_lock(lease=None)
        await asyncio.sleep(1.2)
        first = await _aword(kept.release())
        lines.append(f"reentry-kept again={_yes(again)} holds={holds} "
                     f"ttl_kept={_yes(ttl is not None and ttl > 0.15)} "
                     f"held={_yes(kept.lock.validity > 0)} lost={_yes(kept.lock.lost)} "
                     f"unlock={first},{await _aword(kept.release())}")
        lines.append(f"kept-lease held={_yes(kept_lease.validity > 0)} "
                     f"lost={_yes(kept_lease.lost)} unlock={await _aword(kept_lease.unlock())}")

        leased = c.get_rlock(base + ":leased")
        assert await leased.try_lock(lease=0.3)
        again = await leased.try_lock()
        holds = leased.get_hold_count()
        ttl = await leased.remain_time_to_live()
        await asyncio.sleep(0.45)
        lost = leased.lock.lost
        first = await _aword(leased.release())
        lines.append(f"reentry-lease again={_yes(again)} holds={holds} "
                     f"ttl_first={_yes(ttl is not None and ttl <= 0.3)} lost={_yes(lost)} "
                     f"unlock={first},{await _aword(leased.release())}")

        fresh = c.get_rlock(base + ":afresh")
        assert await fresh.try_lock(lease=0.3) and await fresh.try_lock(lease=0.3)
        await asyncio.sleep(0.45)
        lost = fresh.lock.lost
        again = "ok" if await fresh.try_lock() else "locked"
        lines.append(f"afresh lost={_yes(lost)} again={again} holds={fresh.get_hold_count()} "
                     f"lost={_yes(fresh.lock.lost)} unlock={await _aword(fresh.release())}")

        holder = other.get_lock(base + ":wait")
        assert await holder.try_lock(lease=0.4)
        waiter = c.get_lock(base + ":wait")
        started = time.monotonic()
        tried = "ok" if await waiter.try_lock() else "locked"
        once = time.monotonic() - started < 0.3
        async with c.lock(base + ":wait", lease=5.0):
            waited = time.monotonic() - started >= 0.3
        lines.append(f"wait try={tried} once={_yes(once)} lock=ok waited={_yes(waited)}")

        multi = c.get_multi_lock(base + ":ma", base + ":mb", base + ":mc")
        free = not await multi.locked()
        b, d = other.get_lock(base + ":mb"), other.get_lock(base + ":mc")
        assert await b.try_lock(lease=3.0) and await d.try_lock(lease=8.0)
        left = await multi.remain_time_to_live()
        lines.append(f"multi free={_yes(free)} locked={_yes(await multi.locked())} "
                     f"longest={_yes(left is not None and 7.0 < left <= 8.0)}")
        await b.unlock()
        await d.unlock()

        closing = redlock.asyncio.Redlock(nodes)
        held = closing.get_lock(base + ":closed")
        assert await held.try_lock(lease=10.0)
        await closing.close()
        released = not await other.get_lock(base + ":closed").locked()
        lines.append(f"closed released={_yes(released)} "
                     f"get={await _aclosed(lambda: closing.get_lock('x'))} "
                     f"try={await _aclosed(held.try_lock)} "
                     f"unlock={await _aclosed(held.unlock)}")
    return lines


async def _aword(awaitable) -> str:
    try:
        await awaitable
    except redlock.LockNotHeld:
        return "notheld"
    return "ok"


def contender_rules(language: str, nodes: List[str], base: str,
                    mode: str = "rules") -> List[str]:
    here = ROOT / "tests" / "cross"
    if language == "java":
        argv = ["java", "-cp", os.environ["REDLOCK_JAR"], str(here / "Contender.java")]
    elif language in ("php", "php-swoole"):
        script = "contender.php" if language == "php" else "contender_swoole.php"
        argv = ["php", "-d", f"extension={PHP_EXTENSION}", str(here / script),
                str(ROOT / "bindings" / "php")]
    else:
        variable = {"lua5.4": "REDLOCK_LUA54_DIR", "luajit": "REDLOCK_LUAJIT_DIR"}[language]
        argv = [language, str(here / "contender.lua"), os.environ[variable]]
    run = subprocess.run(argv + [mode, ",".join(nodes), base], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


# PHP takes part where its extension was built, and inside Swoole's
# coroutines where PHP has the swoole extension.
def _has_swoole() -> bool:
    return bool(PHP_EXTENSION) and subprocess.run(
        ["php", "-r", "exit(extension_loaded('swoole') ? 0 : 1);"]).returncode == 0


PHP = (["php"] + (["php-swoole"] if _has_swoole() else [])) if PHP_EXTENSION else []


@pytest.mark.parametrize("language", ["python", "asyncio", "lua5.4", "luajit", "java"] + PHP)
def test_the_rules_hold_alike_in_every_language(nodes: List[str], language: str) -> None:
    base = f"rules-{language}"
    if language == "python":
        lines = python_rules(nodes, base)
    elif language == "asyncio":
        import asyncio
        lines = asyncio.run(asyncio_rules(nodes, base))
    else:
        lines = contender_rules(language, nodes, base)
    assert lines == RULES


# ---- The messages of the argument checks, one per rule (the C library's) ----
#
# The same bad inputs, each language in its own units: a lease of -1000 ms,
# of 0, of 30 days, a wait of -1000 ms, a semaphore of 0 permits, a list of
# nodes whose first URI is empty. Every language must print these lines.

LEASE_RULE = "lease must be a time above 0 ms and at most 2147483647 ms, not "
MESSAGES = [
    "negative-lease " + LEASE_RULE + "-1000 ms",
    "zero-lease " + LEASE_RULE + "0 ms",
    "long-lease " + LEASE_RULE + "2592000000 ms",
    "negative-wait wait must be a finite time of 0 ms or more, not -1000 ms",
    "zero-permits permits must be a whole number from 1 to 10000, not 0",
    "empty-uri URI 1 of the list of nodes is empty",
]


def python_messages(nodes: List[str], base: str) -> List[str]:
    def message(call) -> str:
        with pytest.raises(redlock.InvalidArgument) as refused:
            call()
        return str(refused.value)

    with redlock.Redlock(nodes) as c:
        lock = c.get_lock(base)
        return [f"negative-lease {message(lambda: lock.try_lock(lease=-1.0))}",
                f"zero-lease {message(lambda: lock.try_lock(lease=0))}",
                f"long-lease {message(lambda: lock.try_lock(lease=30 * 24 * 3600))}",
                f"negative-wait {message(lambda: lock.try_lock(wait=-1.0, lease=1.0))}",
                f"zero-permits {message(lambda: c.get_semaphore('s', 0))}",
                f"empty-uri {message(lambda: redlock.split_nodes(' ,redis://a'))}"]


@pytest.mark.parametrize("language", ["python", "lua5.4", "luajit", "java"] + PHP)
def test_the_same_bad_input_has_the_same_message_in_every_language(nodes: List[str],
                                                                   language: str) -> None:
    base = f"messages-{language}"
    if language == "python":
        lines = python_messages(nodes, base)
    else:
        lines = contender_rules(language, nodes, base, "messages")
    assert lines == MESSAGES
