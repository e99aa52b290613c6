"""The checker itself: it passes a clean run and catches each kind of
failure in records made up for the purpose."""

import json
from pathlib import Path

import checker

MS = 1_000_000


def section(holder, start_ms, end_ms, validity_ms=1000, resource="r0"):
    return {"holder": holder, "lang": "c", "resource": resource, "start_ns": start_ms * MS,
            "end_ns": end_ms * MS, "validity_ms": validity_ms, "ok": True, "result": "ok",
            "wrote": True, "unlock": "ok"}


def refused(holder, at_ms, result="locked"):
    return {"holder": holder, "lang": "python", "resource": "r0", "start_ns": at_ms * MS,
            "end_ns": (at_ms + 5) * MS, "validity_ms": 0, "ok": False, "result": result}


def write_run(tmp_path: Path, ops, counters, phases=(("calm", 0, 10_000),)):
    (tmp_path / "ops-all.jsonl").write_text("".join(json.dumps(op) + "\n" for op in ops))
    (tmp_path / "phases.jsonl").write_text("".join(
        json.dumps({"phase": name, "start_ns": start * MS, "end_ns": end * MS}) + "\n"
        for name, start, end in phases))
    (tmp_path / "counters.json").write_text(json.dumps(counters))
    return tmp_path


def test_a_clean_run_passes(tmp_path, capsys):
    ops = [section("a", 0, 10), refused("b", 5), section("b", 11, 20),
           section("a", 21, 30, resource="r1")]
    assert checker.check(write_run(tmp_path, ops, {"r0": 2, "r1": 1}))
    assert "PASS exclusion: 3 critical sections, 0 overlapping" in capsys.readouterr().out


def test_overlapping_sections_fail(tmp_path, capsys):
    ops = [section("a", 0, 100), section("b", 50, 60)]
    assert not checker.check(write_run(tmp_path, ops, {"r0": 2}))
    assert "FAIL exclusion: 2 critical sections, 1 overlapping" in capsys.readouterr().out


def test_a_section_past_its_validity_does_not_count_as_overlap(tmp_path, capsys):
    # a's validity ended at 20 ms; b came after it: the lock was b's.
    ops = [section("a", 0, 100, validity_ms=20), section("b", 30, 40)]
    assert checker.check(write_run(tmp_path, ops, {"r0": 2}))
    out = capsys.readouterr().out
    assert "PASS exclusion" in out
    all_row = next(line for line in out.splitlines() if line.startswith("all "))
    assert all_row.split()[-1] == "1"  # the overran column


def test_a_nested_overlap_behind_a_long_section_fails(tmp_path):
    ops = [section("a", 0, 500), section("b", 100, 110), section("c", 200, 210)]
    assert len(checker.overlaps(ops)) == 2


def test_a_lost_update_fails(tmp_path, capsys):
    ops = [section("a", 0, 10), section("b", 11, 20)]
    assert not checker.check(write_run(tmp_path, ops, {"r0": 1}))
    assert "r0: counter 1, 2 critical sections" in capsys.readouterr().out


def test_no_acquisition_under_a_fault_fails(tmp_path, capsys):
    ops = [section("a", 0, 10), refused("b", 1500, "noquorum")]
    phases = (("calm", 0, 1000), ("partition", 1000, 2000))
    assert not checker.check(write_run(tmp_path, ops, {"r0": 1}, phases))
    assert "none under partition" in capsys.readouterr().out
