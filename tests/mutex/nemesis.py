"""The nemesis of the mutual-exclusion run over Sentinel groups
(tests/mutex/run --nemesis): for the run's duration it picks a fault kind
and a group, breaks the group, heals it, and logs every action.

Fault kinds (each on the group's master of the moment):
  failover          SENTINEL FAILOVER
  pause             SIGSTOP for less than the sentinels' down-after, SIGCONT
  long-pause        SIGSTOP past down-after (the sentinels fail over under
                    the stopped master), SIGCONT: it wakes as a master and is
                    turned into a replica
  kill-data         kill -9, restarted at once with its data (AOF, fsync always)
  kill-data-slow    kill -9, restarted with its data once the sentinels
                    promoted the replica: it rejoins as a replica
  kill-empty-slow   kill -9, restarted empty once the replica was promoted
  kill-empty-quick  kill -9, restarted empty at once, before any failover:
                    the group forgets every lock and counter (its replica
                    resyncs from the empty master)
  cut-reset         the clients' connections to the group's servers reset
                    (Toxiproxy reset_peer), sentinels and replication untouched
  cut-timeout       the same connections black-holed (Toxiproxy timeout)

Clients reach the servers through Toxiproxy: each client asks a front of
each sentinel (SentinelFront), which relays to the sentinel and puts the
proxies' ports in its replies in place of the servers'. The sentinels and
the replicas talk to the servers directly, so a cut touches only clients.

A group is in a fault from its first action until it is healed (every
sentinel names one master, the other server replicates it in sync) and, when
its master changed or restarted, the restart guard of the promoted or
restarted master has run out (max_lease_ms + sentinel_poll_ms after it) --
the time the group does not count for new locks. By default one group at a
time is in a fault, so two of the three always count.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

KINDS = {
    "failover": "SENTINEL FAILOVER",
    "pause": "master SIGSTOPped shorter than down-after",
    "long-pause": "master SIGSTOPped past down-after",
    "kill-data": "kill -9, restarted at once with its data",
    "kill-data-slow": "kill -9, restarted with its data after the failover",
    "kill-empty-slow": "kill -9, restarted empty after the failover",
    "kill-empty-quick": "kill -9, restarted empty before any failover",
    "cut-reset": "clients' connections reset (reset_peer)",
    "cut-timeout": "clients' connections black-holed (timeout)",
}
CUTS = ("cut-reset", "cut-timeout")
# The sentinels' down-after-milliseconds (scripts/redis-topo.sh).
DOWN_AFTER_S = 1.0


def parse_kinds(text: str) -> List[str]:
    """--faults: names of KINDS, "all", and "-name" to leave one out, in
    order (all,-kill-empty-quick is every kind but that one)."""
    chosen: List[str] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item == "all":
            chosen += [kind for kind in KINDS if kind not in chosen]
        elif item.startswith("-") and item[1:] in KINDS:
            chosen = [kind for kind in chosen if kind != item[1:]]
        elif item in KINDS:
            chosen += [] if item in chosen else [item]
        else:
            raise ValueError(f"no fault kind {item!r} (kinds: {', '.join(KINDS)}, all, -KIND)")
    return chosen


class ReplyError(Exception):
    """An error reply from a server."""


def _encode(args: Tuple[str, ...]) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def _parse(reader: Any) -> Any:
    line = reader.readline()
    if not line:
        raise ConnectionError("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise ReplyError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        size = int(rest)
        return None if size < 0 else reader.read(size + 2)[:-2].decode(errors="replace")
    if kind == b"*":
        size = int(rest)
        return None if size < 0 else [_parse(reader) for _ in range(size)]
    raise ConnectionError(f"unexpected reply {line!r}")


def call(port: int, *args: str, timeout: float = 2.0) -> Any:
    """One command to 127.0.0.1:port on a fresh connection (no redis-cli
    process per poll); OSError when it does not answer in time."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(_encode(args))
        with sock.makefile("rb") as reader:
            return _parse(reader)


def info(port: int, section: str) -> Dict[str, str]:
    text = call(port, "INFO", section)
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


class SentinelFront:
    """A listener in front of each sentinel: it relays the client's commands
    to the sentinel and the replies back, with each server's port (a bulk
    string) replaced by its proxy's, so that clients reach the masters the
    sentinels name through Toxiproxy. The library asks a sentinel only
    SENTINEL MASTER and SENTINEL GET-MASTER-ADDR-BY-NAME, then hangs up."""

    def __init__(self, sentinels: List[int], proxy_of: Dict[int, int]) -> None:
        self._rewrite = {str(port).encode(): str(proxy).encode()
                         for port, proxy in proxy_of.items()}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._servers: List[asyncio.AbstractServer] = []
        self.port: Dict[int, int] = {}
        for sentinel in sentinels:
            server = asyncio.run_coroutine_threadsafe(
                asyncio.start_server(partial(self._serve, sentinel), "127.0.0.1", 0),
                self._loop).result(10)
            self._servers.append(server)
            self.port[sentinel] = server.sockets[0].getsockname()[1]

    async def _value(self, reader: asyncio.StreamReader) -> bytes:
        """One whole reply, its ports rewritten."""
        line = await reader.readuntil(b"\r\n")
        kind = line[:1]
        if kind in (b"$", b"="):
            size = int(line[1:-2])
            if size < 0:
                return line
            data = await reader.readexactly(size + 2)
            body = data[:-2]
            if kind == b"$" and body in self._rewrite:
                body = self._rewrite[body]
                return b"$%d\r\n%s\r\n" % (len(body), body)
            return line + data
        if kind in (b"*", b"~", b">", b"%", b"|"):
            count = int(line[1:-2]) * (2 if kind in (b"%", b"|") else 1)
            return line + b"".join([await self._value(reader) for _ in range(max(count, 0))])
        return line

    async def _serve(self, sentinel: int, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", sentinel)
        except OSError:
            writer.close()
            return

        async def upstream() -> None:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                up_writer.write(data)
                await up_writer.drain()

        async def downstream() -> None:
            while True:
                writer.write(await self._value(up_reader))
                await writer.drain()

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for each in (writer, up_writer):
                each.close()

    def uri(self, sentinels: List[int], name: str) -> str:
        return ("redis-sentinel://" + ",".join(f"127.0.0.1:{self.port[s]}" for s in sentinels)
                + f"?sentinelMasterId={name}")

    def stop(self) -> None:
        async def close() -> None:
            for server in self._servers:
                server.close()
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


class Group:
    """What the nemesis asks of one Sentinel group (a SentinelGroup of
    tests/faults/harness.py), and its servers' proxies."""

    def __init__(self, group: Any, proxies: Dict[int, str]) -> None:
        self.group = group
        self.name = group.name
        self.proxies = proxies   # server port -> Toxiproxy proxy name

    def master(self) -> Optional[int]:
        """The master's port when every sentinel names the same one."""
        named = set()
        for sentinel in self.group.sentinels:
            try:
                reply = call(sentinel, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.name)
            except (OSError, ReplyError, ValueError):
                return None
            if not reply:
                return None
            named.add(int(reply[1]))
        return named.pop() if len(named) == 1 else None

    def promoted(self, old: int) -> Optional[int]:
        """The new master once every sentinel names one other than old and
        it says it is a master."""
        new = self.master()
        return new if new not in (None, old) and self.role(new) == "master" else None

    @staticmethod
    def role(port: int) -> Optional[str]:
        try:
            return call(port, "ROLE", timeout=1.0)[0]
        except (OSError, ReplyError, ValueError, IndexError, TypeError):
            return None

    @staticmethod
    def run_id(port: int) -> Optional[str]:
        try:
            return info(port, "server").get("run_id")
        except (OSError, ReplyError, ValueError):
            return None

    def settled(self) -> bool:
        """Every sentinel names one master, it is a master, and every other
        running server replicates it, in sync."""
        master = self.master()
        if master is None or self.role(master) != "master":
            return False
        for port in self.group.servers:
            if port == master or not self.group.running(port):
                continue
            try:
                state = info(port, "replication")
            except (OSError, ReplyError, ValueError):
                return False
            if (state.get("role") != "slave" or state.get("master_port") != str(master)
                    or state.get("master_link_status") != "up"):
                return False
        return True


def wait_for(predicate: Callable[[], Any], timeout: float, step: float = 0.05) -> Any:
    """predicate()'s first true value within timeout seconds, else None."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value or None
        time.sleep(step)


@dataclass
class Fault:
    kind: str
    group: str
    start_ns: int = 0
    end_ns: int = 0
    # The master changed: the group's counters may have lost their last
    # increments (a promoted replica lags); or all (kill-empty-quick).
    lossy: bool = False
    # The master changed or restarted: its guard holds it back after.
    guarded: bool = False
    failover: bool = False
    notes: List[str] = field(default_factory=list)
    error: Optional[str] = None


@dataclass
class Timing:
    """How long things last, in seconds: (low, high) for a uniform draw."""
    calm: Tuple[float, float] = (1.5, 4.0)
    pause: Tuple[float, float] = (0.2, 0.6)
    # The sentinels promote about 1.5 s after the master stopped answering
    # (down-after 1 s, then the vote): mostly under the stopped master,
    # sometimes just after it woke up.
    long_pause: Tuple[float, float] = (1.8, 5.0)
    cut: Tuple[float, float] = (1.0, 4.0)
    late_every: Tuple[float, float] = (4.0, 12.0)
    late_life: Tuple[float, float] = (5.0, 15.0)
    # Chance of a late client right after a promotion or restart.
    late_after_change: float = 0.5
    late_at_once: int = 2
    # The last faults start this long before the clients stop, so that the
    # run ends calm.
    final_calm: float = 10.0


class Nemesis:
    def __init__(self, groups: List[Group], toxiproxy: Any, kinds: List[str], seed: int,
                 at_once: int, guard_s: float, log_path: Path, timing: Timing,
                 spawn_late: Optional[Callable[[str, str, float], Any]],
                 late_langs: List[str]) -> None:
        self.groups = groups
        self.toxiproxy = toxiproxy
        self.kinds = kinds
        # The faults' choices from one generator, the late clients' from
        # another: with one group at a time, a seed replays the same faults
        # whatever the late clients' timing.
        self.rng = random.Random(seed)
        self.late_rng = random.Random(seed + 1)
        self.at_once = at_once
        self.guard_s = guard_s
        self.timing = timing
        self.spawn_late = spawn_late
        self.late_langs = late_langs
        self.faults: List[Fault] = []
        self.errors: List[str] = []
        self.late: List[Tuple[str, Any]] = []   # (holder, process)
        self._lock = threading.Lock()
        self._busy: set = set()
        self._bag: List[str] = []
        self._late_count = 0
        self._log = open(log_path, "a", buffering=1)
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._faults_until = 0.0
        self._clients_until = 0.0

    # ---- the log ----

    def log(self, group: str, kind: str, message: str) -> None:
        now = time.time()
        stamp = time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"
        line = f"{stamp} {time.monotonic() - self._t0:8.3f} {group:<7} {kind:<16} {message}"
        with self._lock:
            self._log.write(line + "\n")

    # ---- the schedule ----

    def run(self, clients_until: float) -> None:
        """Faults until final_calm before clients_until (time.monotonic()),
        and late clients until then; returns once every fault is healed."""
        self._clients_until = clients_until
        self._faults_until = clients_until - self.timing.final_calm
        self.log("-", "-", f"faults: {', '.join(self.kinds)}; {self.at_once} group(s) at a time")
        threads = [threading.Thread(target=self._worker, args=(n,), daemon=True)
                   for n in range(self.at_once)]
        if self.spawn_late and self.late_langs:
            threads.append(threading.Thread(target=self._late_loop, daemon=True))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.log("-", "-", "done")

    def stop(self) -> None:
        self._stop.set()

    def _sleep(self, seconds: float) -> bool:
        """False when stopped meanwhile."""
        return not self._stop.wait(max(0.0, seconds))

    def _next_kind(self) -> str:
        # Every kind once per round, in a random order: a short run sees
        # them all.
        with self._lock:
            if not self._bag:
                self._bag = list(self.kinds)
                self.rng.shuffle(self._bag)
            return self._bag.pop()

    def _take_group(self) -> Optional[Group]:
        with self._lock:
            free = [group for group in self.groups if group.name not in self._busy]
            if not free:
                return None
            group = self.rng.choice(free)
            self._busy.add(group.name)
            return group

    def _worker(self, number: int) -> None:
        # Workers start apart, so that with two they are not in step.
        if not self._sleep(self.rng.uniform(*self.timing.calm) * (1 + number)):
            return
        while time.monotonic() < self._faults_until - 5 and not self._stop.is_set():
            group = self._take_group()
            if group is None:
                self._sleep(0.2)
                continue
            kind = self._next_kind()
            try:
                self._fault(kind, group)
            finally:
                with self._lock:
                    self._busy.discard(group.name)
            if not self._sleep(self.rng.uniform(*self.timing.calm)):
                return

    # ---- late clients ----

    def _late_loop(self) -> None:
        while True:
            left = self._clients_until - 5 - time.monotonic()
            if left <= 0 or not self._sleep(min(left, self.late_rng.uniform(
                    *self.timing.late_every))):
                return
            if time.monotonic() < self._clients_until - 5:
                self.start_late("at a random time")

    def start_late(self, why: str) -> None:
        """A new client process, which never met the masters, for a while."""
        if not self.spawn_late or time.monotonic() > self._clients_until - 3:
            return
        with self._lock:
            alive = sum(1 for _, process in self.late if process.poll() is None)
            if alive >= self.timing.late_at_once:
                return
            lang = self.late_langs[self._late_count % len(self.late_langs)]
            holder = f"late-{lang}-{self._late_count}"
            self._late_count += 1
            life = self.late_rng.uniform(*self.timing.late_life)
        until = min(time.monotonic() + life, self._clients_until)
        process = self.spawn_late(holder, lang, until)
        with self._lock:
            self.late.append((holder, process))
        self.log("-", "late", f"{holder} started ({why}), for {until - time.monotonic():.1f} s")

    def _late_after(self, group: Group, kind: str, what: str) -> None:
        if self.late_rng.random() < self.timing.late_after_change:
            self.start_late(f"right after {what} on {group.name}, {kind}")

    # ---- one fault ----

    def _fault(self, kind: str, group: Group) -> None:
        fault = Fault(kind, group.name)
        try:
            if not wait_for(group.settled, 90):
                raise RuntimeError("the group did not settle before the fault")
            master = group.master()
            run_id = Group.run_id(master)
            fault.start_ns = time.time_ns()
            self.log(group.name, kind,
                     f"begins on master {master} (run_id {(run_id or '?')[:8]})")
            getattr(self, "_" + kind.replace("-", "_"))(group, fault, master)
            if not wait_for(group.settled, 90):
                raise RuntimeError("the group did not settle after the fault")
            now_master = group.master()
            now_run_id = Group.run_id(now_master)
            fault.failover = fault.failover or now_master != master
            fault.lossy = kind == "kill-empty-quick" or fault.failover
            fault.guarded = fault.lossy or now_run_id != run_id
            if now_master != master:
                self.log(group.name, kind, f"healed: master {now_master} (was {master})")
            elif now_run_id != run_id:
                self.log(group.name, kind, f"healed: master {master} restarted "
                                           f"(run_id {(now_run_id or '?')[:8]})")
            else:
                self.log(group.name, kind, f"healed: master {master}, the same")
            # A promoted or restarted master does not count for new locks
            # until its guard runs out: the fault lasts as long.
            tail = self.guard_s + 0.5 if fault.guarded else 0.5
        except Exception as error:   # noqa: BLE001 - any failure is the run's
            fault.error = f"{type(error).__name__}: {error}"
            self.errors.append(f"{kind} on {group.name}: {fault.error}")
            self.log(group.name, kind, f"ERROR {fault.error}; rescuing the group")
            self._rescue(group)
            fault.lossy = fault.guarded = True
            tail = self.guard_s + 0.5
        fault.start_ns = fault.start_ns or time.time_ns()
        time.sleep(tail)
        fault.end_ns = time.time_ns()
        self.log(group.name, kind, f"ends ({(fault.end_ns - fault.start_ns) / 1e9:.1f} s)")
        with self._lock:
            self.faults.append(fault)

    def _rescue(self, group: Group) -> None:
        """Best effort: every server running and going on, no toxic left."""
        for port in group.group.servers:
            try:
                if group.group.running(port):
                    os.kill(group.group.pid(port), signal.SIGCONT)
                else:
                    group.group.restart(port, data=True)
            except (OSError, subprocess.SubprocessError, ValueError):
                pass
        self._heal_cut(group)
        if not wait_for(group.settled, 90):
            self.errors.append(f"{group.name} did not settle after its rescue")
            self.log(group.name, "-", "ERROR did not settle after its rescue")

    def _failover(self, group: Group, fault: Fault, master: int) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                reply = call(group.group.sentinels[0], "SENTINEL", "FAILOVER", group.name)
                self.log(group.name, fault.kind, f"SENTINEL FAILOVER: {reply}")
                break
            except (ReplyError, OSError) as error:
                # INPROG, NOGOODSLAVE: a failover under way, a replica not ready.
                if time.monotonic() > deadline:
                    fault.notes.append(f"refused: {error}")
                    self.log(group.name, fault.kind, f"SENTINEL FAILOVER refused: {error}")
                    return
                time.sleep(0.3)
        new = wait_for(lambda: group.promoted(master), 60)
        if new:
            fault.failover = True
            self.log(group.name, fault.kind, f"promoted {new}")
            self._late_after(group, fault.kind, "a promotion")

    def _stop_for(self, group: Group, fault: Fault, master: int, seconds: float) -> None:
        pid = group.group.pid(master)
        os.kill(pid, signal.SIGSTOP)
        self.log(group.name, fault.kind, f"SIGSTOP {master} (pid {pid}) for {seconds:.2f} s")
        try:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                if not fault.failover and group.promoted(master):
                    fault.failover = True
                    self.log(group.name, fault.kind, f"promoted {group.master()} under the "
                                                     "stopped master")
                    self._late_after(group, fault.kind, "a promotion")
                time.sleep(0.1)
        finally:
            os.kill(pid, signal.SIGCONT)
        self.log(group.name, fault.kind, f"SIGCONT {master}")

    def _pause(self, group: Group, fault: Fault, master: int) -> None:
        self._stop_for(group, fault, master, self.rng.uniform(*self.timing.pause))

    def _long_pause(self, group: Group, fault: Fault, master: int) -> None:
        self._stop_for(group, fault, master, self.rng.uniform(*self.timing.long_pause))
        if not fault.failover:
            fault.notes.append("some promoted only after SIGCONT, or not at all")

    def _kill(self, group: Group, fault: Fault, master: int, data: bool, slow: bool) -> None:
        group.group.kill(master)
        self.log(group.name, fault.kind, f"SIGKILL {master}")
        if slow:
            new = wait_for(lambda: group.promoted(master), 60)
            if new:
                fault.failover = True
                self.log(group.name, fault.kind, f"promoted {new}")
                self._late_after(group, fault.kind, "a promotion")
            else:
                fault.notes.append("no failover within 60 s")
                self.log(group.name, fault.kind, "no failover within 60 s: restarting anyway")
        group.group.restart(master, data=data)
        self.log(group.name, fault.kind,
                 f"restarted {master} {'with its data' if data else 'empty'}"
                 + ("" if slow else f", before any failover" if group.master() == master
                    else ", but the sentinels had begun a failover"))
        if not slow:
            self._late_after(group, fault.kind, "a restart")

    def _kill_data(self, group: Group, fault: Fault, master: int) -> None:
        self._kill(group, fault, master, data=True, slow=False)

    def _kill_data_slow(self, group: Group, fault: Fault, master: int) -> None:
        self._kill(group, fault, master, data=True, slow=True)

    def _kill_empty_slow(self, group: Group, fault: Fault, master: int) -> None:
        self._kill(group, fault, master, data=False, slow=True)

    def _kill_empty_quick(self, group: Group, fault: Fault, master: int) -> None:
        self._kill(group, fault, master, data=False, slow=False)

    def _cut(self, group: Group, fault: Fault, toxic: str, **attributes: int) -> None:
        seconds = self.rng.uniform(*self.timing.cut)
        before = self.toxiproxy._process.pid
        for port, proxy in sorted(group.proxies.items()):
            self.toxiproxy.toxic(proxy, toxic, "upstream", **attributes)
        self.log(group.name, fault.kind, f"{toxic} on the clients' connections to "
                                         f"{', '.join(map(str, sorted(group.proxies)))} "
                                         f"for {seconds:.2f} s")
        time.sleep(seconds)
        self._heal_cut(group)
        self.log(group.name, fault.kind, "connections restored")
        if self.toxiproxy._process.pid != before:
            # harness.Toxiproxy restarts a wedged server: every proxied
            # connection of every group was closed.
            fault.notes.append("toxiproxy-server restarted")
            self.log(group.name, fault.kind, "toxiproxy-server was restarted (its API wedged): "
                                             "every proxied connection closed")

    def _heal_cut(self, group: Group) -> None:
        if not self.toxiproxy:
            return
        for proxy in group.proxies.values():
            for toxic in ("reset_peer_upstream", "timeout_upstream"):
                try:
                    self.toxiproxy.remove_toxic(proxy, toxic)
                except RuntimeError:
                    pass   # 404: that toxic was not there

    def _cut_reset(self, group: Group, fault: Fault, master: int) -> None:
        self._cut(group, fault, "reset_peer", timeout=0)

    def _cut_timeout(self, group: Group, fault: Fault, master: int) -> None:
        self._cut(group, fault, "timeout", timeout=0)

    # ---- after the run ----

    def write(self, path: Path) -> None:
        """faults.jsonl: one line per fault."""
        with open(path, "w") as out:
            for fault in sorted(self.faults, key=lambda f: f.start_ns):
                out.write(json.dumps(fault.__dict__) + "\n")

    def close(self) -> None:
        self._log.close()


def timeline(faults: List[Fault], start_ns: int, end_ns: int) -> List[Dict[str, Any]]:
    """The run cut into phases: "calm" while no group is in a fault, else
    the kinds of the faults under way (" + " between two)."""
    edges = sorted({start_ns, end_ns} | {t for f in faults for t in (f.start_ns, f.end_ns)
                                         if start_ns < t < end_ns})
    phases: List[Dict[str, Any]] = []
    for begin, end in zip(edges, edges[1:]):
        kinds = sorted(f.kind for f in faults if f.start_ns <= begin and end <= f.end_ns)
        name = " + ".join(kinds) or "calm"
        if phases and phases[-1]["phase"] == name:
            phases[-1]["end_ns"] = end
        else:
            phases.append({"phase": name, "start_ns": begin, "end_ns": end})
    return phases


def fence_resets(faults: List[Fault]) -> List[List[Any]]:
    """The spans across which fences may go back (docs/guarantees.md: a node
    that loses its counter). A master restarted empty before any failover
    makes its group forget every counter. A failover loses the increments
    its replica had not copied, and those its old master took, until the
    sentinels demote it, for a client that had not asked them since the
    promotion (for up to sentinel_poll_ms): a fence written back there and
    on one other group only can be handed out again by a quorum of the new
    master and the third group, if that one missed it. Another group in a
    fault at the same time (it may have missed increments, or lost some)
    makes the two faults' spans together one reset too."""
    resets = [[f.start_ns, f.end_ns, f"{f.kind} on {f.group}"] for f in faults
              if f.kind == "kill-empty-quick" or f.failover]
    for i, one in enumerate(faults):
        for other in faults[i + 1:]:
            if (one.lossy or other.lossy) and one.group != other.group \
                    and one.start_ns < other.end_ns and other.start_ns < one.end_ns:
                resets.append([min(one.start_ns, other.start_ns),
                               max(one.end_ns, other.end_ns),
                               f"{one.kind} on {one.group} with {other.kind} on {other.group}"])
    return sorted(resets)


def summary(faults: List[Fault]) -> List[str]:
    """A line per kind: how often, on which groups, failovers seen."""
    lines = []
    for kind in KINDS:
        mine = [f for f in faults if f.kind == kind]
        if not mine:
            continue
        seconds = sum(f.end_ns - f.start_ns for f in mine) / 1e9
        groups = sorted({f.group for f in mine})
        notes = sorted({note for f in mine for note in f.notes})
        lines.append(f"  {kind:<17}{len(mine):>3} x, {seconds:6.1f} s in all, on "
                     f"{', '.join(groups)}; {sum(f.failover for f in mine)} with a failover"
                     + (f", {sum(1 for f in mine if f.error)} with an error"
                        if any(f.error for f in mine) else "")
                     + (f" ({'; '.join(notes)})" if notes else ""))
    return lines
