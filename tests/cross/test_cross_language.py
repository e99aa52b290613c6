"""One lock across stacks: Python, Lua 5.4, LuaJIT, Java, PHP and C exclude each other.

Python takes locks in this process through the binding; the other languages run
as separate processes (tests/cross/contender.lua, Contender.java, contender.php,
and the `redlock` command-line tool for C). Where each built piece is comes from
the environment, set by CTest: REDLOCK_LUA54_DIR, REDLOCK_LUAJIT_DIR, REDLOCK_JAR,
REDLOCK_TOOL, and REDLOCK_PHP_EXTENSION (the PHP extension, where the build made
one: PHP takes part only then).
"""

import os
import subprocess
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

import redlock

HERE = Path(__file__).resolve().parent
LEASE = 30.0
# PHP takes part where the build made its extension (php-config found).
PHP = ["php"] if os.environ.get("REDLOCK_PHP_EXTENSION") else []


def _required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run this test through CTest")
    return value


@pytest.fixture(scope="module")
def client(nodes: List[str]) -> Iterator[redlock.Redlock]:
    with redlock.Redlock(nodes) as c:
        yield c


def commands(nodes: List[str]) -> Dict[str, List[str]]:
    """How to start a contender in each other language (mode and names follow)."""
    csv = ",".join(nodes)
    lua = str(HERE / "contender.lua")
    return {
        "lua5.4": ["lua5.4", lua, _required("REDLOCK_LUA54_DIR")],
        "luajit": ["luajit", lua, _required("REDLOCK_LUAJIT_DIR")],
        "java": ["java", "-cp", _required("REDLOCK_JAR"), str(HERE / "Contender.java")],
        "c": [_required("REDLOCK_TOOL"), "--nodes", csv, "--wait", "0"],
        **({"php": ["php", "-d", f"extension={_required('REDLOCK_PHP_EXTENSION')}",
                    str(HERE / "contender.php"), str(HERE.parents[1] / "bindings" / "php")]}
           if PHP else {}),
    }


# The tool's options for each kind of lock (its default is the plain lock;
# a write lock of a name is its plain lock).
TOOL_KIND = {"plain": [], "read": ["--shared"], "write": [], "fair": ["--fair"]}


def tool_kind(kind: str) -> List[str]:
    if kind.startswith("permits="):
        return ["--permits", kind.split("=")[1]]
    return TOOL_KIND[kind]


def attempt(nodes: List[str], language: str, names: List[str], kind: str = "plain") -> str:
    """One attempt from another language: 'acquired' (and released) or 'refused'."""
    base = commands(nodes)[language]
    if language == "c":
        assert len(names) == 1, "the command-line tool takes one resource"
        run = subprocess.run(base + tool_kind(kind) + [names[0], "--", "true"],
                             capture_output=True, text=True, timeout=120)
        return {0: "acquired", 75: "refused"}.get(run.returncode, f"exit {run.returncode}: "
                                                                  f"{run.stderr}")
    args = ["try", ",".join(nodes), ",".join(names), kind]
    if language != "java":
        args = [base[-1]] + args
        base = base[:-1]
    run = subprocess.run(base + args, capture_output=True, text=True, timeout=120)
    lines = run.stdout.split()
    assert run.returncode == 0, run.stderr
    return "acquired" if lines == ["acquired", "released"] else " ".join(lines) + run.stderr


class Holder:
    """A lock held by another language's process until release()."""

    def __init__(self, nodes: List[str], language: str, names: List[str],
                 kind: str = "plain") -> None:
        base = commands(nodes)[language]
        if language == "c":
            argv = base + tool_kind(kind) + [names[0], "--", "sh", "-c",
                                             "echo acquired; read line; echo released"]
        elif language == "java":
            argv = base + ["hold", ",".join(nodes), ",".join(names), kind]
        else:
            argv = base[:-1] + [base[-1], "hold", ",".join(nodes), ",".join(names), kind]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline().strip()
        assert first == "acquired", f"{language} did not acquire {names}: {first!r}"

    def release(self) -> None:
        out, err = self.proc.communicate("\n", timeout=120)
        assert self.proc.returncode == 0, err
        assert out.split() == ["released"], out + err


OTHERS = ["lua5.4", "luajit", "java", "c"] + PHP


def test_a_python_lock_excludes_every_other_language(client: redlock.Redlock,
                                                     nodes: List[str]) -> None:
    lock = client.get_lock("cross:single")
    assert lock.try_lock(wait=0, lease=LEASE)
    for language in OTHERS:
        assert attempt(nodes, language, ["cross:single"]) == "refused", language
    lock.unlock()
    for language in OTHERS:
        assert attempt(nodes, language, ["cross:single"]) == "acquired", language


@pytest.mark.parametrize("holder", OTHERS)
def test_a_lock_held_elsewhere_excludes_python_and_the_rest(client: redlock.Redlock,
                                                           nodes: List[str],
                                                           holder: str) -> None:
    name = f"cross:held-by-{holder}"
    held = Holder(nodes, holder, [name])
    try:
        assert not client.get_lock(name).try_lock(wait=0, lease=LEASE)
        for language in OTHERS:
            if language != holder:
                assert attempt(nodes, language, [name]) == "refused", language
    finally:
        held.release()
    lock = client.get_lock(name)
    assert lock.try_lock(wait=0, lease=LEASE)
    lock.unlock()


def test_a_python_multi_lock_excludes_single_locks_on_its_resources(
        client: redlock.Redlock, nodes: List[str]) -> None:
    names = ["cross:m1", "cross:m2", "cross:m3"]
    multi = client.get_multi_lock(*names)
    assert multi.try_lock(wait=0, lease=LEASE)
    for language in OTHERS:
        assert attempt(nodes, language, ["cross:m2"]) == "refused", language
        if language != "c":
            assert attempt(nodes, language, ["cross:m3", "cross:m9"]) == "refused", language
    multi.unlock()
    for language in OTHERS:
        assert attempt(nodes, language, ["cross:m2"]) == "acquired", language


@pytest.mark.parametrize("holder", ["lua5.4", "luajit", "java"] + PHP)
def test_a_multi_lock_held_elsewhere_excludes_python_and_the_rest(
        client: redlock.Redlock, nodes: List[str], holder: str) -> None:
    names = [f"cross:{holder}:a", f"cross:{holder}:b"]
    held = Holder(nodes, holder, names)
    try:
        assert not client.get_lock(names[1]).try_lock(wait=0, lease=LEASE)
        assert not client.get_multi_lock(names[0], "cross:free").try_lock(wait=0, lease=LEASE)
        for language in OTHERS:
            if language != holder:
                assert attempt(nodes, language, [names[0]]) == "refused", language
    finally:
        held.release()
    multi = client.get_multi_lock(*names)
    assert multi.try_lock(wait=0, lease=LEASE)
    multi.unlock()


def test_readers_of_every_stack_share_the_read_lock_and_a_writer_waits(
        client: redlock.Redlock, nodes: List[str]) -> None:
    """A Lua reader, a Python reader and `redlock -s` share the read lock; a
    Java writer (and an exclusive lock of the tool) waits for all three."""
    name = "cross:rw"
    readers = [Holder(nodes, "lua5.4", [name], "read"), Holder(nodes, "c", [name], "read")]
    mine = client.get_read_write_lock(name).read_lock()
    try:
        assert mine.try_lock(wait=0, lease=LEASE)
        assert attempt(nodes, "luajit", [name], "read") == "acquired"
        assert attempt(nodes, "java", [name], "read") == "acquired"
        while readers:
            assert attempt(nodes, "java", [name], "write") == "refused"
            assert attempt(nodes, "c", [name]) == "refused"
            readers.pop().release()
        assert attempt(nodes, "java", [name], "write") == "refused"   # Python still reads
    finally:
        for reader in readers:
            reader.release()
        mine.unlock()
    assert attempt(nodes, "java", [name], "write") == "acquired"
    writer = Holder(nodes, "java", [name], "write")
    try:
        assert not client.get_read_write_lock(name).read_lock().try_lock(wait=0, lease=LEASE)
        for language in ("lua5.4", "luajit", "c"):
            assert attempt(nodes, language, [name], "read") == "refused", language
    finally:
        writer.release()


def test_a_semaphore_counts_the_permits_of_every_stack(client: redlock.Redlock,
                                                         nodes: List[str]) -> None:
    """Two permits: one held by Java, one by the tool; Python, Lua and
    another Java are refused; once one is released, Lua gets it."""
    name = "cross:semaphore"
    holders = [Holder(nodes, "java", [name], "permits=2"), Holder(nodes, "c", [name], "permits=2")]
    try:
        assert client.get_semaphore(name, 2).try_acquire(wait=0, lease=LEASE) is None
        for language in OTHERS:
            assert attempt(nodes, language, [name], "permits=2") == "refused", language
        holders.pop(0).release()
        assert attempt(nodes, "lua5.4", [name], "permits=2") == "acquired"
        permit = client.get_semaphore(name, 2).try_acquire(wait=0, lease=LEASE)
        assert permit is not None
        assert attempt(nodes, "luajit", [name], "permits=2") == "refused"
        permit.release()
    finally:
        for holder in holders:
            holder.release()


def test_a_fair_lock_is_one_lock_across_stacks(client: redlock.Redlock,
                                               nodes: List[str]) -> None:
    """The fair lock held in Lua excludes every stack's fair and plain locks."""
    name = "cross:fair"
    holder = Holder(nodes, "lua5.4", [name], "fair")
    try:
        assert not client.get_fair_lock(name).try_lock(wait=0, lease=LEASE)
        assert not client.get_lock(name).try_lock(wait=0, lease=LEASE)
        for language in ["luajit", "java", "c"] + PHP:
            assert attempt(nodes, language, [name], "fair") == "refused", language
            assert attempt(nodes, language, [name]) == "refused", language
    finally:
        holder.release()
    for language in ("java", "c"):
        assert attempt(nodes, language, [name], "fair") == "acquired", language
