"""The checks of the built documentation (tools/docs_browser_check.py): its link check on pages
made up here, each broken link reported; the same check on docs/_build/html when the docs were
built (`nox -s docs`); its layout check on a made-up page where Chromium is installed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILT = ROOT / "docs" / "_build" / "html"


def _load_checker():
    path = ROOT / "tools" / "docs_browser_check.py"
    spec = importlib.util.spec_from_file_location("rcclx_docs_browser_check", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


check = _load_checker()


def _site(tmp_path: Path, pages: dict[str, str]) -> Path:
    for name, body in pages.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<html><body>{body}</body></html>")
    return tmp_path


def test_links_that_resolve_pass(tmp_path):
    site = _site(
        tmp_path,
        {
            "index.html": '<a href="a/b.html#part">b</a> <a href="#top">top</a> <p id="top"></p>'
            ' <a href="https://example.org/x#y">out</a> <img src="_static/logo.png">',
            "a/b.html": '<h2 id="part">Part</h2> <a href="../index.html">up</a>'
            ' <a href="../a/">dir</a> <a name="old"></a> <a href="#old">old</a>',
            "a/index.html": "",
            "_static/logo.png": "",
        },
    )
    assert check.check_links(site) == []


@pytest.mark.parametrize(
    ("link", "reported"),
    [
        ("missing.html", "no such file"),
        ("other.html#nowhere", "no id 'nowhere' in other.html"),
        ("#nowhere", "no id 'nowhere' in this page"),
        ("../../outside.html", "leaves the build"),
        ("_static/gone.css", "no such file"),
    ],
)
def test_each_broken_link_is_reported(tmp_path, link, reported):
    site = _site(tmp_path, {"index.html": f'<a href="{link}">x</a>', "other.html": '<p id="a">'})
    problems = check.check_links(site)
    assert [p.page for p in problems] == ["index.html"]
    assert reported in problems[0].what


@pytest.mark.skipif(
    not (BUILT / "index.html").is_file(), reason="docs not built (nox -s docs builds them)"
)
def test_built_docs_have_no_broken_links():
    problems = check.check_links(BUILT)
    assert not problems, "\n".join(map(str, problems))


# A page laid out as furo lays out its column, 800 px wide: one code block scrolls, one table
# cell's text spills out, one line fits.
_WIDE = "x" * 300
_LAYOUT_PAGE = f"""<html><body style="margin:0">
<article role="main" style="width:800px">
  <pre id="scrolls" style="overflow-x:auto">{_WIDE}</pre>
  <table><tr><td><div id="spills" style="width:100px;white-space:nowrap">{"y" * 50}</div></td></tr>
  </table>
  <p id="fits">short</p>
</article></body></html>"""


@pytest.mark.skipif(check.browser_missing() is not None, reason=str(check.browser_missing()))
def test_layout_check_reports_what_overflows_the_column(tmp_path):
    (tmp_path / "index.html").write_text(_LAYOUT_PAGE)
    problems = check.check_layout(tmp_path, ["index.html"])
    found = sorted(p.what.split(" (")[0] for p in problems)
    assert found == ["div#spills", "pre#scrolls"], problems
    assert (tmp_path / check.SCREENSHOT_DIR / "index.png").stat().st_size > 0


def test_breakpoints_are_where_each_layout_begins():
    css = (
        "@media(max-width:63em){.a{}}"  # holds up to 1008 px: the next layout from 1009
        "@media (min-width: 67em) and (max-width: 97em) {.b{}}"
        "@media (width > 82em) {.c{}} @media (width >= 1100px) {.d{}} @media (width < 50rem) {}"
        "@media print {.e{}} @media (prefers-color-scheme: dark) {.f{}}"
    )
    assert check.breakpoints(css) == {1009, 1072, 1553, 1313, 1100, 800}


def test_layout_widths_are_each_layout_of_the_pages_style_sheets_from_1000_px(tmp_path):
    site = _site(
        tmp_path,
        {
            "index.html": '<link rel="stylesheet" href="_static/a.css?v=1">'
            '<link rel="stylesheet" href="https://example.org/b.css">',
            "_static/a.css": "@media (max-width: 48em) {} @media (max-width: 74em) {}"
            " @media (width > 97em) {} @media (max-width: 1400px) {}",
            "_static/unused.css": "@media (min-width: 1100px) {}",
        },
    )
    assert check.layout_widths(site, ["index.html"]) == [1000, 1185, 1280, 1401, 1553]


# A column of 900 px from 1100 px up and of 700 px below: its line of about 780 px (130
# characters of 6 px) fits only there.
_NARROW_PAGE = f"""<html><head><style>
  article {{ width: 700px }} @media (min-width: 1100px) {{ article {{ width: 900px }} }}
  pre {{ overflow-x: auto; margin: 0; font: 10px/1 monospace }}
</style></head><body style="margin:0">
<article role="main"><pre id="code">{"x" * 130}</pre></article></body></html>"""


@pytest.mark.skipif(check.browser_missing() is not None, reason=str(check.browser_missing()))
def test_layout_check_reports_the_width_at_which_a_page_overflows(tmp_path):
    (tmp_path / "index.html").write_text(_NARROW_PAGE)
    widths = check.layout_widths(tmp_path, ["index.html"])
    assert widths == [1000, 1100, 1280]
    problems = check.check_layout(tmp_path, ["index.html"], tuple(widths))
    assert [(p.width, p.what.split(" (")[0]) for p in problems] == [(1000, "pre#code")], problems
    assert str(problems[0]).startswith("index.html at 1000 px: pre#code")
    shots = sorted(p.name for p in (tmp_path / check.SCREENSHOT_DIR).iterdir())
    assert shots == ["index.png", "index@1000.png"]
