"""Checks a mutual-exclusion run and prints its summary table.

    python3 checker.py RUN_DIR

RUN_DIR holds what tests/mutex/run wrote:
  ops-*.jsonl    one line per attempt, from every client:
                 {holder, lang, resource, start_ns, end_ns, validity_ms, ok,
                  result, mode?, wrote?, read?, inside?, unlock?}; for an
                 acquired lock start_ns..end_ns is the critical section and
                 validity_ms what the library promised at its start;
                 otherwise they bound the attempt
  phases.jsonl   {phase, start_ns, end_ns}: which fault ran when
  counters.json  {resource: value} read from the counter server at the end:
                 counter:<resource>, or inside:<resource> in a semaphore run
  run.json       {kind, permits, fencing?, progress?, fence_resets?}; without
                 it, a lock run
  faults.jsonl   (a nemesis run) {kind, group, start_ns, end_ns, ...}: each
                 fault, to say which ones an overlap followed

What the clients took (kind):
  lock       the plain lock; a section bumps the counter (GET, SET + 1)
  rw         the read lock ("mode": "read", a section only GETs the counter)
             or the write lock ("mode": "write", it bumps the counter) of the
             resource's read-write lock
  semaphore  a permit of the resource's semaphore of `permits` permits; a
             section INCRs inside:<resource>, records the result ("inside"),
             then DECRs it

Three properties, each a line PASS or FAIL, exit status 1 on any FAIL:
  exclusion  no two critical sections of one resource overlap inside their
             validity windows [start, min(end, start + validity)]; in a rw
             run two read sections may (never a write section with another)
  counter    each resource's counter equals its number of critical sections
             (of write sections in a rw run)
  progress   locks were acquired under every fault of the schedule that
             ran while clients were trying; with "progress": "calm" (a
             nemesis run), acquisitions in the run and in every calm phase
             span of CALM_MIN_S or more in which clients tried, none asked
             for under a fault
With "fencing": true (records carry "fence"), a fourth:
  fences     per resource, in the order the sections started, every fence is
             above every fence before it -- but across a span of
             "fence_resets" ([start_ns, end_ns, why]: a node lost its
             counters, docs/guarantees.md), which is not compared: a section
             is compared with the earlier ones that started after the end of
             every reset span begun before it
In a semaphore run exclusion and counter give way to:
  permits    no more than `permits` sections of one resource at any instant
             inside their validity windows
  inside     every recorded inside is at most `permits` (the counter
             server's count, which does not depend on timestamps), and each
             inside:<resource> is back to 0 at the end
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, Tuple

Record = Dict[str, object]
# The shortest calm span in which a nemesis run must acquire.
CALM_MIN_S = 1.0
# An overlap names the faults under way or ended this long before it.
NEAR_NS = 5_000_000_000


def load(run_dir: Path) -> Tuple[List[Record], List[Record], Dict[str, int]]:
    ops: List[Record] = []
    for path in sorted(run_dir.glob("ops-*.jsonl")):
        ops.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    phases = [json.loads(line) for line in (run_dir / "phases.jsonl").read_text().splitlines()
              if line.strip()]
    counters = json.loads((run_dir / "counters.json").read_text())
    return ops, phases, counters


def options(run_dir: Path) -> Dict[str, object]:
    """run.json, or {} without it."""
    path = run_dir / "run.json"
    return json.loads(path.read_text()) if path.exists() else {}


def settings(run_dir: Path) -> Tuple[str, int]:
    """The run's kind and permits (run.json; a lock run without it)."""
    found = options(run_dir)
    return str(found.get("kind", "lock")), int(found.get("permits", 1))


def load_faults(run_dir: Path) -> List[Record]:
    path = run_dir / "faults.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def reader(op: Record) -> bool:
    return op.get("mode") == "read"


def window(op: Record) -> Tuple[int, int]:
    start = int(op["start_ns"])
    return start, min(int(op["end_ns"]), start + int(op["validity_ms"]) * 1_000_000)


def overlaps(ops: List[Record], kind: str = "lock",
             permits: int = 1) -> List[Tuple[Record, ...]]:
    """Critical sections of one resource held together when they should not
    be: pairs whose windows intersect (but two readers'), or in a semaphore
    run each time a section's start makes more than `permits` at once."""
    found: List[Tuple[Record, ...]] = []
    by_resource: Dict[str, List[Record]] = defaultdict(list)
    for op in ops:
        if op["ok"]:
            by_resource[str(op["resource"])].append(op)
    for sections in by_resource.values():
        sections.sort(key=lambda op: int(op["start_ns"]))
        if kind == "semaphore":
            found.extend(crowds(sections, permits))
            continue
        latest = None  # the section whose window ends last so far
        latest_write = None  # the same among writers (a lock's sections are)
        for op in sections:
            start, end = window(op)
            against = latest_write if reader(op) else latest
            if against is not None and start < window(against)[1]:
                found.append((against, op))
            if latest is None or end > window(latest)[1]:
                latest = op
            if not reader(op) and (latest_write is None or end > window(latest_write)[1]):
                latest_write = op
    return found


def crowds(sections: List[Record], permits: int) -> List[Tuple[Record, ...]]:
    """The sections held at once whenever more than `permits` were, at the
    start of the one too many; sections sorted by start."""
    events = []
    for i, op in enumerate(sections):
        start, end = window(op)
        if start < end:
            # A window ends before another starts at the same instant.
            events += [(start, 1, i), (end, 0, i)]
    found = []
    held: Dict[int, Record] = {}
    for _, starts, i in sorted(events):
        if not starts:
            del held[i]
            continue
        held[i] = sections[i]
        if len(held) > permits:
            found.append(tuple(held.values()))
    return found


def counter_mismatches(ops: List[Record], counters: Dict[str, int]) -> List[str]:
    """Each counter against its write sections (every section of a lock)."""
    sections = Counter(str(op["resource"]) for op in ops if op["ok"] and not reader(op))
    problems = []
    for op in ops:
        if op["ok"] and not op.get("wrote", True):
            problems.append(f"{op['holder']} could not write the counter of {op['resource']}")
        if op["ok"] and not op.get("read", True):
            problems.append(f"{op['holder']} could not read the counter of {op['resource']}")
    for resource in sorted(set(sections) | set(counters)):
        if counters.get(resource, 0) != sections[resource]:
            problems.append(f"{resource}: counter {counters.get(resource, 0)}, "
                            f"{sections[resource]} critical sections")
    return problems


def inside_problems(ops: List[Record], counters: Dict[str, int], permits: int) -> List[str]:
    """The semaphore's probe: what INCR counted under each permit, at most
    `permits`, and each inside:<resource> back to 0 (every DECR done)."""
    problems = []
    for op in ops:
        if not op["ok"]:
            continue
        if op.get("inside") is None:
            problems.append(f"{op['holder']} could not count itself into {op['resource']}")
        elif int(op["inside"]) > permits:
            problems.append(f"{op['holder']} found {op['inside']} inside {op['resource']} "
                            f"from {op['start_ns']} (at most {permits})")
        if not op.get("wrote", True):
            problems.append(f"{op['holder']} could not count itself out of {op['resource']}")
    for resource, value in sorted(counters.items()):
        if value != 0:
            problems.append(f"{resource}: {value} still inside at the end")
    return problems


def fence_problems(ops: List[Record], resets: List[List[object]]) -> Tuple[List[str], int, int]:
    """Sections whose fence is not above every earlier fence of their
    resource (sections in start order), comparing only sections that no
    reset span separates (see the module's doc); with how many sections
    were compared with none for a reset, and how many went back across a
    reset (not a failure: the documented limit)."""
    spans = sorted((int(a), int(b)) for a, b, *_ in resets)
    problems: List[str] = []
    uncompared = across = 0
    by_resource: Dict[str, List[Record]] = defaultdict(list)
    for op in ops:
        if op["ok"]:
            by_resource[str(op["resource"])].append(op)
    for resource, sections in sorted(by_resource.items()):
        sections.sort(key=lambda op: int(op["start_ns"]))
        seen: List[Tuple[int, int, Record]] = []   # (start, fence, op) so far
        best = None   # the largest fence of the sections compared with, and its section
        overall = None   # the largest fence so far, resets or not
        cutoff = None   # the end of the last reset span begun so far
        for op in sections:
            start, fence = int(op["start_ns"]), op.get("fence")
            if fence is None:
                problems.append(f"{resource}: {op['holder']} has no fence (section at {start})")
                continue
            fence = int(fence)
            ends = [b for a, b in spans if a < start]
            if ends and max(ends) != cutoff:
                # A reset span began: from now on compare only with the
                # sections that began after it (and every earlier one) ended.
                cutoff = max(ends)
                best = max(((f, o) for begun, f, o in seen if begun >= cutoff),
                           key=lambda pair: pair[0], default=None)
            if best is not None and fence <= best[0]:
                how = "repeated" if fence == best[0] else f"went back below {best[0]}"
                problems.append(f"{resource}: {op['holder']} fence {fence} at {start} {how} "
                                f"({best[1]['holder']} at {best[1]['start_ns']})")
            elif best is None and seen:
                uncompared += 1
            if overall is not None and fence <= overall and (best is None or fence > best[0]):
                across += 1
            seen.append((start, fence, op))
            if (cutoff is None or start >= cutoff) and (best is None or fence > best[0]):
                best = (fence, op)
            overall = fence if overall is None else max(overall, fence)
    return problems, uncompared, across


def calm_starved(ops: List[Record], phases: List[Record]) -> Tuple[int, List[Record]]:
    """The calm spans of CALM_MIN_S or more judged (clients tried in
    them), and those with no acquisition."""
    judged, starved = 0, []
    for phase in phases:
        begin, end = int(phase["start_ns"]), int(phase["end_ns"])
        if phase["phase"] != "calm" or end - begin < CALM_MIN_S * 1e9:
            continue
        inside = [op for op in ops if begin <= int(op["start_ns"]) < end]
        if inside:
            judged += 1
            if not any(op["ok"] for op in inside):
                starved.append(phase)
    return judged, starved


def near_faults(moment: int, faults: List[Record]) -> List[Record]:
    """The faults under way at moment, or ended at most NEAR_NS before."""
    return [f for f in faults if int(f["start_ns"]) <= moment <= int(f["end_ns"]) + NEAR_NS]


def phase_of(op: Record, phases: List[Record]) -> str:
    moment = int(op["start_ns"])
    for phase in phases:
        if int(phase["start_ns"]) <= moment < int(phase["end_ns"]):
            return str(phase["phase"])
    return "(between phases)"


def table(ops: List[Record], phases: List[Record], kind: str = "lock",
          spans: bool = False) -> Tuple[List[str], Dict[str, int]]:
    """The summary lines, and the acquisitions under each phase; a rw run
    has the read and write sections too, a semaphore run the highest
    inside. With spans, how many times each phase came (a nemesis run);
    with late clients (holders late-*), their acquisitions."""
    names = list(dict.fromkeys(str(phase["phase"]) for phase in phases))
    seconds: Dict[str, float] = defaultdict(float)
    times: Counter = Counter()
    for phase in phases:
        seconds[str(phase["phase"])] += (int(phase["end_ns"]) - int(phase["start_ns"])) / 1e9
        times[str(phase["phase"])] += 1
    langs = sorted({str(op["lang"]) for op in ops})
    rows: Dict[str, Counter] = defaultdict(Counter)
    for op in ops:
        row = rows[phase_of(op, phases)]
        row["attempts"] += 1
        row[str(op["result"])] += 1
        if op["ok"]:
            row[f"ok:{op['lang']}"] += 1
            row["late"] += str(op["holder"]).startswith("late-")
            row["reads" if reader(op) else "writes"] += 1
            row["inside"] = max(row["inside"], int(op.get("inside") or 0))
            if int(op["end_ns"]) > window(op)[1]:
                row["overran"] += 1
    if "(between phases)" in rows:
        names.append("(between phases)")
    extra = {"rw": ["reads", "writes"], "semaphore": ["inside"]}.get(kind, [])
    if any(str(op["holder"]).startswith("late-") for op in ops):
        extra.append("late")
    width = max([22] + [len(name) + 1 for name in names])
    head = (f"{'phase':<{width}}" + (f"{'times':>6}" if spans else "")
            + f"{'secs':>6}{'attempts':>9}{'acquired':>9}{'per s':>7}"
            + "".join(f"{lang:>{max(8, len(lang) + 1)}}" for lang in langs)
            + "".join(f"{column:>8}" for column in extra)
            + f"{'locked':>8}{'noquorum':>9}{'other':>7}{'overran':>8}")
    lines = [head, "-" * len(head)]
    acquired = {}
    for name in names + ["all"]:
        if name == "all":
            row = sum(rows.values(), Counter())
            row["inside"] = max((each["inside"] for each in rows.values()), default=0)
        else:
            row = rows[name]
        secs = sum(seconds.values()) if name == "all" else seconds[name]
        ok = row["ok"]
        other = row["attempts"] - ok - row["locked"] - row["noquorum"]
        acquired[name] = ok
        count = sum(times.values()) if name == "all" else times[name]
        lines.append(f"{name:<{width}}" + (f"{count:>6}" if spans else "")
                     + f"{secs:>6.1f}{row['attempts']:>9}{ok:>9}"
                     f"{ok / secs if secs else 0:>7.1f}"
                     + "".join(f"{row['ok:' + lang]:>{max(8, len(lang) + 1)}}" for lang in langs)
                     + "".join(f"{row[column]:>8}" for column in extra)
                     + f"{row['locked']:>8}{row['noquorum']:>9}{other:>7}{row['overran']:>8}")
    return lines, acquired


def check(run_dir: Path) -> bool:
    ops, phases, counters = load(run_dir)
    kind, permits = settings(run_dir)
    run = options(run_dir)
    faults = load_faults(run_dir)
    origin = min([int(p["start_ns"]) for p in phases] + [int(op["start_ns"]) for op in ops],
                 default=0)

    def at(moment: object) -> str:
        return f"+{(int(moment) - origin) / 1e9:.3f} s"

    lines, acquired = table(ops, phases, kind, spans="nemesis" in run)
    print("\n".join(lines))
    print()
    ok = True

    found = overlaps(ops, kind, permits)
    sections = sum(1 for op in ops if op["ok"])
    if kind == "semaphore":
        print(f"{'PASS' if not found else 'FAIL'} permits: {sections} sections under a permit, "
              f"{len(found)} times more than {permits} at once")
    elif kind == "rw":
        reads = sum(1 for op in ops if op["ok"] and reader(op))
        print(f"{'PASS' if not found else 'FAIL'} exclusion: {sections} critical sections "
              f"({reads} read, {sections - reads} write), {len(found)} overlapping a writer")
    else:
        print(f"{'PASS' if not found else 'FAIL'} exclusion: {sections} critical sections, "
              f"{len(found)} overlapping")
    for group in found[:10]:
        print(f"  {group[0]['resource']}: " + " and ".join(
            f"{op['holder']}{' (' + str(op['mode']) + ')' if 'mode' in op else ''} {window(op)}"
            for op in group))
        # Which faults it followed (a nemesis run), a data-less restart
        # before any failover first of all.
        moment = max(int(op["start_ns"]) for op in group)
        for fault in near_faults(moment, faults):
            print(f"    {at(moment)}: {fault['kind']} on {fault['group']} from "
                  f"{at(fault['start_ns'])} to {at(fault['end_ns'])}")
        if any(f["kind"] == "kill-empty-quick" for f in near_faults(moment, faults)):
            print("    right after a master restarted empty before any failover "
                  "(kill-empty-quick): docs/topology.md lists it among the cases the guard "
                  "does not cover for clients that never met the old server")
    ok &= not found

    if kind == "semaphore":
        problems = inside_problems(ops, counters, permits)
        highest = max((int(op.get("inside") or 0) for op in ops if op["ok"]), default=0)
        print(f"{'PASS' if not problems else 'FAIL'} inside: {sections} probes, at most "
              f"{highest} inside at once (permits {permits})")
    else:
        problems = counter_mismatches(ops, counters)
        writes = sum(1 for op in ops if op["ok"] and not reader(op))
        print(f"{'PASS' if not problems else 'FAIL'} counter: {sum(counters.values())} increments "
              f"for {writes} {'write' if kind == 'rw' else 'critical'} sections")
    for problem in problems[:10]:
        print(f"  {problem}")
    ok &= not problems

    if run.get("progress") == "calm":
        # Faults may stop a group or two; calm spans, once the guards ran
        # out, may not.
        judged, spans = calm_starved(ops, phases)
        print(f"{'PASS' if sections and not spans else 'FAIL'} progress: {sections} "
              f"acquisitions; " + (f"none in {len(spans)} of the {judged} calm spans of "
                                   f"{CALM_MIN_S:g} s or more: " + ", ".join(
                                       f"{at(p['start_ns'])} to {at(p['end_ns'])}"
                                       for p in spans[:10])
                                   if spans else f"some in each of the {judged} calm spans of "
                                                 f"{CALM_MIN_S:g} s or more"))
        ok &= bool(sections) and not spans
    else:
        tried = {phase_of(op, phases) for op in ops}
        starved = [name for name in dict.fromkeys(str(p["phase"]) for p in phases)
                   if name in tried and acquired.get(name, 0) == 0]
        print(f"{'PASS' if sections and not starved else 'FAIL'} progress: {sections} acquisitions"
              + (f"; none under {', '.join(starved)}" if starved else " under every phase"))
        ok &= bool(sections) and not starved

    if run.get("fencing"):
        resets = list(run.get("fence_resets") or [])
        problems, uncompared, across = fence_problems(ops, resets)
        print(f"{'PASS' if not problems else 'FAIL'} fences: {sections} sections, "
              + (f"{len(problems)} not above every earlier fence of their resource"
                 if problems else "each fence above every earlier one of its resource")
              + (f"; {len(resets)} reset spans (a node lost its counters), {uncompared} "
                 f"sections in or right after them compared with none, {across} went back "
                 f"across one (the documented limit)" if resets else ""))
        for problem in problems[:10]:
            print(f"  {problem}")
        for start, end, why in resets[:10]:
            print(f"  reset {at(start)} to {at(end)}: {why}")
        ok &= not problems
    return ok


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(0 if check(Path(sys.argv[1])) else 1)
