"""Sanitizer output -> records -> findings on the user's lines, on hand-written realistic samples
(tests/run/sanitizer_samples.py says how they were made) aimed at real compiled kernels."""

from __future__ import annotations

import re

import isolation_kernels as K
import pytest
import sanitizer_samples as S
import torch

import workbench
from workbench.run.sanitize_findings import kernel_def_line, to_findings
from workbench.run.sanitize_report import parse_consan, parse_sanitizer, summary_counts


@pytest.fixture(scope="module")
def race_art():
    x = torch.randn(2 * 8 * 1024)
    return workbench.compile(K.ring_race, x, torch.empty_like(x), x.numel(), **K.RING_ARGS)


@pytest.fixture(scope="module")
def ok_art():
    x = torch.randn(2 * 8 * 1024)
    return workbench.compile(K.ring_ok, x, torch.empty_like(x), x.numel(), **K.RING_ARGS)


def race_lines():
    write, read = K.marked_line(K.ring_race, "RACE")
    return write, read


def test_racecheck_analysis_maps_both_accesses_and_is_confirmed_by_the_static_check(race_art):
    write, read = race_lines()
    text = S.racecheck_analysis(race_art.source.filename, "ring_race", write, read)
    [rec] = parse_sanitizer(text, "racecheck")
    assert rec.kind == "race" and rec.severity == "error" and rec.hazards == 8192
    assert [(a.role, a.line) for a in rec.accesses] == [("Write", write), ("Read", read), ("Read", read)]
    assert summary_counts(text) == {"hazards": 1, "errors": 1, "warnings": 0}
    static = [{"rule": "slot-reuse", "severity": "error", "line": write, "message": "slot reused", "related": []}]
    [f] = to_findings([rec], "racecheck", race_art, static=static)
    assert f["severity"] == "error" and f["line"] == read and "confirmed by the static check [slot-reuse]" in f["hint"]
    assert {r["line"] for r in f["related"]} == {write}
    # without a static finding at those lines, a race on an mbarrier kernel is only "possibly" one
    [f] = to_findings([rec], "racecheck", race_art, static=[])
    assert f["severity"] == "warning" and "does not model mbarrier" in f["hint"]


def test_race_at_the_def_line_is_a_likely_false_positive(ok_art):
    def_line = kernel_def_line(ok_art)
    src = ok_art.source.text.splitlines()[def_line - 1]
    assert src.lstrip().startswith("def ring_ok(")
    [rec] = parse_sanitizer(S.racecheck_at_def_line(ok_art.source.filename, "ring_ok", def_line), "racecheck")
    [f] = to_findings([rec], "racecheck", ok_art)
    assert f["severity"] == "info" and f["line"] == def_line and "likely a false positive" in f["hint"]
    assert f["source"] == "compute-sanitizer racecheck" and f["rule"] == "racecheck-race"


def test_hazard_mode_and_old_spelling(race_art):
    write, read = race_lines()
    path = race_art.source.filename
    [rec] = parse_sanitizer(S.racecheck_hazard_mode(path, "ring_race", write, read), "racecheck")
    assert rec.kind == "hazard" and rec.severity == "warning" and rec.thread == "64,0,0"
    assert [(a.role, a.line) for a in rec.accesses] == [("Read", read), ("Write", write)]
    [rec] = parse_sanitizer(S.racecheck_old_format(path, "ring_race", write, read), "racecheck")
    assert rec.severity == "error" and [a.line for a in rec.accesses] == [write, read]
    assert rec.accesses[0].offset == 0x278 and rec.accesses[0].function == "ring_race"


def test_offsets_without_line_info_map_through_the_sass(race_art):
    """No file:line in the report: the offset is looked up in the Artifact's SASS and mapped back."""
    write, read = race_lines()
    sass = race_art.stages["sass"].splitlines()
    rev = race_art.reverse_map("sass")

    def offset_of(user_line):
        for i, text in enumerate(sass, start=1):
            m = re.search(r"/\*([0-9a-f]{4,})\*/", text)
            if m and rev.get(i, [None])[0] == user_line:
                return int(m.group(1), 16)
        raise AssertionError(f"no SASS instruction of line {user_line}")

    text = S.racecheck_offsets_only("ring_race", offset_of(write), offset_of(read))
    [rec] = parse_sanitizer(text, "racecheck")
    assert all(a.file is None and a.line is None for a in rec.accesses)
    [f] = to_findings([rec], "racecheck", race_art, static=[])
    assert f["line"] == read and [r["line"] for r in f["related"]] == [write]
    # compiled for another device than the one that ran: offsets mean nothing, no line is claimed
    [f] = to_findings([rec], "racecheck", race_art, same_device=False)
    assert f["line"] is None


def test_memcheck_out_of_bounds_merges_threads_and_notes_the_launch_failure():
    x = torch.empty(2048)
    art = workbench.compile(K.oob_store, x, x.numel(), 1 << 40, BLOCK=1024)
    [line] = K.marked_line(K.oob_store, "OOB")
    recs = parse_sanitizer(S.memcheck_oob(art.source.filename, "oob_store", line, threads=3), "memcheck")
    assert [r.kind for r in recs] == ["invalid-access", "api-error"]
    assert recs[0].count == 3 and recs[0].thread == "0,0,0" and recs[0].block == "0,0,0"
    oob, failed = to_findings(recs, "memcheck", art)
    assert oob["severity"] == "error" and oob["line"] == line and "out of bounds" in oob["message"]
    assert "3 reports" in oob["message"] and "mask" in oob["hint"]
    assert failed["severity"] == "info" and failed["line"] is None and "unspecified launch failure" in failed["message"]


def test_synccheck_and_initcheck(race_art):
    path = race_art.source.filename
    [rec] = parse_sanitizer(S.synccheck_launch_failure_only(), "synccheck")
    [f] = to_findings([rec], "synccheck", race_art)
    assert rec.kind == "api-error" and f["severity"] == "info" and f["line"] is None
    _, read = race_lines()
    [rec] = parse_sanitizer(S.synccheck_divergent(path, "ring_race", read), "synccheck")
    [f] = to_findings([rec], "synccheck", race_art)
    assert rec.kind == "barrier" and f["severity"] == "error" and f["line"] == read
    [rec] = parse_sanitizer(S.initcheck_uninitialized(path, "ring_race", read), "initcheck")
    [f] = to_findings([rec], "initcheck", race_art)
    assert rec.kind == "uninitialized" and f["line"] == read and f["rule"] == "initcheck-uninitialized"


def test_clean_output_has_no_records():
    for tool in ("racecheck", "memcheck"):
        assert parse_sanitizer(S.clean(tool), tool) == []
    assert summary_counts(S.clean("racecheck")) == {"hazards": 0, "errors": 0, "warnings": 0}


def test_consan_asserts(race_art):
    write, read = race_lines()
    text = S.consan_asserts(race_art.source.filename, "ring_race", write, "Buffer being accessed has outstanding reads")
    [rec] = parse_consan(text)
    assert rec.count == 4 and rec.accesses[0].line == write and rec.kind == "assert"
    [f] = to_findings([rec], "consan", race_art)
    assert f["rule"] == "consan-slot-reuse" and f["line"] == write and "empty" in f["hint"]
    text = S.consan_asserts("<tlx-cell-1a2b>", "k", 12, "Deadlock detected: all unfinished threads are waiting on "
                            "mbarriers", threads=1)
    [rec] = parse_consan(text)
    assert rec.accesses[0].file == "<tlx-cell-1a2b>" and rec.accesses[0].line == 12
    assert parse_consan("plain program output\nRuntimeError: CUDA error\n") == []


def test_consan_deadlock_names_the_wait_nothing_completes():
    """ConSan reports the wait of whichever deadlocked thread it meets first (on the H200: the consumer's wait
    on `full` in one run, the producer's wait on `empty` in another); the finding points at the root wait the
    static checks find, whichever thread ConSan reported."""
    x = torch.empty(2 * 8 * 1024)
    art = workbench.compile(K.ring_hang, x, torch.empty_like(x), x.numel(), **K.RING_ARGS)
    static = [f.to_dict() for f in workbench.check(K.ring_hang, x, torch.empty_like(x), x.numel(), **K.RING_ARGS)]
    [hang] = K.marked_line(K.ring_hang, "HANG")
    assert any(f["rule"] == "wait-never-completes" and f["line"] == hang for f in static), static
    src = K.ring_hang.fn.__code__.co_filename
    consumer_wait = next(i + 1 for i, ln in enumerate(open(src).read().splitlines())
                         if i + 1 > hang and "barrier_wait" in ln)
    text = S.consan_asserts(src, "ring_hang", consumer_wait,
                            "Deadlock detected: all unfinished threads are waiting on mbarriers", threads=1)
    [rec] = parse_consan(text)
    [f] = to_findings([rec], "consan", art, static=static)
    assert f["rule"] == "consan-deadlock" and f["line"] == consumer_wait
    assert f"line {hang}" in f["hint"] and hang in [r["line"] for r in f["related"]]
    [g] = to_findings([rec], "consan", art, static=[])  # without the static checks: as ConSan said
    assert g["line"] == consumer_wait and not g["related"]
