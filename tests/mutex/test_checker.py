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


def reading(holder, start_ms, end_ms):
    """A read section of a rw run (a write one is section() with mode write)."""
    op = dict(section(holder, start_ms, end_ms), mode="read", read=True)
    del op["wrote"]
    return op


def writing(holder, start_ms, end_ms):
    return dict(section(holder, start_ms, end_ms), mode="write")


def permit(holder, start_ms, end_ms, inside=1, resource="r0"):
    return dict(section(holder, start_ms, end_ms, resource=resource), inside=inside)


def refused(holder, at_ms, result="locked"):
    return {"holder": holder, "lang": "python", "resource": "r0", "start_ns": at_ms * MS,
            "end_ns": (at_ms + 5) * MS, "validity_ms": 0, "ok": False, "result": result}


def write_run(tmp_path: Path, ops, counters, phases=(("calm", 0, 10_000),), kind=None,
              permits=2):
    if kind:
        (tmp_path / "run.json").write_text(json.dumps({"kind": kind, "permits": permits}))
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


def test_readers_may_overlap(tmp_path, capsys):
    ops = [reading("a", 0, 100), reading("b", 50, 60), reading("c", 90, 120),
           writing("d", 130, 140)]
    assert checker.check(write_run(tmp_path, ops, {"r0": 1}, kind="rw"))
    assert ("PASS exclusion: 4 critical sections (3 read, 1 write), 0 overlapping a writer"
            in capsys.readouterr().out)


def test_a_writer_overlapping_a_reader_fails(tmp_path, capsys):
    # A writer inside a reader's window, and a reader inside a writer's.
    ops = [reading("a", 0, 100), writing("b", 50, 60), writing("c", 200, 300),
           reading("d", 250, 260)]
    assert not checker.check(write_run(tmp_path, ops, {"r0": 2}, kind="rw"))
    out = capsys.readouterr().out
    assert "FAIL exclusion: 4 critical sections (2 read, 2 write), 2 overlapping a writer" in out
    assert "r0: a (read) (0, 100000000) and b (write) (50000000, 60000000)" in out


def test_a_reader_behind_a_long_writer_fails(tmp_path):
    # The writer's window outlasts a reader that ended before the next one.
    ops = [writing("a", 0, 500), reading("b", 100, 110), reading("c", 200, 210)]
    assert len(checker.overlaps(ops, "rw")) == 2


def test_two_writers_overlapping_fail(tmp_path):
    assert len(checker.overlaps([writing("a", 0, 100), writing("b", 50, 60)], "rw")) == 1


def test_the_rw_counter_counts_write_sections(tmp_path, capsys):
    ops = [writing("a", 0, 10), reading("b", 20, 30), reading("c", 25, 35), writing("d", 40, 50)]
    assert checker.check(write_run(tmp_path, ops, {"r0": 2}, kind="rw"))
    assert "PASS counter: 2 increments for 2 write sections" in capsys.readouterr().out
    # A lost update: one increment for two writers (what readers do not count).
    assert not checker.check(write_run(tmp_path, ops, {"r0": 1}, kind="rw"))
    assert "r0: counter 1, 2 critical sections" in capsys.readouterr().out
    # Readers counted as writers.
    assert not checker.check(write_run(tmp_path, ops, {"r0": 4}, kind="rw"))


def test_a_reader_that_could_not_read_fails(tmp_path, capsys):
    ops = [dict(reading("a", 0, 10), read=False)]
    assert not checker.check(write_run(tmp_path, ops, {"r0": 0}, kind="rw"))
    assert "a could not read the counter of r0" in capsys.readouterr().out


def test_permits_up_to_their_number_pass(tmp_path, capsys):
    ops = [permit("a", 0, 100), permit("b", 50, 150, inside=2), permit("c", 100, 200, inside=2),
           permit("d", 150, 160, inside=2), permit("e", 300, 310, resource="r1")]
    assert checker.check(write_run(tmp_path, ops, {"r0": 0, "r1": 0}, kind="semaphore"))
    out = capsys.readouterr().out
    assert "PASS permits: 5 sections under a permit, 0 times more than 2 at once" in out
    assert "PASS inside: 5 probes, at most 2 inside at once (permits 2)" in out


def test_one_permit_too_many_fails(tmp_path, capsys):
    # c starts while a and b hold theirs: three at once, for 2 permits.
    ops = [permit("a", 0, 100), permit("b", 50, 150, inside=2), permit("c", 60, 70, inside=2)]
    assert not checker.check(write_run(tmp_path, ops, {"r0": 0}, kind="semaphore"))
    out = capsys.readouterr().out
    assert "FAIL permits: 3 sections under a permit, 1 times more than 2 at once" in out
    assert "r0: a (0, 100000000) and b (50000000, 150000000) and c (60000000, 70000000)" in out


def test_a_permit_past_its_validity_does_not_crowd(tmp_path):
    ops = [dict(permit("a", 0, 100), validity_ms=40), permit("b", 50, 150),
           permit("c", 60, 70)]
    assert checker.overlaps(ops, "semaphore", 2) == []


def test_inside_above_the_permits_fails_whatever_the_timestamps(tmp_path, capsys):
    # Apart in time, yet the counter server saw three inside.
    ops = [permit("a", 0, 10), permit("b", 20, 30, inside=3)]
    assert not checker.check(write_run(tmp_path, ops, {"r0": 0}, kind="semaphore"))
    out = capsys.readouterr().out
    assert "PASS permits" in out
    assert "FAIL inside: 2 probes, at most 3 inside at once (permits 2)" in out
    assert "b found 3 inside r0" in out


def test_a_probe_left_inside_fails(tmp_path, capsys):
    ops = [dict(permit("a", 0, 10), wrote=False)]
    assert not checker.check(write_run(tmp_path, ops, {"r0": 1}, kind="semaphore"))
    out = capsys.readouterr().out
    assert "a could not count itself out of r0" in out
    assert "r0: 1 still inside at the end" in out
