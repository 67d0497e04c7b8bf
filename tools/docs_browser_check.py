"""Checks of the built HTML documentation (`nox -s docs` runs them after building):

1. Links: every internal link of every page (``href`` and ``src``, relative or ``#fragment``)
   names a file of the build, and its fragment an ``id`` (or ``<a name>``) of the target page.
   Plain Python, no browser.
2. Layout: the pages open in headless Chromium, 800 px high, at 1280 px wide and at the
   narrowest width of each layout their style sheets give from 1000 px up (`layout_widths`:
   the pages then fit every window from 1000 px up), and fail when
   - the page is wider than the window (furo hides the page's sideways scroll, so the right of
     the page would be cut off), or
   - inside the main column (furo's ``article[role=main]``), an element's text or images reach
     outside its own box, whether they spill out, are clipped, or sit behind a sideways scroll:
     code blocks and tables that scroll count, since a code comment or a table column hidden
     behind a sideways scroll is what such a window must not show. Where the text lies
     decides, not the boxes: furo's headings reach 0.5rem into the margins by design, and the
     column's padding is not text. Each failure names the innermost element, its page, the
     window's width and the element's widths.
   Each page's screenshot at 1280 px, the failing elements outlined in red, goes to
   ``<html>/_browser_check/<page>.png``; at another width, where something failed, to
   ``<page>@<width>.png``.

    python tools/docs_browser_check.py docs/_build/html [--pages index.html ...] [--widths 1024 ...]

The layout check drives Debian's ``chromium`` through ``chromium-driver`` with selenium
(pinned in constraints.txt): one browser for every page, each page loaded once and laid out
anew at each width, the script run at each, its findings returned as data, and the screenshots
taken at the window's width.
Without them it is skipped with a message, unless RCCLX_DOCS_BROWSER=required (then it fails);
RCCLX_DOCS_BROWSER=off skips it.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# The pages the layout check opens by default: the start-here index (with the three quick
# starts) and the installation page the quick starts send readers to. --all opens every page.
QUICK_START_PAGES = ("index.html", "install.html")
# The window: every page is opened WIDTH px wide, and at the narrowest width of each layout from
# MIN_WIDTH up; HEIGHT px high (screenshots take the page's whole height).
WIDTH = 1280
MIN_WIDTH = 1000
HEIGHT = 800
SCREENSHOT_DIR = "_browser_check"
# Tallest screenshot taken (px); longer pages are cut there.
SCREENSHOT_MAX_HEIGHT = 12000


@dataclass(frozen=True)
class Problem:
    page: str
    what: str
    width: int | None = None  # the window's, for a layout problem

    def __str__(self) -> str:
        where = f"{self.page} at {self.width} px" if self.width else self.page
        return f"{where}: {self.what}"


# ---------------------------------------------------------------------------------------------
# Links


class _PageParser(HTMLParser):
    """The ids a page defines, the link targets it names, the style sheets it links and the
    text of its own ``<style>`` elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.stylesheets: list[str] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"])
        if tag == "a" and values.get("name"):
            self.ids.add(values["name"])
        for name in ("href", "src"):
            if values.get(name) is not None and tag in ("a", "link", "img", "script", "source"):
                self.links.append(values[name])
        if tag == "link" and values.get("rel") == "stylesheet" and values.get("href"):
            self.stylesheets.append(values["href"])
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


def _parse(path: Path) -> _PageParser:
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser


def html_pages(root: Path) -> list[Path]:
    """The pages of the build: every .html file outside Sphinx's own folders (_static ...)."""
    return sorted(
        p
        for p in root.rglob("*.html")
        if not any(part.startswith("_") for part in p.relative_to(root).parts[:-1])
    )


def check_links(root: Path) -> list[Problem]:
    """Every internal link and fragment of every page of the build at `root` resolves."""
    root = root.resolve()
    parsed: dict[Path, _PageParser] = {}

    def page(path: Path) -> _PageParser:
        if path not in parsed:
            parsed[path] = _parse(path)
        return parsed[path]

    problems = []
    for source in html_pages(root):
        name = source.relative_to(root).as_posix()
        for link in page(source).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("//"):
                continue  # http(s), mailto, data: ... are not ours to check
            target = source
            if parts.path:
                target = (source.parent / unquote(parts.path)).resolve()
                if target.is_dir():
                    target = target / "index.html"
                if root != target and root not in target.parents:
                    problems.append(Problem(name, f"link {link!r} leaves the build"))
                    continue
                if not target.is_file():
                    problems.append(Problem(name, f"link {link!r}: no such file"))
                    continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html" and fragment not in page(target).ids:
                where = "this page" if target == source else target.relative_to(root).as_posix()
                problems.append(Problem(name, f"link {link!r}: no id {fragment!r} in {where}"))
    return problems


# ---------------------------------------------------------------------------------------------
# Layout in Chromium

# A width condition of a media query: (min-width: 67em), (max-width: 82em), (width > 97em) ...
_MEDIA = re.compile(r"@media([^{]*)\{")
_WIDTH_FEATURE = re.compile(
    r"\(\s*(min-width|max-width|width\s*(?:>=|<=|>|<))\s*:?\s*([\d.]+)(px|r?em)\s*\)"
)
# The conditions that hold up to and including their width (max-width: 63em holds at 1008 px,
# and another layout begins at 1009); the others begin (min-width: 67em) or end at their width.
_UP_TO = ("max-width", ">", "<=")


def breakpoints(css: str) -> set[int]:
    """The window widths (px) at which a layout of the style sheet `css` begins: one each
    width condition of its media queries (em and rem are 16 px there, whatever the page's font
    size)."""
    found = set()
    for condition in _MEDIA.findall(css):
        for feature, number, unit in _WIDTH_FEATURE.findall(condition):
            px = float(number) * (16 if unit.endswith("em") else 1)
            operator = feature if feature.endswith("-width") else feature[5:].strip()
            found.add(math.floor(px) + 1 if operator in _UP_TO else math.ceil(px))
    return found


def layout_widths(root: Path, pages: list[str], min_width: int = MIN_WIDTH) -> list[int]:
    """The widths the layout check opens `pages` at: WIDTH, and the narrowest width of each
    layout the pages' style sheets give from `min_width` up (`min_width` itself, and each
    breakpoint above it). Within one layout the page's column only widens with the window, so
    a page that fits at these widths fits at every width from `min_width` up."""
    sheets: set[Path] = set()
    styles: list[str] = []
    for name in pages:
        page = root / name
        parsed = _parse(page)
        styles += parsed.styles
        for href in parsed.stylesheets:
            parts = urlsplit(href)
            if not (parts.scheme or parts.netloc):
                sheets.add((page.parent / unquote(parts.path)).resolve())
    styles += [s.read_text(encoding="utf-8", errors="replace") for s in sheets if s.is_file()]
    found = {WIDTH, min_width}
    for css in styles:
        found |= {w for w in breakpoints(css) if w > min_width}
    return sorted(found)


# Returns [{element, text, kind, box, content}]: the page when it is wider than the window, and
# the elements of the main column whose text or images reach outside their own box, innermost
# first (an element is left out when it holds one reported), each outlined in red (the outlines
# of an earlier run on the page, at another width, removed). Only elements wider inside than
# outside (scrollWidth > clientWidth) are looked at; what decides is where their text and images
# lie, so a box that sticks out by design (furo's headings reach 0.5rem into the margins) is not
# counted, while text that spills, is clipped or sits behind a sideways scroll is.
_OVERFLOW_SCRIPT = r"""
const column = document.querySelector('article[role=main]')
  || document.querySelector('[role=main]') || document.querySelector('main');
const found = [];
const doc = document.documentElement;
if (doc.scrollWidth > doc.clientWidth + 1) {
  found.push({element: 'html', text: '', kind: 'page wider than the window',
              box: doc.clientWidth, content: doc.scrollWidth, node: null});
}
if (!column) {
  return [{element: 'body', text: '', kind: 'has no main column ([role=main])', box: 0,
           content: 0}];
}
// The ink of the column: each text node's and image's box.
const ink = [];
const walker = document.createTreeWalker(column, NodeFilter.SHOW_TEXT);
const range = document.createRange();
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  if (!n.data.trim()) continue;
  range.selectNodeContents(n);
  for (const r of range.getClientRects()) {
    if (r.width > 0) ink.push({node: n, left: r.left, right: r.right});
  }
}
for (const el of column.querySelectorAll('img, svg, video, canvas, iframe, object')) {
  const r = el.getBoundingClientRect();
  if (r.width > 0) ink.push({node: el, left: r.left, right: r.right});
}
for (const el of [column, ...column.querySelectorAll('*')]) {
  if (el.clientWidth === 0 || el.scrollWidth <= el.clientWidth + 1) continue;
  const style = getComputedStyle(el);
  if (style.display === 'none' || style.visibility === 'hidden') continue;
  const box = el.getBoundingClientRect();
  const left = box.left + el.clientLeft, right = left + el.clientWidth;
  let outside = 0;
  for (const i of ink) {
    if (el.contains(i.node)) outside = Math.max(outside, i.right - right, left - i.left);
  }
  if (outside <= 1) continue;
  const ox = style.overflowX;
  const kind = (ox === 'auto' || ox === 'scroll') ? 'scrolls sideways'
             : (ox === 'hidden' || ox === 'clip') ? 'clipped' : 'spills out';
  let name = el.tagName.toLowerCase();
  if (el.id) name += '#' + el.id;
  if (el.classList.length) name += '.' + [...el.classList].join('.');
  found.push({element: name, text: (el.innerText || '').trim().split('\n')[0].slice(0, 80),
              kind: kind, box: el.clientWidth, content: el.scrollWidth, node: el});
}
const nodes = found.map(f => f.node).filter(n => n);
const inner = found.filter(f => !f.node || !nodes.some(n => n !== f.node && f.node.contains(n)));
for (const el of document.querySelectorAll('[data-overflow]')) {  // an earlier width's
  el.style.outline = '';
  delete el.dataset.overflow;
}
for (const f of inner) {
  if (f.node) { f.node.style.outline = '3px solid red'; f.node.dataset.overflow = ''; }
}
return inner.map(({node, ...rest}) => rest);
"""


def browser_missing() -> str | None:
    """Why the layout check cannot run here, or None when it can."""
    missing = [name for name in ("chromium", "chromedriver") if shutil.which(name) is None]
    if missing:
        names = " and ".join(missing)
        return f"{names} not found (Debian: apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -c constraints.txt selenium)"
    return None


def _driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in (
        "--headless=new",
        f"--window-size={WIDTH},{HEIGHT}",
        "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))


def check_layout(root: Path, pages: list[str], widths: tuple[int, ...] = (WIDTH,)) -> list[Problem]:
    """Opens `pages` (relative to `root`) in headless Chromium at each of `widths`; the
    overflows found. Each page's screenshot at WIDTH, and at another width where something
    failed, is written under root/_browser_check/."""
    root = root.resolve()
    shots = root / SCREENSHOT_DIR
    shots.mkdir(exist_ok=True)
    problems = []
    driver = _driver()
    try:
        for name in pages:
            driver.set_window_size(widths[0], HEIGHT)
            driver.get((root / name).as_uri())
            for width in widths:  # the page laid out anew at each width, loaded once
                driver.set_window_size(width, HEIGHT)
                found = driver.execute_script(_OVERFLOW_SCRIPT)
                for f in found:
                    text = f" ({f['text']!r})" if f["text"] else ""
                    what = (
                        f"{f['element']}{text} {f['kind']}: {f['content']} px of content "
                        f"in {f['box']} px"
                    )
                    problems.append(Problem(name, what, width))
                if width != WIDTH and not found:
                    continue
                height = driver.execute_script("return document.documentElement.scrollHeight")
                driver.set_window_size(width, min(max(height, HEIGHT), SCREENSHOT_MAX_HEIGHT))
                stem = name.replace("/", "__").removesuffix(".html")
                shot = shots / (f"{stem}.png" if width == WIDTH else f"{stem}@{width}.png")
                driver.save_screenshot(str(shot))
    finally:
        driver.quit()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", type=Path, help="the built HTML (docs/_build/html)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--pages", nargs="+", help="pages the layout check opens")
    which.add_argument("--all", action="store_true", help="the layout check opens every page")
    parser.add_argument(
        "--widths",
        nargs="+",
        type=int,
        help=f"window widths (px) instead of {WIDTH} and each layout's narrowest from {MIN_WIDTH}",
    )
    args = parser.parse_args(argv)
    if not (args.html / "index.html").is_file():
        parser.error(f"{args.html} holds no index.html: build the docs first (nox -s docs)")

    problems = check_links(args.html)
    print(f"links: {len(html_pages(args.html))} pages, {len(problems)} broken")

    mode = os.environ.get("RCCLX_DOCS_BROWSER", "auto").lower()
    missing = browser_missing()
    if mode == "off":
        print("layout: skipped (RCCLX_DOCS_BROWSER=off)")
    elif missing and mode != "required":
        print(f"layout: skipped, {missing} (RCCLX_DOCS_BROWSER=required makes this an error)")
    elif missing:
        problems.append(Problem("layout", f"cannot run: {missing} (RCCLX_DOCS_BROWSER=required)"))
    else:
        root = args.html.resolve()
        if args.all:
            pages = [p.relative_to(root).as_posix() for p in html_pages(root)]
        else:
            pages = args.pages or list(QUICK_START_PAGES)
        widths = tuple(args.widths or layout_widths(root, pages))
        found = check_layout(root, pages, widths)
        problems += found
        print(
            f"layout: {len(pages)} pages at {', '.join(map(str, widths))} px wide, "
            f"{len(found)} overflows; screenshots in {root / SCREENSHOT_DIR}"
        )
    for problem in problems:
        print(f"  {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
