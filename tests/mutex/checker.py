"""Checks a mutual-exclusion run and prints its summary table.

    python3 checker.py RUN_DIR

RUN_DIR holds what tests/mutex/run wrote:
  ops-*.jsonl    one line per attempt, from every client:
                 {holder, lang, resource, start_ns, end_ns, validity_ms, ok,
                  result, wrote?, unlock?}; for an acquired lock start_ns..end_ns
                 is the critical section and validity_ms what the library
                 promised at its start; otherwise they bound the attempt
  phases.jsonl   {phase, start_ns, end_ns}: which fault ran when
  counters.json  {resource: value} read from the counter server at the end

Three properties, each a line PASS or FAIL, exit status 1 on any FAIL:
  exclusion  no two critical sections of one resource overlap inside their
             validity windows [start, min(end, start + validity)]
  counter    each resource's counter equals its number of critical sections
  progress   locks were acquired under every fault of the schedule that
             ran while clients were trying
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, Tuple

Record = Dict[str, object]


def load(run_dir: Path) -> Tuple[List[Record], List[Record], Dict[str, int]]:
    ops: List[Record] = []
    for path in sorted(run_dir.glob("ops-*.jsonl")):
        ops.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    phases = [json.loads(line) for line in (run_dir / "phases.jsonl").read_text().splitlines()
              if line.strip()]
    counters = json.loads((run_dir / "counters.json").read_text())
    return ops, phases, counters


def window(op: Record) -> Tuple[int, int]:
    start = int(op["start_ns"])
    return start, min(int(op["end_ns"]), start + int(op["validity_ms"]) * 1_000_000)


def overlaps(ops: List[Record]) -> List[Tuple[Record, Record]]:
    """Pairs of critical sections of one resource whose windows intersect."""
    found = []
    by_resource: Dict[str, List[Record]] = defaultdict(list)
    for op in ops:
        if op["ok"]:
            by_resource[str(op["resource"])].append(op)
    for sections in by_resource.values():
        sections.sort(key=lambda op: int(op["start_ns"]))
        latest = None  # the section whose window ends last so far
        for op in sections:
            start, end = window(op)
            if latest is not None and start < window(latest)[1]:
                found.append((latest, op))
            if latest is None or end > window(latest)[1]:
                latest = op
    return found


def counter_mismatches(ops: List[Record], counters: Dict[str, int]) -> List[str]:
    sections = Counter(str(op["resource"]) for op in ops if op["ok"])
    problems = []
    for op in ops:
        if op["ok"] and not op.get("wrote", True):
            problems.append(f"{op['holder']} could not write the counter of {op['resource']}")
    for resource in sorted(set(sections) | set(counters)):
        if counters.get(resource, 0) != sections[resource]:
            problems.append(f"{resource}: counter {counters.get(resource, 0)}, "
                            f"{sections[resource]} critical sections")
    return problems


def phase_of(op: Record, phases: List[Record]) -> str:
    moment = int(op["start_ns"])
    for phase in phases:
        if int(phase["start_ns"]) <= moment < int(phase["end_ns"]):
            return str(phase["phase"])
    return "(between phases)"


def table(ops: List[Record], phases: List[Record]) -> Tuple[List[str], Dict[str, int]]:
    """The summary lines, and the acquisitions under each phase."""
    names = list(dict.fromkeys(str(phase["phase"]) for phase in phases))
    seconds: Dict[str, float] = defaultdict(float)
    for phase in phases:
        seconds[str(phase["phase"])] += (int(phase["end_ns"]) - int(phase["start_ns"])) / 1e9
    langs = sorted({str(op["lang"]) for op in ops})
    rows: Dict[str, Counter] = defaultdict(Counter)
    for op in ops:
        row = rows[phase_of(op, phases)]
        row["attempts"] += 1
        row[str(op["result"])] += 1
        if op["ok"]:
            row[f"ok:{op['lang']}"] += 1
            if int(op["end_ns"]) > window(op)[1]:
                row["overran"] += 1
    if "(between phases)" in rows:
        names.append("(between phases)")
    head = (f"{'phase':<22}{'secs':>6}{'attempts':>9}{'acquired':>9}{'per s':>7}"
            + "".join(f"{lang:>8}" for lang in langs)
            + f"{'locked':>8}{'noquorum':>9}{'other':>7}{'overran':>8}")
    lines = [head, "-" * len(head)]
    acquired = {}
    for name in names + ["all"]:
        row = sum(rows.values(), Counter()) if name == "all" else rows[name]
        secs = sum(seconds.values()) if name == "all" else seconds[name]
        ok = row["ok"]
        other = row["attempts"] - ok - row["locked"] - row["noquorum"]
        acquired[name] = ok
        lines.append(f"{name:<22}{secs:>6.1f}{row['attempts']:>9}{ok:>9}"
                     f"{ok / secs if secs else 0:>7.1f}"
                     + "".join(f"{row['ok:' + lang]:>8}" for lang in langs)
                     + f"{row['locked']:>8}{row['noquorum']:>9}{other:>7}{row['overran']:>8}")
    return lines, acquired


def check(run_dir: Path) -> bool:
    ops, phases, counters = load(run_dir)
    lines, acquired = table(ops, phases)
    print("\n".join(lines))
    print()
    ok = True

    pairs = overlaps(ops)
    sections = sum(1 for op in ops if op["ok"])
    print(f"{'PASS' if not pairs else 'FAIL'} exclusion: {sections} critical sections, "
          f"{len(pairs)} overlapping")
    for first, second in pairs[:10]:
        print(f"  {first['resource']}: {first['holder']} {window(first)} and "
              f"{second['holder']} {window(second)}")
    ok &= not pairs

    problems = counter_mismatches(ops, counters)
    print(f"{'PASS' if not problems else 'FAIL'} counter: {sum(counters.values())} increments "
          f"for {sections} critical sections")
    for problem in problems[:10]:
        print(f"  {problem}")
    ok &= not problems

    tried = {phase_of(op, phases) for op in ops}
    starved = [name for name in dict.fromkeys(str(p["phase"]) for p in phases)
               if name in tried and acquired.get(name, 0) == 0]
    print(f"{'PASS' if sections and not starved else 'FAIL'} progress: {sections} acquisitions"
          + (f"; none under {', '.join(starved)}" if starved else " under every phase"))
    ok &= bool(sections) and not starved
    return ok


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(0 if check(Path(sys.argv[1])) else 1)
