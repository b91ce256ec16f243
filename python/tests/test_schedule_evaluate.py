"""Schedule I/O, evaluate (rows, total, peak working set, violations), lower_bound and report."""
import json

import pytest

import annealer

# mlsys-2026-1 with one subgraph per op: the contest's starting point, valid everywhere.
def one_op_per_subgraph(problem, granularity=(128, 128, 1)):
    return annealer.Schedule.from_dict({
        "subgraphs": [[i] for i in range(problem.ops)],
        "granularities": [list(granularity)] * problem.ops,
        "tensors_to_retain": [[] for _ in range(problem.ops)],
    })


@pytest.fixture
def p1(problem_path):
    return annealer.Problem.load(problem_path("mlsys-2026-1"))


def test_schedule_properties_and_json(p1, tmp_path):
    s = one_op_per_subgraph(p1)
    assert len(s) == p1.ops and repr(s) == f"<annealer.Schedule: {p1.ops} subgraphs>"
    assert s.subgraphs[0] == {"ops": [0], "granularity": (128, 128, 1), "traversal": None, "retain": []}
    assert s.latencies is None
    with pytest.raises(ValueError, match="no subgraph latencies"):
        s.to_json()
    text = s.to_json(p1)  # priced by the oracle
    again = annealer.Schedule.from_json(text)
    assert again == s and len(again.latencies) == p1.ops
    assert again.to_json() == text
    assert again.to_dict()["subgraphs"] == [[i] for i in range(p1.ops)]
    s.save(str(tmp_path / "s.json"), p1)
    assert annealer.Schedule.load(str(tmp_path / "s.json")).to_json() == text


def test_schedule_errors(p1, tmp_path):
    with pytest.raises(annealer.InputError) as error:
        annealer.Schedule.from_json('{"subgraphs": [[0]], "granularities": [[1, 2]], "tensors_to_retain": [[]]}')
    assert error.value.field == "granularities[0]" and error.value.index == 0
    with pytest.raises(annealer.InputError, match="cannot open file"):
        annealer.Schedule.load(str(tmp_path / "missing.json"))
    with pytest.raises(TypeError):
        annealer.Schedule.from_dict([1, 2])
    bad = annealer.Schedule.from_dict({"subgraphs": [[0]], "granularities": [[128, 128, 1]],
                                       "tensors_to_retain": [[]]})
    with pytest.raises(ValueError, match="invalid schedule"):
        bad.to_json(p1)


def test_evaluate_valid_rows(p1):
    e = annealer.evaluate(p1, one_op_per_subgraph(p1))
    assert e.valid and bool(e) and e.verdict == "VALID" and e.violation is None
    assert len(e.rows) == p1.ops
    assert e.total == pytest.approx(sum(row["latency"] for row in e.rows))
    assert e.peak_working_set == max(row["peak_working_set"] for row in e.rows) > 0
    assert e.lower_bound == annealer.lower_bound(p1)
    assert e.gap == pytest.approx((e.total / e.lower_bound - 1) * 100)
    row = e.rows[1]
    assert {"ops", "granularity", "latency", "compute_time", "memory_time", "tiles", "k_steps",
            "start", "retained_in", "memory_bound", "violation"} <= set(row)
    assert row["start"] == pytest.approx(e.rows[0]["latency"])
    assert repr(e).startswith("<annealer.Evaluation: valid, total ")


def test_evaluate_invalid_gives_the_violation(p1, cli, problem_path, tmp_path):
    s = annealer.Schedule.from_dict({"subgraphs": [[0]], "granularities": [[128, 128, 1]],
                                     "tensors_to_retain": [[]]})
    e = annealer.evaluate(p1, s)
    assert not e.valid and not bool(e) and e.gap is None
    v = e.violation
    assert v.rule == "V1" and v.subgraph is None and v.message == str(v)
    # The CLI prints the same line.
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"subgraphs": [[0]], "granularities": [[128, 128, 1]], "tensors_to_retain": [[]]}))
    import subprocess
    run = subprocess.run([cli, "evaluate", problem_path("mlsys-2026-1"), str(path)], capture_output=True, text=True)
    assert run.returncode == 1 and run.stdout == v.message + "\n"


def test_evaluate_out_of_memory_names_the_subgraph(p1):
    tiny = p1.with_hardware(capacity=1000)
    e = annealer.evaluate(tiny, one_op_per_subgraph(tiny))
    assert e.verdict == "OOM" and e.violation.rule == "W" and e.violation.subgraph == 0
    assert e.rows[0]["violation"].rule == "W" and e.rows[0]["latency"] is None


def test_lower_bound_parts(p1):
    parts = annealer.lower_bound(p1, parts=True)
    assert parts["total"] == annealer.lower_bound(p1)
    assert set(parts) == {"total", "compute", "graph_io", "traffic", "combined", "weight", "islands", "streaming", "crossing", "recompute", "internal_heads", "memory_floor", "tiles", "sums", "taps", "sole_sums", "shared_sums", "lone_taps", "upstream_sums", "lhs_strip_sums", "target_sums", "island_activations", "squeeze", "tap_weights", "written_sums",
                          "island_count", "streaming_ops", "recompute_count", "internal_head_count", "sum_count", "tap_count", "sole_sum_count", "shared_sum_count", "lone_tap_sums", "upstream_sum_count", "lhs_strip_sum_count", "target_sum_count", "squeeze_count", "tap_weight_members"}
    # The parts' counts are those of `annealer bound --json`, as integers.
    assert isinstance(parts["island_count"], int) and parts["island_count"] >= 1
    # P23 claims no excess on -1: its part is the compute, and so are P25's and P28's.
    assert parts["sums"] == parts["compute"] == 112000
    assert parts["taps"] == parts["sole_sums"] == parts["shared_sums"] == 112000
    # -1 sums no MatMul with K > n: P33's part is its lines' best weight, the compute.
    assert parts["lone_taps"] == 112000
    # P34: -1 holds no sum that may run upstream of a k-loop, so its part is the compute too.
    assert parts["upstream_sums"] == 112000
    # P40: nor one whose output fans out to several MatMuls' LHS.
    assert parts["lhs_strip_sums"] == 112000
    # P36 and P38: -1 has no Layout op (no squeeze-excite multiply) and no sum that raises its island.
    assert parts["squeeze"] == 112000 and parts["written_sums"] == 0
    # P42: no weight path, nothing priced: the compute part.
    assert parts["tap_weights"] == 112000
    with pytest.raises(TypeError):
        annealer.lower_bound("p.json")


def test_report_writes_html_with_and_without_log(p1, tmp_path):
    s = one_op_per_subgraph(p1)
    annealer.report(p1, s, tmp_path / "plain.html")
    html = (tmp_path / "plain.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "</html>" in html
    log = [annealer.LogEntry(0.01, 500000.0, "baseline", 367001.6), annealer.LogEntry(0.2, 400000.0, "sa", 367001.6)]
    annealer.report(p1, s, str(tmp_path / "log.html"), log=log, problem_name="p1", schedule_name="s")
    assert len((tmp_path / "log.html").read_text()) > len(html)
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text("".join(entry.to_json() + "\n" for entry in log))
    annealer.report(p1, s, str(tmp_path / "file.html"), log=str(jsonl))
    assert (tmp_path / "file.html").exists()


def test_report_errors(p1, tmp_path):
    s = one_op_per_subgraph(p1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"seconds": "x"}\n')
    with pytest.raises(annealer.InputError) as error:
        annealer.report(p1, s, str(tmp_path / "r.html"), log=str(bad))
    assert error.value.file.startswith(str(bad))
    with pytest.raises(OSError):
        annealer.report(p1, s, str(tmp_path / "missing" / "r.html"))
    with pytest.raises(TypeError):
        annealer.report(p1, s, str(tmp_path / "r.html"), log=[1, 2])
    assert not (tmp_path / "r.html").exists()


def test_an_invalid_schedule_still_gets_a_report(p1, tmp_path):
    s = annealer.Schedule.from_dict({"subgraphs": [[0]], "granularities": [[128, 128, 1]],
                                     "tensors_to_retain": [[]]})
    annealer.report(p1, s, str(tmp_path / "r.html"))
    assert "V1" in (tmp_path / "r.html").read_text()
