"""The parity tables (docs/parity.md) are true: every name in them exists where they say.

C names are looked up in abi/redlock.h, Python names on the package's classes
(redlock.asyncio's for the asynchronous table), Lua names on real client and
lock objects (in Lua 5.4 and LuaJIT; OpenResty's are the same objects), Java
names in the jar's classes (javap). Paths come from the environment, as for
test_cross_language.py.
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


def table_rows(first_column_line: str) -> List[Dict[str, str]]:
    """The rows of the table of docs/parity.md whose header is
    first_column_line, cells by column; the asynchronous table's columns are
    named as the synchronous one's (Python asyncio as Python, OpenResty as Lua)."""
    section = (ROOT / "docs" / "parity.md").read_text().splitlines()
    first = section.index(first_column_line)
    lines = []
    for line in section[first:]:
        if not line.startswith("|"):
            break
        lines.append(line)
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    header = [{"Python asyncio": "Python", "OpenResty": "Lua"}.get(h, h) for h in header]
    return [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|"))))
            for line in lines[2:]]


def name_in(cell: str) -> Tuple[str, str]:
    """`receiver.member(...)` or `receiver:member(...)` -> (receiver, member)."""
    match = re.match(r"`(\w+)[.:](\w+)", cell)
    assert match, f"cannot read a name from {cell!r}"
    return match.group(1), match.group(2)


SYNC_ROWS = table_rows("| operation | C | Python | Lua | Java |")
ASYNC_ROWS = table_rows("| operation | C | Python asyncio | OpenResty | Java |")
ROWS = [("sync", row) for row in SYNC_ROWS] + [("async", row) for row in ASYNC_ROWS]
IDS = [f"{kind}-{row['operation']}" for kind, row in ROWS]


def test_the_tables_cover_the_issue_operations() -> None:
    assert {"client", "lock", "multi-lock", "try", "release", "extend", "time left",
            "scoped use", "keep (no lease: renewed)", "lost?", "when lost", "reentrant lock",
            "holds of this thread", "held by anyone (asks the nodes)",
            "holder's time left on the nodes",
            "force unlock (dangerous)", "fencing token",
            "fencing token of a resource", "events (logging)", "health of the nodes",
            "ping the nodes"} <= {row["operation"] for row in SYNC_ROWS}
    assert {"client", "lock", "multi-lock", "try", "wait until acquired", "release", "extend",
            "scoped use", "fencing token", "events (logging)", "health of the nodes",
            "close"} <= {row["operation"] for row in ASYNC_ROWS}
    assert all(set(LANGUAGES) <= set(row) for _, row in ROWS)


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
             "rlock": redlock.RLock},
    "async": {"asyncio": redlock.asyncio, "client": redlock.asyncio.Redlock,
              "lock": redlock.asyncio.Lock},
}


@pytest.mark.parametrize("kind,row", ROWS, ids=IDS)
def test_python_names_exist(kind: str, row: Dict[str, str]) -> None:
    receiver, member = name_in(row["Python"])
    owner = PYTHON_RECEIVERS[kind][receiver]
    assert hasattr(owner, member), f"{receiver}.{member}"
    if inspect.isclass(owner) and row["Python"].rstrip("`").endswith(")"):
        assert callable(getattr(owner, member)), f"{receiver}.{member} is not callable"


LUA_PROBE = r"""
local dir = ...
package.path = dir .. "/?.lua;" .. package.path
package.cpath = dir .. "/?.so;" .. package.cpath
local redlock = require "redlock"
local client = assert(redlock.new({ "redis://127.0.0.1:1" }))
local objects = { redlock = redlock, client = client, lock = client:get_lock("parity") }
for line in io.lines() do
  local receiver, member = line:match("^(%w+) (%w[%w_]*)$")
  print(receiver .. " " .. member .. " " .. type(objects[receiver][member]))
end
"""


@pytest.mark.parametrize("interpreter,variable", [("lua5.4", "REDLOCK_LUA54_DIR"),
                                                  ("luajit", "REDLOCK_LUAJIT_DIR")])
def test_lua_names_exist(interpreter: str, variable: str, tmp_path: Path) -> None:
    names = sorted({name_in(row["Lua"]) for _, row in ROWS if row["Lua"] != "—"})
    probe = tmp_path / "probe.lua"
    probe.write_text(LUA_PROBE)
    run = subprocess.run([interpreter, str(probe), os.environ[variable]], check=True, text=True,
                         capture_output=True, input="\n".join(f"{r} {m}" for r, m in names))
    kinds = dict(((r, m), k) for r, m, k in (line.split() for line in run.stdout.splitlines()))
    for receiver, member in names:
        assert kinds[(receiver, member)] == "function", f"{receiver}:{member} ({interpreter})"


JAVA_CLASSES = {"Redlock": "io.redlock.Redlock", "client": "io.redlock.Redlock",
                "lock": "io.redlock.RLock"}


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
