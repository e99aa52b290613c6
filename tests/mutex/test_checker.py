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


def fenced(holder, start_ms, fence, resource="r0"):
    """A section of a fencing run: a 5 ms section with its fence."""
    return dict(section(holder, start_ms, start_ms + 5, resource=resource), fence=fence)


def write_run(tmp_path: Path, ops, counters, phases=(("calm", 0, 10_000),), kind=None,
              permits=2, run=None, faults=()):
    if kind or run:
        (tmp_path / "run.json").write_text(json.dumps(
            dict({"kind": kind or "lock", "permits": permits}, **(run or {}))))
    if faults:
        (tmp_path / "faults.jsonl").write_text("".join(
            json.dumps({"kind": name, "group": group, "start_ns": start * MS,
                        "end_ns": end * MS}) + "\n" for name, group, start, end in faults))
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


def counts(ops):
    """The counters a clean run of these sections leaves."""
    found = {}
    for op in ops:
        found[op["resource"]] = found.get(op["resource"], 0) + 1
    return found


def test_growing_fences_pass(tmp_path, capsys):
    # Fences need not be consecutive (refused attempts count too), and each
    # resource has its own.
    ops = [fenced("a", 0, 1), fenced("b", 10, 4), fenced("c", 20, 9),
           fenced("a", 5, 2, resource="r1"), fenced("b", 15, 3, resource="r1")]
    assert checker.check(write_run(tmp_path, ops, counts(ops), run={"fencing": True}))
    assert ("PASS fences: 5 sections, each fence above every earlier one of its resource"
            in capsys.readouterr().out)


def test_a_fence_going_back_fails(tmp_path, capsys):
    ops = [fenced("a", 0, 5), fenced("b", 10, 7), fenced("c", 20, 6)]
    assert not checker.check(write_run(tmp_path, ops, counts(ops), run={"fencing": True}))
    out = capsys.readouterr().out
    assert "FAIL fences: 3 sections, 1 not above every earlier fence of their resource" in out
    assert f"r0: c fence 6 at {20 * MS} went back below 7 (b at {10 * MS})" in out


def test_a_fence_below_an_older_one_fails(tmp_path):
    # Above its predecessor but below the one before: still a fence going back.
    ops = [fenced("a", 0, 9), fenced("b", 10, 3), fenced("c", 20, 5)]
    problems, _, _ = checker.fence_problems(ops, [])
    assert len(problems) == 2 and "c fence 5" in problems[1] and "below 9" in problems[1]


def test_a_repeated_fence_fails(tmp_path, capsys):
    ops = [fenced("a", 0, 5), fenced("b", 10, 5)]
    assert not checker.check(write_run(tmp_path, ops, counts(ops), run={"fencing": True}))
    assert f"r0: b fence 5 at {10 * MS} repeated (a at 0)" in capsys.readouterr().out


def test_a_section_without_its_fence_fails(tmp_path, capsys):
    ops = [fenced("a", 0, 5), fenced("b", 10, None)]
    assert not checker.check(write_run(tmp_path, ops, counts(ops), run={"fencing": True}))
    assert "r0: b has no fence" in capsys.readouterr().out


def test_fences_are_not_compared_across_a_reset(tmp_path, capsys):
    # A node lost its counters from 100 to 200 ms: fences may start over
    # after it, and within it nothing is compared.
    ops = [fenced("a", 0, 50), fenced("b", 150, 2), fenced("c", 160, 1), fenced("d", 250, 3),
           fenced("e", 260, 4)]
    run = {"fencing": True, "fence_resets": [[100 * MS, 200 * MS, "kill-empty-quick on g0"]]}
    assert checker.check(write_run(tmp_path, ops, counts(ops), run=run))
    out = capsys.readouterr().out
    assert ("PASS fences: 5 sections, each fence above every earlier one of its resource; "
            "1 reset spans (a node lost its counters), 3 sections in or right after them "
            "compared with none, 4 went back across one (the documented limit)") in out
    assert "reset +0.100 s to +0.200 s: kill-empty-quick on g0" in out


def test_fences_after_a_reset_are_compared_again(tmp_path, capsys):
    ops = [fenced("a", 0, 50), fenced("d", 250, 7), fenced("e", 260, 6)]
    run = {"fencing": True, "fence_resets": [[100 * MS, 200 * MS, "kill-empty-quick on g0"]]}
    assert not checker.check(write_run(tmp_path, ops, counts(ops), run=run))
    assert f"r0: e fence 6 at {260 * MS} went back below 7 (d at {250 * MS})" in \
        capsys.readouterr().out


def test_a_nemesis_run_needs_progress_in_calm_spans_only(tmp_path, capsys):
    # Nothing acquired under the fault (two groups out, say), some in the
    # calm spans; a calm span shorter than CALM_MIN_S is not judged.
    ops = [section("a", 100, 110), refused("b", 1500, "noquorum"), section("c", 2500, 2510),
           refused("d", 3050, "noquorum")]
    phases = (("calm", 0, 1000), ("failover + cut-reset", 1000, 2000), ("calm", 2000, 3000),
              ("pause", 3000, 3010), ("calm", 3010, 3500))
    run = {"progress": "calm", "nemesis": {"seed": 1}}
    assert checker.check(write_run(tmp_path, ops, {"r0": 2}, phases, run=run))
    out = capsys.readouterr().out
    assert "PASS progress: 2 acquisitions; some in each of the 2 calm spans of 1 s or more" in out
    assert "failover + cut-reset" in out and "times" in out


def test_a_calm_span_without_an_acquisition_fails(tmp_path, capsys):
    ops = [section("a", 100, 110), refused("b", 1500, "noquorum"), refused("c", 1600)]
    phases = (("calm", 0, 1000), ("calm", 1000, 2500))
    run = {"progress": "calm"}
    assert not checker.check(write_run(tmp_path, ops, {"r0": 1}, phases, run=run))
    assert ("FAIL progress: 1 acquisitions; none in 1 of the 2 calm spans of 1 s or more: "
            "+1.000 s to +2.500 s") in capsys.readouterr().out


def test_an_overlap_names_the_faults_before_it(tmp_path, capsys):
    # Under a pause, 0.15 s after a data-less quick restart ended; the
    # failover ended 6.9 s before, over NEAR_NS: not named.
    ops = [section("a", 7000, 7100), dict(section("late-c-0", 7050, 7060), lang="c")]
    faults = [("failover", "group2", 0, 100), ("kill-empty-quick", "group1", 6500, 6900),
              ("pause", "group0", 7020, 7500)]
    phases = (("calm", 0, 10_000),)
    assert not checker.check(write_run(tmp_path, ops, {"r0": 2}, phases, run={"progress": "calm"},
                                       faults=faults))
    out = capsys.readouterr().out
    assert "FAIL exclusion: 2 critical sections, 1 overlapping" in out
    assert "+7.050 s: kill-empty-quick on group1 from +6.500 s to +6.900 s" in out
    assert "+7.050 s: pause on group0 from +7.020 s to +7.500 s" in out
    assert "right after a master restarted empty before any failover (kill-empty-quick)" in out
    assert "failover on group2" not in out


def test_the_nemesis_resets_fences_where_a_counter_may_be_lost():
    import nemesis
    faults = [nemesis.Fault("failover", "g0", 1, 2, lossy=True, failover=True),
              nemesis.Fault("kill-data-slow", "g1", 3, 4, lossy=True, failover=True),
              nemesis.Fault("kill-data", "g2", 5, 6),
              nemesis.Fault("kill-empty-quick", "g0", 7, 8, lossy=True),
              nemesis.Fault("long-pause", "g1", 9, 10),   # woke before any failover
              nemesis.Fault("cut-reset", "g1", 11, 14),
              nemesis.Fault("failover", "g2", 12, 13, lossy=True, failover=True)]
    assert nemesis.fence_resets(faults) == [
        [1, 2, "failover on g0"], [3, 4, "kill-data-slow on g1"],
        [7, 8, "kill-empty-quick on g0"], [11, 14, "cut-reset on g1 with failover on g2"],
        [12, 13, "failover on g2"]]
