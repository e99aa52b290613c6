"""One lock across stacks: Python, Lua 5.4, LuaJIT, Java and C exclude each other.

Python takes locks in this process through the binding; the other languages run
as separate processes (tests/cross/contender.lua, Contender.java, and the
`redlock` command-line tool for C). Where each built piece is comes from the
environment, set by CTest: REDLOCK_LUA54_DIR, REDLOCK_LUAJIT_DIR, REDLOCK_JAR,
REDLOCK_TOOL.
"""

import os
import subprocess
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

import redlock

HERE = Path(__file__).resolve().parent
LEASE = 30.0


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
    }


def attempt(nodes: List[str], language: str, names: List[str]) -> str:
    """One attempt from another language: 'acquired' (and released) or 'refused'."""
    base = commands(nodes)[language]
    if language == "c":
        assert len(names) == 1, "the command-line tool takes one resource"
        run = subprocess.run(base + [names[0], "--", "true"], capture_output=True, text=True,
                             timeout=120)
        return {0: "acquired", 75: "refused"}.get(run.returncode, f"exit {run.returncode}: "
                                                                  f"{run.stderr}")
    args = ["try", ",".join(nodes), ",".join(names)]
    if language != "java":
        args = [base[-1]] + args
        base = base[:-1]
    run = subprocess.run(base + args, capture_output=True, text=True, timeout=120)
    lines = run.stdout.split()
    assert run.returncode == 0, run.stderr
    return "acquired" if lines == ["acquired", "released"] else " ".join(lines) + run.stderr


class Holder:
    """A lock held by another language's process until release()."""

    def __init__(self, nodes: List[str], language: str, names: List[str]) -> None:
        base = commands(nodes)[language]
        if language == "c":
            argv = base + [names[0], "--", "sh", "-c", "echo acquired; read line; echo released"]
        elif language == "java":
            argv = base + ["hold", ",".join(nodes), ",".join(names)]
        else:
            argv = base[:-1] + [base[-1], "hold", ",".join(nodes), ",".join(names)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline().strip()
        assert first == "acquired", f"{language} did not acquire {names}: {first!r}"

    def release(self) -> None:
        out, err = self.proc.communicate("\n", timeout=120)
        assert self.proc.returncode == 0, err
        assert out.split() == ["released"], out + err


OTHERS = ["lua5.4", "luajit", "java", "c"]


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


@pytest.mark.parametrize("holder", ["lua5.4", "luajit", "java"])
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
