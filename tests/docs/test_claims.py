"""The headline figures of README.md and the documentation against docs/claims.toml (the checker
is docs/_ext/claims.py; what it checks is in its docstring)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_checker():
    spec = importlib.util.spec_from_file_location("rcclx_docs_claims", ROOT / "docs/_ext/claims.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


claims = _load_checker()


def test_readme_and_docs_agree_with_the_claims_file():
    problems = claims.check()
    assert not problems, "\n".join(map(str, problems))


def test_every_headline_figure_of_the_readme_is_a_claim():
    text = (ROOT / "README.md").read_text()
    assert claims.MD_REF.search(text), "README.md refers to no claim"
    assert "<!-- claim:gpu-allreduce-small.ratio -->" in text


# The checker itself, on text made up here: each of these must be reported.

CLAIMS = {
    "cpu-4k": {
        "what": "all_reduce 4 KiB",
        "value": 3.15,
        "unit": "us",
        "peer": "Gloo",
        "peer_value": 294,
        "ratio": 0.011,
        "speedup": 93,
        "machine": "2-core VM",
        "date": "2026-12-05",
        "command": "rcclx-perf --repeat 10 -b 4K -e 64M -f 4 --median --compare gloo",
        "raw": "docs/measurements/results/cpu_repeat10_final_2026-12-05.json",
    }
}


def test_rendering():
    assert claims.render(CLAIMS, "cpu-4k") == "3.15 us"
    assert claims.render(CLAIMS, "cpu-4k.peer") == "294 us"
    assert claims.render(CLAIMS, "cpu-4k.speedup") == "93x"
    assert claims.render({"r": {**CLAIMS["cpu-4k"], "ratio": [0.38, 0.47]}}, "r.ratio") == (
        "0.38-0.47x"
    )
    with pytest.raises(KeyError):
        claims.render(CLAIMS, "cpu-4k.nothing")


def test_a_consistent_claim_passes():
    assert claims.check_claims(CLAIMS, ROOT) == []


@pytest.mark.parametrize(
    ("change", "reported"),
    [
        ({"ratio": 0.1}, "ratio 0.1 is not value / peer_value"),
        ({"speedup": 30}, "speedup 30 is not peer_value / value"),
        ({"unit": "us/call"}, "unit 'us/call'"),
        ({"date": "today"}, "date 'today'"),
        ({"raw": "docs/measurements/results/missing.json"}, "is not a file in"),
        ({"raw": "README.md"}, "is not a file in"),
        ({"raw_excerpt": "no such line"}, "does not contain"),
        ({"command": None}, "missing fields ['command']"),
        ({"colour": "blue"}, "unknown fields ['colour']"),
        ({"value": [3, 2]}, "is not a number or a [low, high] range"),
    ],
)
def test_a_malformed_claim_is_reported(change, reported):
    claim = {k: v for k, v in {**CLAIMS["cpu-4k"], **change}.items() if v is not None}
    problems = claims.check_claims({"cpu-4k": claim}, ROOT)
    assert any(reported in p.message for p in problems), problems


def _problems(path: str, text: str) -> list[str]:
    return [p.message for p in claims.check_text(CLAIMS, Path(path), text)]


def test_a_readme_figure_outside_a_claim_is_reported():
    text = "All_reduce is 30x faster than Gloo at 4 KiB, 2.5 us a call.\n"
    found = _problems("README.md", text)
    assert len(found) == 2 and "'30x'" in found[0] and "'2.5 us'" in found[1]
    # Times to install or build are figures too.
    found = _problems("docs/index.rst", "It installs in 4 minutes (2.5 min on 4 cores).\n")
    assert len(found) == 2 and "'4 minutes'" in found[0] and "'2.5 min'" in found[1]
    assert _problems("docs/index.rst", "A minute or two; 4 ranks, minimal.\n") == []


def test_a_readme_figure_that_contradicts_the_claims_file_is_reported():
    text = "4 KiB takes <!-- claim:cpu-4k -->16.2 us<!-- /claim -->.\n"
    assert any(
        "reads '16.2 us', the claims file says '3.15 us'" in m for m in _problems("README.md", text)
    )
    assert _problems("README.md", text.replace("16.2 us", "3.15 us")) == []


def test_a_reference_to_a_missing_claim_is_reported():
    assert _problems("README.md", "<!-- claim:gone -->1 us<!-- /claim -->") == ["no claim 'gone'"]
    assert "no claim 'gone.peer' in claims.toml" in _problems("docs/x.rst", ":claim:`gone.peer`")


def test_headline_text_is_the_index_and_the_marked_regions_of_other_pages():
    figure = "All_reduce takes 2.4 us here, 0.38-0.47x of NCCL.\n"
    assert len(_problems("docs/index.rst", figure)) == 2
    assert _problems("docs/gpu.rst", figure) == []  # a page: only its marked regions
    marked = f"Before.\n\n.. headline-begin\n\n{figure}\n.. headline-end\n\n{figure}"
    assert len(_problems("docs/gpu.rst", marked)) == 2
    assert _problems("docs/index.rst", "It takes :claim:`cpu-4k` (:claim:`cpu-4k.ratio`).") == []
    # Code in README.md is not headline text; sizes and counts are not figures.
    code = "```\nrcclx-perf  # 3.3 us\n```\n2 x H200, 64 MiB, 4 ranks\n"
    assert _problems("README.md", code) == []
    # A table cell that is a bare number is reported (tables of figures use claims).
    assert _problems("docs/index.rst", "   * - 4 KiB\n     - 3.15\n") == [
        "headline table cell '- 3.15' is not a claim"
    ]


def test_fix_rewrites_the_readme_from_the_claims_file(tmp_path):
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "claims.toml", tmp_path / "docs" / "claims.toml")
    (tmp_path / "README.md").write_text("<!-- claim:gpu-allreduce-1k -->18 us<!-- /claim -->\n")
    assert claims.fix_readme(tmp_path)
    assert (tmp_path / "README.md").read_text() == (
        "<!-- claim:gpu-allreduce-1k -->2.4 us<!-- /claim -->\n"
    )
