"""Headline figures from one source: docs/claims.toml, checked in README.md and the documentation.

Every headline figure (a time, a bandwidth, a ratio) is a claim in docs/claims.toml, with its
value, unit, peer and ratio, machine, date, exact command and raw result file. Text refers to a
claim instead of restating it:

- reStructuredText: ``:claim:`id``` (the value), ``:claim:`id.peer```, ``:claim:`id.ratio```
  or ``:claim:`id.speedup```, rendered from the file when the documentation is built (the
  tooltip names the machine, the date and the command); ``.. claims-table::`` renders a table
  of claims.
- README.md: ``<!-- claim:id -->3.15 us<!-- /claim -->`` (or ``claim:id.field``), whose text
  must be what the file renders; ``python docs/_ext/claims.py --fix`` rewrites it.

``check()`` (run by ``python docs/_ext/claims.py``, by tests/docs/test_claims.py and by every
Sphinx build, where a problem is a warning and so an error under ``-W``) reports:

- a claim that is malformed: a missing or unknown field, a unit not in UNITS, a date not
  YYYY-MM-DD, a raw file that is not under docs/measurements/results/ or does not exist (or
  lacks its ``raw_excerpt``), a ``ratio`` that is not ``value / peer_value`` or a ``speedup``
  that is not ``peer_value / value`` (within ROUNDING);
- a reference to a claim or a field that does not exist;
- a README.md figure whose text differs from the claim's rendering;
- a figure stated outside a claim in headline text: a number with a unit of FIGURE (us, ms,
  GB/s, minutes, or a ratio such as ``0.38x``), or a table cell holding a bare number. Headline
  text is README.md and docs/index.rst, whole (fenced code blocks of README.md excepted), and
  the lines of any other page between the comments ``.. headline-begin`` and
  ``.. headline-end``.

Only that text is checked: the dated tables of the user guides name their own command and raw
file, and docs/measurements/ is the notebook they come from.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
CLAIMS_FILE = ROOT / "docs" / "claims.toml"
RESULTS = Path("docs") / "measurements" / "results"
README = Path("README.md")
WHOLE_PAGES = (README, Path("docs") / "index.rst")
DOCS = Path("docs")

UNITS = ("us", "ms", "GB/s", "x", "min")
REQUIRED = ("what", "value", "unit", "machine", "date", "command", "raw")
OPTIONAL = ("peer", "peer_value", "ratio", "speedup", "notebook", "raw_excerpt")
FIELDS = ("value", "peer", "ratio", "speedup")  # what a reference may render
# A ratio or speedup may differ from the one computed from the rounded values by this much.
ROUNDING = 0.03

_NUMBER = r"\d+(?:\.\d+)?"
# A figure: a number (or a range) with a unit of time or bandwidth, or a ratio written "0.38x".
FIGURE = re.compile(
    rf"(?<![\w.]){_NUMBER}(?:\s*-\s*{_NUMBER})?"
    r"(?:\s*(?:us|µs|ms|GB/s|min(?:utes?)?)(?![\w/])|x(?!\w))"
)
# A table cell that is a bare number (list-table rows "* - 3.15" / "  - 3.15", grid tables).
BARE_CELL = re.compile(rf"^\s*(?:\*\s+)?-\s+{_NUMBER}\s*$")
RST_REF = re.compile(r":claim:`([^`]+)`")
MD_REF = re.compile(r"<!-- claim:([\w.-]+) -->(.*?)<!-- /claim -->", re.S)
HEADLINE_BEGIN = ".. headline-begin"
HEADLINE_END = ".. headline-end"


@dataclass(frozen=True)
class Problem:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def load(path: Path = CLAIMS_FILE) -> dict[str, dict]:
    """The claims, by id (the file's table names)."""
    with open(path, "rb") as f:
        return tomllib.load(f)


def _number(v) -> str:
    return str(v) if isinstance(v, int) else repr(float(v))


def _quantity(v, unit: str) -> str:
    text = f"{_number(v[0])}-{_number(v[1])}" if isinstance(v, list) else _number(v)
    return f"{text}x" if unit == "x" else f"{text} {unit}"


def render(claims: dict[str, dict], ref: str) -> str:
    """The text of a reference ``id`` or ``id.field``; KeyError when it names nothing."""
    cid, _, field = ref.partition(".")
    claim = claims[cid]
    field = field or "value"
    if field == "value":
        return _quantity(claim["value"], claim["unit"])
    if field == "peer" and "peer_value" in claim:
        return _quantity(claim["peer_value"], claim["unit"])
    if field in ("ratio", "speedup") and field in claim:
        return _quantity(claim[field], "x")
    raise KeyError(ref)


def describe(claim: dict) -> str:
    """One line saying where a claim comes from (the tooltip of a rendered figure)."""
    return f"{claim['what']}; {claim['machine']}, {claim['date']}; {claim['command']}"


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_quantity(v) -> bool:
    if isinstance(v, list):
        return len(v) == 2 and all(_is_number(x) for x in v) and v[0] <= v[1]
    return _is_number(v)


def _close(got: float, want: float) -> bool:
    return abs(got - want) <= ROUNDING * abs(want) + 0.006


def check_claims(claims: dict[str, dict], root: Path = ROOT) -> list[Problem]:
    """What is wrong with the claims themselves (fields, units, raw files, ratios)."""
    problems = []
    for cid, c in claims.items():
        where = f"docs/claims.toml [{cid}]"

        def bad(message: str, where: str = where) -> None:
            problems.append(Problem(where, message))

        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", cid):
            bad("an id is lower case letters, digits and dashes")
        missing = [f for f in REQUIRED if f not in c]
        unknown = [f for f in c if f not in REQUIRED + OPTIONAL]
        if missing or unknown:
            bad(f"missing fields {missing}, unknown fields {unknown}")
            continue
        if c["unit"] not in UNITS:
            bad(f"unit {c['unit']!r} is not one of {', '.join(UNITS)}")
        for f in ("value", "peer_value", "ratio", "speedup"):
            if f in c and not _is_quantity(c[f]):
                bad(f"{f} {c[f]!r} is not a number or a [low, high] range")
        if ("peer" in c) != ("peer_value" in c) and "ratio" not in c:
            bad("a peer needs a peer_value or a ratio, and a peer_value a peer")
        if any(f in c for f in ("peer_value", "ratio", "speedup")) and "peer" not in c:
            bad("peer_value, ratio and speedup need the peer they compare with")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(c["date"])):
            bad(f"date {c['date']!r} is not YYYY-MM-DD")
        raw = Path(c["raw"])
        if raw.parent != RESULTS or not (root / raw).is_file():
            bad(f"raw {c['raw']!r} is not a file in {RESULTS}/")
        elif "raw_excerpt" in c and c["raw_excerpt"] not in (root / raw).read_text():
            bad(f"raw file {c['raw']} does not contain {c['raw_excerpt']!r}")
        if "notebook" in c and not (root / c["notebook"]).is_file():
            bad(f"notebook {c['notebook']!r} does not exist")
        scalar = all(_is_number(c.get(f, 0)) for f in ("value", "peer_value", "ratio", "speedup"))
        if "peer_value" in c and scalar and c["peer_value"] and c["value"]:
            ratio = c["value"] / c["peer_value"]
            if "ratio" in c and not _close(c["ratio"], ratio):
                bad(f"ratio {c['ratio']} is not value / peer_value = {ratio:.3g}")
            if "speedup" in c and not _close(c["speedup"], 1 / ratio):
                bad(f"speedup {c['speedup']} is not peer_value / value = {1 / ratio:.3g}")
    return problems


def headline_lines(path: Path, text: str) -> list[tuple[int, str]]:
    """The numbered lines of `text` that are headline text (see the module's docstring)."""
    whole = path in WHOLE_PAGES
    inside, fenced, lines = whole, False, []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if path.suffix == ".md" and stripped.startswith("```"):
            fenced = not fenced
            continue
        if stripped == HEADLINE_BEGIN:
            inside = True
        elif stripped == HEADLINE_END:
            inside = whole
        elif inside and not fenced:
            lines.append((number, line))
    return lines


def check_text(claims: dict[str, dict], path: Path, text: str) -> list[Problem]:
    """Claim references that name nothing, README figures that differ from the claims file,
    and figures stated outside a claim in the headline text of one file (`path` relative to
    the repository root)."""
    problems = []
    md = path.suffix == ".md"
    for number, line in enumerate(text.splitlines(), 1):
        for ref in RST_REF.findall(line) if not md else []:
            try:
                render(claims, ref)
            except KeyError:
                problems.append(Problem(f"{path}:{number}", f"no claim {ref!r} in claims.toml"))
    if md:
        for m in MD_REF.finditer(text):
            number = text.count("\n", 0, m.start()) + 1
            try:
                want = render(claims, m.group(1))
            except KeyError:
                problems.append(Problem(f"{path}:{number}", f"no claim {m.group(1)!r}"))
                continue
            if m.group(2) != want:
                problems.append(
                    Problem(
                        f"{path}:{number}",
                        f"claim {m.group(1)} reads {m.group(2)!r}, the claims file says "
                        f"{want!r} (python docs/_ext/claims.py --fix)",
                    )
                )
    # Figures outside references: references are blanked first (a README marker may span lines).
    blanked = MD_REF.sub(lambda m: "\n" * m.group(0).count("\n"), text) if md else text
    for number, line in headline_lines(path, blanked):
        line = RST_REF.sub("", line)
        for m in FIGURE.finditer(line):
            problems.append(
                Problem(
                    f"{path}:{number}",
                    f"headline figure {m.group(0)!r} is not a claim: add it to docs/claims.toml "
                    "and refer to it (:claim:`id` in a page, <!-- claim:id --> in README.md)",
                )
            )
        if not md and BARE_CELL.match(line):
            problems.append(
                Problem(f"{path}:{number}", f"headline table cell {line.strip()!r} is not a claim")
            )
    return problems


def documents(root: Path = ROOT) -> list[Path]:
    """README.md and every page of the documentation, relative to `root`."""
    pages = sorted(p.relative_to(root) for p in (root / DOCS).rglob("*.rst"))
    skipped = ("_build", "generated")
    return [README] + [p for p in pages if not set(p.parts) & set(skipped)]


def check(root: Path = ROOT, claims_file: Path | None = None) -> list[Problem]:
    """Every problem of the claims file and of the text that refers to it."""
    claims = load(claims_file or root / "docs" / "claims.toml")
    problems = check_claims(claims, root)
    for path in documents(root):
        problems += check_text(claims, path, (root / path).read_text())
    return problems


def fix_readme(root: Path = ROOT) -> bool:
    """Rewrites README.md's marked figures from the claims file; True if it changed."""
    claims = load(root / "docs" / "claims.toml")
    path = root / README
    text = path.read_text()

    def one(m: re.Match) -> str:
        try:
            return f"<!-- claim:{m.group(1)} -->{render(claims, m.group(1))}<!-- /claim -->"
        except KeyError:
            return m.group(0)

    fixed = MD_REF.sub(one, text)
    if fixed != text:
        path.write_text(fixed)
    return fixed != text


# --- Sphinx: the :claim: role, the claims-table directive, and the check at every build ------


def _claims_rst(claims: dict[str, dict], ids: list[str], full: bool) -> list[str]:
    """A table of the claims `ids` (what, ours, the peer's, the ratio, where and when), or with
    `full` a list that adds each one's command, raw output and notebook."""

    def peer(c: dict, cid: str) -> str:
        if "peer_value" not in c:
            return c.get("peer", "")
        return f"{c['peer']}: {render(claims, cid + '.peer')}"

    if full:
        lines = []
        for cid in ids:
            c = claims[cid]
            against = f" against {peer(c, cid)}" if "peer" in c else ""
            ratio = f" ({render(claims, cid + '.ratio')})" if "ratio" in c else ""
            lines += [
                f"- **{c['what']}**: {render(claims, cid)}{against}{ratio}; {c['machine']}, "
                f"{c['date']}. Command ``{c['command']}``; raw output ``{c['raw']}``"
                + (f"; notebook ``{c['notebook']}``." if "notebook" in c else "."),
                "",
            ]
        return lines
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 30 11 24 10 25", ""]
    rows = [["What", "RCCLX", "Peer", "RCCLX / peer", "Measured"]]
    for cid in ids:
        c = claims[cid]
        ratio = render(claims, cid + ".ratio") if "ratio" in c else ""
        rows.append(
            [c["what"], render(claims, cid), peer(c, cid), ratio, f"{c['machine']}, {c['date']}"]
        )
    for row in rows:
        lines.append(f"   * - {row[0]}")
        lines += [f"     - {v}" for v in row[1:]]
    return lines


def setup(app):
    from docutils import nodes
    from docutils.parsers.rst import directives
    from docutils.statemachine import StringList
    from sphinx.util import logging
    from sphinx.util.docutils import SphinxDirective

    logger = logging.getLogger(__name__)
    claims = load()

    def claim_role(name, rawtext, text, lineno, inliner, options=None, content=()):
        try:
            shown = render(claims, text)
        except KeyError:
            msg = inliner.reporter.error(f"no claim {text!r} in docs/claims.toml", line=lineno)
            return [inliner.problematic(rawtext, rawtext, msg)], [msg]
        explanation = describe(claims[text.partition(".")[0]])
        return [nodes.abbreviation(shown, shown, explanation=explanation)], []

    class ClaimsTable(SphinxDirective):
        """A table of claims: ``:ids:`` (space separated; default every claim); ``:full:``
        makes it a list that adds each claim's command, raw result file and notebook."""

        option_spec = {"ids": directives.unchanged, "full": directives.flag}

        def run(self):
            ids = self.options.get("ids", "").split() or list(claims)
            unknown = [i for i in ids if i not in claims]
            if unknown:
                raise self.error(f"claims-table: no claim {', '.join(unknown)} in claims.toml")
            container = nodes.container()
            lines = _claims_rst(claims, ids, "full" in self.options)
            self.state.nested_parse(StringList(lines, source="claims.toml"), 0, container)
            return container.children

    def check_at_build(app):
        for problem in check():
            logger.warning(f"claims: {problem}")

    app.add_role("claim", claim_role)
    app.add_directive("claims-table", ClaimsTable)
    app.connect("builder-inited", check_at_build)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fix", action="store_true", help="rewrite README.md's marked figures")
    args = parser.parse_args(argv)
    if args.fix and fix_readme():
        print("README.md: figures rewritten from docs/claims.toml")
    problems = check()
    for problem in problems:
        print(problem)
    print(f"{len(load())} claims, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
