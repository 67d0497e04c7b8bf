"""The .pyi stubs of the native modules (ctran._C, rcclx_core._C, rcclx_core._C._testing)
against the built modules: the same names (classes, functions, submodules, enum members,
methods, static methods, properties) with the same kinds, the same class bases, every function's
parameters in order with the same kinds and defaults (compared as values where the binding's
default is a literal), `-> None` exactly where the binding returns None, and each enum member's
`# value = N` comment equal to its value. The runtime side is read from pybind11's signature,
the first line of each docstring. A binding that gains a parameter, a method or a class fails
here until its stub follows; one without a docstring fails too."""

from __future__ import annotations

import ast
import copy
import importlib
import io
import tokenize
import types
from pathlib import Path

import pytest
from signatures import NO_DEFAULT, default_of, runtime_signature

import ctran
import rcclx_core

CTRAN_DIR = Path(ctran.__file__).parent
RCCLX_DIR = Path(rcclx_core.__file__).parent
STUBS = {
    "ctran._C": CTRAN_DIR / "_C.pyi",
    "rcclx_core._C": RCCLX_DIR / "_C" / "__init__.pyi",
    "rcclx_core._C._testing": RCCLX_DIR / "_C" / "_testing.pyi",
}
# Base classes every pybind11 class has, which stubs leave out.
IMPLICIT_BASES = {"object", "pybind11_object"}
# Stub classes for annotations only (no runtime counterpart).
TYPING_ONLY_BASES = {"Protocol", "TypedDict"}


# --- the runtime side


def runtime_kind(owner: object, value: object) -> str:
    if isinstance(owner, type) and isinstance(value, owner):
        return "member"
    if isinstance(value, types.ModuleType):
        return "module"
    if isinstance(value, type):
        return "class"
    if isinstance(value, property):
        return "property"
    if isinstance(value, staticmethod):
        return "staticmethod"
    if type(value).__name__ in ("builtin_function_or_method", "instancemethod"):
        return "function" if isinstance(owner, types.ModuleType) else "method"
    return f"attribute ({type(value).__name__})"


def runtime_names(owner: object) -> dict[str, str]:
    """Name -> kind of what `owner` (a module or class) binds itself. Dunder names are left out
    (pybind11 adds its own), except a constructor bound with py::init."""
    out = {}
    for name, value in vars(owner).items():
        if name.startswith("_pybind11") or (name.startswith("__") and name != "__init__"):
            continue
        if name == "__init__" and type(value).__name__ != "instancemethod":
            continue  # pybind11_object's, which refuses construction
        out[name] = runtime_kind(owner, value)
    return out


# --- the stub side


def stub_comments(source: str) -> dict[int, str]:
    return {
        tok.start[0]: tok.string
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }


def base_names(node: ast.ClassDef) -> list[str]:
    return [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "?") for b in node.bases]


def is_typing_only(node: ast.stmt) -> bool:
    if isinstance(node, ast.ClassDef):
        return bool(TYPING_ONLY_BASES.intersection(base_names(node)))
    return isinstance(node, ast.AnnAssign) and ast.unparse(node.annotation) == "TypeAlias"


def stub_kind(node: ast.stmt, in_class: bool) -> str:
    if isinstance(node, ast.ClassDef):
        return "class"
    if isinstance(node, ast.ImportFrom):
        return "module"
    if isinstance(node, ast.AnnAssign):
        return "member" if in_class else "attribute"
    decorators = {ast.unparse(d) for d in node.decorator_list}
    for kind in ("property", "staticmethod", "classmethod", "overload"):
        if kind in decorators:
            return kind
    return "method" if in_class else "function"


def stub_names(body: list[ast.stmt], in_class: bool) -> dict[str, tuple[str, ast.stmt]]:
    """Name -> (kind, node) of a stub module's or class's entries; dunders left out as in
    runtime_names(), and so are annotation-only helpers and plain imports."""
    out = {}
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:  # from . import _testing
            for alias in node.names:
                out[alias.asname or alias.name] = ("module", node)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr)) or is_typing_only(node):
            continue
        if isinstance(node, ast.AnnAssign):
            name = node.target.id
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            name = node.name
        else:
            raise AssertionError(f"line {node.lineno}: a stub entry this check cannot read")
        if name.startswith("__") and name != "__init__":
            continue
        out[name] = (stub_kind(node, in_class), node)
    return out


def stub_signature(node: ast.FunctionDef) -> tuple[list[tuple], str]:
    a = node.args

    def defaults(args: list[ast.arg], values: list[ast.expr | None]) -> list[object]:
        padded = [None] * (len(args) - len(values)) + list(values)
        return [NO_DEFAULT if v is None else default_of(ast.unparse(v)) for v in padded]

    positional = a.posonlyargs + a.args
    kinds = ["positional_only"] * len(a.posonlyargs) + ["positional"] * len(a.args)
    params = list(zip(kinds, [p.arg for p in positional], defaults(positional, a.defaults)))
    if a.vararg:
        params.append(("var_positional", a.vararg.arg, NO_DEFAULT))
    kw = defaults(a.kwonlyargs, a.kw_defaults)
    params += [("keyword_only", p.arg, d) for p, d in zip(a.kwonlyargs, kw)]
    if a.kwarg:
        params.append(("var_keyword", a.kwarg.arg, NO_DEFAULT))
    return params, ast.unparse(node.returns) if node.returns else ""


# --- the comparison


def spelled(params: list[tuple]) -> str:
    """Parameters as a signature reads: (self, sendbuf, recvbuf=None, ...)."""
    words = []
    for _, name, default in params:
        if default is NO_DEFAULT:
            words.append(name)
        else:
            words.append(f"{name}={default[2]!r}" if default[0] == "literal" else f"{name}=...")
    return "(" + ", ".join(words) + ")"


def same_parameters(want: list[tuple], have: list[tuple]) -> bool:
    """Names and kinds equal in order, defaults present alike, and equal (value and type) where
    the binding's is a literal."""
    if [p[:2] for p in want] != [p[:2] for p in have]:
        return False
    for (_, _, d_want), (_, _, d_have) in zip(want, have):
        if (d_want is NO_DEFAULT) != (d_have is NO_DEFAULT):
            return False
        if d_want is not NO_DEFAULT and d_want[0] == "literal" and d_want != d_have:
            return False
    return True


def compare_signature(where: str, func: object, node: ast.FunctionDef) -> list[str]:
    want, want_ret = runtime_signature(func, where)
    have, have_ret = stub_signature(node)
    problems = []
    if not same_parameters(want, have):
        problems.append(f"{where}: {spelled(want)} is bound, the stub has {spelled(have)}")
    if (want_ret == "None") != (have_ret == "None"):
        problems.append(f"{where}: returns {want_ret} as bound, the stub says {have_ret}")
    return problems


def compare(where: str, owner: object, body: list[ast.stmt], comments: dict[int, str]) -> list[str]:
    """Every difference between `owner` (a module or class) and its stub, recursively."""
    in_class = isinstance(owner, type)
    want, have = runtime_names(owner), stub_names(body, in_class)
    problems = [f"{where}.{n}: bound ({want[n]}) but not in the stub" for n in want.keys() - have]
    problems += [f"{where}.{n}: in the stub but not bound" for n in have.keys() - want]
    for name in sorted(want.keys() & have.keys()):
        kind, node = have[name]
        value, at = vars(owner)[name], f"{where}.{name}"
        if kind != want[name]:
            problems.append(f"{at}: bound as {want[name]}, the stub has a {kind}")
        elif kind == "class":
            runtime_bases = [
                b.__name__ for b in value.__bases__ if b.__name__ not in IMPLICIT_BASES
            ]
            if runtime_bases != base_names(node):
                problems.append(f"{at}: bases {runtime_bases}, the stub has {base_names(node)}")
            problems += compare(at, value, node.body, comments)
        elif kind in ("function", "method", "staticmethod"):
            func = value.__func__ if kind == "staticmethod" else value
            problems += compare_signature(at, func, node)
        elif kind == "member":
            comment = comments.get(node.lineno, "")
            if comment != f"# value = {int(value)}":
                problems.append(f"{at}: value {int(value)}, the stub's comment is {comment!r}")
    return problems


def parsed(module: str) -> tuple[ast.Module, dict[int, str]]:
    path = STUBS[module]
    assert path.is_file(), f"{module}: no stub at {path}"
    source = path.read_text()
    return ast.parse(source), stub_comments(source)


@pytest.mark.parametrize("module", sorted(STUBS))
def test_stub_matches_module(module):
    tree, comments = parsed(module)
    problems = compare(module, importlib.import_module(module), tree.body, comments)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module", sorted(STUBS))
def test_annotation_only_names_are_not_bound(module):
    """The stub's helpers for annotations (ArrayLike...) must not hide a binding of that name."""
    runtime = importlib.import_module(module)
    helpers = [n for n in parsed(module)[0].body if is_typing_only(n)]
    names = [n.name if isinstance(n, ast.ClassDef) else n.target.id for n in helpers]
    assert not [n for n in names if hasattr(runtime, n)]


def doc_text(value: object) -> str:
    """A binding's docstring without pybind11's signature line."""
    if isinstance(value, staticmethod):
        value = value.__func__
    doc = (value.__doc__ or "").strip()
    return doc if isinstance(value, (property, type)) else "\n".join(doc.splitlines()[1:]).strip()


# What pybind11 itself adds to every enum, undocumented.
ENUM_INTERNALS = {"__init__", "name", "value"}


@pytest.mark.parametrize("module", sorted(STUBS))
def test_every_binding_has_a_docstring(module):
    runtime = importlib.import_module(module)
    undocumented = []
    for name, kind in runtime_names(runtime).items():
        value = vars(runtime)[name]
        if kind != "module" and not doc_text(value):
            undocumented.append(name)
        if kind != "class":
            continue
        is_enum = hasattr(value, "__members__")
        for attr, attr_kind in runtime_names(value).items():
            if attr_kind == "member" or (is_enum and attr in ENUM_INTERNALS):
                continue
            if not doc_text(vars(value)[attr]):
                undocumented.append(f"{name}.{attr}")
    assert not undocumented, f"{module}: no docstring on {', '.join(undocumented)}"


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef:
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name)


def _drop_method(tree, cls, name):
    c = _class(tree, cls)
    c.body.remove(_method(c, name))


def _add_parameter(tree, cls, name):
    _method(_class(tree, cls), name).args.args.append(ast.arg("extra"))


def _change_default(tree, cls, name):
    _method(_class(tree, cls), name).args.defaults[-1] = ast.Constant(True)


def _swap_parameters(tree, cls, name):
    args = _method(_class(tree, cls), name).args.args
    args[1], args[2] = args[2], args[1]


def _add_function(tree, cls, name):
    tree.body.append(ast.parse(f"def {name}() -> None: ...").body[0])


def _property_as_method(tree, cls, name):
    _method(_class(tree, cls), name).decorator_list.clear()


def _renumber_member(tree, cls, name):
    member = next(
        n for n in _class(tree, cls).body if isinstance(n, ast.AnnAssign) and n.target.id == name
    )
    member.lineno = 1  # as if its comment were the file's first line


@pytest.mark.parametrize(
    ("mutate", "cls", "name"),
    [
        (_drop_method, "Communicator", "abort"),
        (_add_parameter, "Communicator", "all_reduce"),
        (_change_default, "Communicator", "all_reduce"),
        (_swap_parameters, "Communicator", "reduce"),
        (_add_function, None, "not_bound"),
        (_property_as_method, "Communicator", "rank"),
        (_renumber_member, "DataType", "FLOAT32"),
    ],
)
def test_a_stub_that_drifted_fails(mutate, cls, name):
    """The check itself: each kind of drift from rcclx_core._C is reported, naming the entry
    (over what the stub as it stands already reports, which test_stub_matches_module shows)."""
    runtime = importlib.import_module("rcclx_core._C")
    tree, comments = parsed("rcclx_core._C")
    before = set(compare("rcclx_core._C", runtime, tree.body, comments))
    tree = copy.deepcopy(tree)
    mutate(tree, cls, name)
    added = set(compare("rcclx_core._C", runtime, tree.body, comments)) - before
    assert added and all(name in p for p in added), added


# --- the Python forwarders of the bindings


def _forwarded_methods() -> list[str]:
    """The methods rcclx_core.Communicator (Python) writes again over its native base."""
    native = rcclx_core._C.Communicator
    return sorted(
        name
        for name in vars(rcclx_core.Communicator)
        if not name.startswith("_") and name in vars(native)
    )


@pytest.mark.parametrize("name", _forwarded_methods())
def test_python_forwarders_take_the_bindings_arguments(name):
    """Each method rcclx_core.Communicator forwards to its binding has the binding's argument
    list: the same names, in the same order, with the same defaults."""
    from signatures import python_signature

    ours = getattr(rcclx_core.Communicator, name)
    native = getattr(rcclx_core._C.Communicator, name)
    theirs = [(n, d) for _, n, d in runtime_signature(native, name)[0] if n != "self"]
    assert [(n, d) for _, n, d in python_signature(ours)] == theirs
