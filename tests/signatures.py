"""Argument lists of callables however they were written: pybind11 functions (the signature
line pybind11 writes first in every docstring) and Python functions (inspect). The tests compare
the stubs and forwarders of a call against its binding with these, so an argument list is
written once and every other copy is checked against it."""

from __future__ import annotations

import ast
import inspect
import re


class _NoDefault:
    def __repr__(self) -> str:
        return "no default"


NO_DEFAULT = _NoDefault()


def split_top_level(text: str) -> list[str]:
    """`text` split at the commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def default_of(text: str | None) -> object:
    """A default as compared: NO_DEFAULT, ("literal", type, value), or ("expr",) for one that
    is not a literal (pybind11 writes such a default's repr)."""
    if text is None:
        return NO_DEFAULT
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return ("expr",)
    return ("literal", type(value).__name__, value)


def runtime_signature(func: object, name: str) -> tuple[list[tuple], str]:
    """(parameters as (kind, name, default), return annotation) from pybind11's signature."""
    doc = (func.__doc__ or "").lstrip()
    assert "Overloaded function" not in doc, f"{name}: overloads are not checked; add that here"
    first = doc.splitlines()[0] if doc else ""
    match = re.match(r"\w*\((.*)\)(?: -> (.*))?$", first)
    assert match, f"{name}: no pybind11 signature in its docstring ({first!r})"
    params, kind = [], "positional"
    for part in split_top_level(match.group(1)):
        if part == "/":
            params = [("positional_only", n, d) for _, n, d in params]
            continue
        if part == "*":
            kind = "keyword_only"
            continue
        if part.startswith("**"):
            params.append(("var_keyword", part[2:].split(":")[0].strip(), NO_DEFAULT))
            continue
        if part.startswith("*"):
            params.append(("var_positional", part[1:].split(":")[0].strip(), NO_DEFAULT))
            kind = "keyword_only"
            continue
        head, _, default = part.partition(" = ")
        params.append((kind, head.split(":")[0].strip(), default_of(default or None)))
    return params, (match.group(2) or "").strip()


def python_signature(func: object) -> list[tuple]:
    """A Python function's parameters as runtime_signature gives them (self left out)."""
    kinds = {
        inspect.Parameter.POSITIONAL_ONLY: "positional_only",
        inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
        inspect.Parameter.KEYWORD_ONLY: "keyword_only",
        inspect.Parameter.VAR_POSITIONAL: "var_positional",
        inspect.Parameter.VAR_KEYWORD: "var_keyword",
    }
    params = []
    for p in inspect.signature(func).parameters.values():
        if p.name == "self":
            continue
        default = (
            NO_DEFAULT if p.default is inspect.Parameter.empty else default_of(repr(p.default))
        )
        params.append((kinds[p.kind], p.name, default))
    return params
