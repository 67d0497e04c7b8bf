"""--targets: the file format, the verdicts on crafted rows (every reference: a peer, the best
peer, our best other row; both metrics and directions), the shipped files, the per-size summary,
and the exit status with and without --strict-targets."""

from __future__ import annotations

import json

import pytest
from perf_runs import perf, perf_json

from rcclx_core.perf import targets
from rcclx_core.perf.spec import Config
from rcclx_core.perf.summary import size_summary


def row(size, algo, time, peers=None, selected=None):
    r = {"size": size, "algo": algo, "time": time, "busbw": size / time}
    if selected:
        r["selected"] = selected
    if peers is not None:
        r["peers"] = {
            name: ({"time": t} if t is not None else {"na": "cannot"}) for name, t in peers.items()
        }
    return r


PEERS_1K = {"nccl": 10.0, "symm_one_shot": 6.0, "symm_two_shot": 8.0}
PEERS_64M = {"nccl": 250.0, "symm_one_shot": None, "symm_two_shot": None}
ROWS = [
    row(1024, "dda_flat", 3.0, PEERS_1K),
    row(1024, "dda_tree", 4.5, PEERS_1K),
    row(1024, "auto", 3.3, PEERS_1K, "dda_flat"),
    row(64 << 20, "dda_flat", 900.0, PEERS_64M),
    row(64 << 20, "dda_tree", 200.0, PEERS_64M),
    row(64 << 20, "auto", 201.0, PEERS_64M, "dda_tree"),
]


def write(tmp_path, *lines: str):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_the_file_format_comments_sizes_and_defaults(tmp_path):
    path = write(
        tmp_path,
        "# a comment",
        "",
        '{"collective": "all_reduce", "algo": "dda_flat", "minbytes": "1K", "maxbytes": "64K",'
        ' "bound": 0.7}',
        '{"collective": "all_reduce", "peer": "nccl", "metric": "busbw", "direction": ">=",'
        ' "minbytes": 67108864, "bound": 1, "name": "busbw from 64 MiB"}',
    )
    a, b = targets.parse(path)
    assert (a.algo, a.peer, a.minbytes, a.maxbytes, a.bound, a.direction) == (
        "dda_flat",
        "best",
        1024,
        65536,
        0.7,
        "<=",
    )
    assert (b.algo, b.metric, b.minbytes, b.maxbytes, b.describe()) == (
        "best",
        "busbw",
        64 << 20,
        None,
        "busbw from 64 MiB",
    )


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "line 2: "),
        ('["a list"]', "line 2: a line must hold one JSON object"),
        ('{"collective": "all_reduce"}', "line 2: 'bound' is required"),
        ('{"collective": "all_reduce", "bound": 1, "colour": 1}', "unknown field(s) colour"),
        ('{"collective": "all_reduce", "bound": 1, "peer": "mpi"}', "unknown peer 'mpi'"),
        ('{"collective": "alltoall", "bound": 1}', "unknown collective 'alltoall'"),
        ('{"collective": "all_reduce", "bound": "x"}', "bound 'x' is not a number"),
        ('{"collective": "all_reduce", "bound": 1, "minbytes": "1Q"}', "'1Q' is not a byte size"),
        ('{"collective": "all_reduce", "bound": 1, "direction": "<"}', "unknown direction '<'"),
    ],
)
def test_bad_target_lines_name_the_file_and_line(tmp_path, line, message):
    path = write(tmp_path, "# first line", line)
    with pytest.raises(targets.TargetsError) as e:
        targets.parse(path)
    assert str(e.value).startswith(f"--targets '{path}', line 2: ") and message in str(e.value)


def test_verdicts_against_each_kind_of_reference(tmp_path):
    path = write(
        tmp_path,
        '{"collective": "all_reduce", "algo": "dda_flat", "maxbytes": "64K", "bound": 0.7}',
        '{"collective": "all_reduce", "algo": "dda_flat", "peer": "nccl", "bound": 0.2}',
        '{"collective": "all_reduce", "algo": "auto", "peer": "ours", "bound": 1.05}',
        '{"collective": "all_reduce", "peer": "nccl", "metric": "busbw", "direction": ">=",'
        ' "minbytes": "64M", "bound": 1.0}',
        '{"collective": "all_reduce", "algo": "dda_tree", "peer": "symm_one_shot",'
        ' "minbytes": "64M", "bound": 0.9}',
        '{"collective": "all_reduce", "algo": "lp", "bound": 0.5}',
        '{"collective": "all_gather", "bound": 0.5}',
        '{"collective": "all_reduce", "datatype": "bfloat16", "bound": 0.5}',
    )
    verdicts = targets.evaluate(targets.parse(path), Config(datatype="float32"), ROWS)
    got = [(v["size"], v["verdict"], round(v.get("ratio", -1), 3)) for v in verdicts]
    assert got == [
        (1024, "met", 0.5),  # dda_flat 3.0 / the best peer (symm one-shot) 6.0
        (1024, "NOT MET", 0.3),  # / nccl 10.0
        (64 << 20, "NOT MET", 3.6),  # 900 / 250
        (1024, "NOT MET", 1.1),  # auto 3.3 / our best other row (dda_flat 3.0)
        (64 << 20, "met", 1.005),  # auto 201 / dda_tree 200
        (64 << 20, "met", 1.25),  # busbw: our best (200 us) against nccl's 250 us
        (64 << 20, "no data", -1),  # the peer printed -
        (1024, "no data", -1),  # no lp row in this run
        (64 << 20, "no data", -1),
        (None, "not measured", -1),  # another collective
        (None, "not measured", -1),  # another type
    ]
    assert verdicts[0]["ours"] == "dda_flat" and verdicts[0]["versus"] == "symm_one_shot"
    assert verdicts[3]["ours"] == "auto(dda_flat)" and verdicts[3]["versus"] == "dda_flat"


def test_the_shipped_targets_parse_and_say_what_the_docs_claim():
    files = targets.shipped()
    assert set(files) == {"cpu", "h200x2"}
    gpu = targets.parse(targets.resolve("h200x2"))
    assert [(t.algo, t.peer, t.bound) for t in gpu] == [
        ("dda_flat", "best", 0.7),
        ("dda_tree", "best", 0.9),
        ("auto", "ours", 1.05),
        ("best", "nccl", 1.0),
        ("lp", "nccl", 0.5),
        ("-", "nccl", 1.0),
        ("-", "nccl_sync", 0.2),
        ("-", "symm_a2av", 1.0),
    ]
    assert {t.collective for t in gpu[-3:]} == {"alltoallv_dynamic"}
    (cpu,) = targets.parse(targets.resolve("cpu"))
    assert (cpu.peer, cpu.bound, cpu.minbytes, cpu.maxbytes) == ("gloo", 0.1, 64, 64 << 10)


def test_summary_per_size_best_row_and_best_peer():
    summary = size_summary(ROWS)
    assert [(s["size"], s["best"], s.get("best_peer"), round(s["ratio"], 3)) for s in summary] == [
        (1024, "dda_flat", "symm_one_shot", 0.5),
        (64 << 20, "dda_tree", "nccl", 0.8),
    ]
    alone = size_summary([row(64, "auto", 5.0, selected="ring")])
    assert alone == [{"size": 64, "best": "auto(ring)", "time": 5.0, "rows": 1}]


def test_strict_targets_turn_a_missed_target_into_exit_4(tmp_path):
    never = write(
        tmp_path,
        '{"collective": "all_reduce", "algo": "auto", "peer": "ours", "bound": 100.0}',
        '{"collective": "all_reduce", "algo": "ring", "peer": "ours", "bound": 0.0}',
    )
    args = ["-b", "64", "-e", "256", "-n", "2", "-w", "0", "--algo", "all", "--targets", never]
    _, out, doc = perf_json(tmp_path, *args)  # judged, but the exit status stays 0
    assert "#   2 met, 2 NOT MET" in out
    # One row per missed target (its ratio's width varies with the machine's load).
    rows = [line for line in out.splitlines() if line.lstrip("# ").startswith("NOT MET ")]
    assert len(rows) == 2, out
    assert [v["verdict"] for v in doc["targets"]] == ["met", "met", "NOT MET", "NOT MET"]
    _, out = perf(tmp_path, *args, "--strict-targets", expect=4)
    assert "NOT MET" in out
    json.loads((tmp_path / "out.json").read_text())  # the run before wrote valid JSON
