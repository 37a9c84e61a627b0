"""The package's shape: data flows one way, so its import graph has no cycle, no module
reaches into another's private (underscore) names, and numba stays in ``kernels/``."""

from __future__ import annotations

import ast
from pathlib import Path

import aggmrf_explore

PACKAGE = Path(aggmrf_explore.__file__).parent
NAME = "aggmrf_explore"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([NAME, *parts])] = path
    return out


MODULES = _modules()


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    """Absolute name of what ``from <node.module> import …`` refers to in ``module``."""
    if node.level == 0:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _imports(module: str, path: Path, modules: dict[str, Path] = MODULES):
    """Yield (imported module, imported name or None) for every import, nested ones included."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:  # ``from . import datasets``: the submodule itself
                    yield sub, None
                else:
                    yield base, alias.name


def _graph(modules: dict[str, Path] = MODULES) -> dict[str, set[str]]:
    return {
        module: {m for m, _ in _imports(module, path, modules) if m in modules and m != module}
        for module, path in modules.items()
    }


def test_import_graph_has_no_cycle():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            # a package's __init__ re-exporting its own submodules is not a cycle
            if n.startswith(m + ".") or m.startswith(n + ".") and n == NAME:
                continue
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(" → ".join(c) for c in cycles)


def test_no_module_imports_another_modules_private_names():
    bad = []
    for module, path in MODULES.items():
        for target, name in _imports(module, path):
            if not target.startswith(NAME) or target == module:
                continue
            private_name = name is not None and name.startswith("_") and name != "__version__"
            private_module = any(p.startswith("_") and p != "__init__" for p in target.split("."))
            if private_name or private_module:
                bad.append(f"{module} imports {target}:{name}")
    assert not bad, "\n".join(bad)


def test_numba_only_in_kernels():
    bad = [
        module
        for module, path in MODULES.items()
        if not module.startswith(f"{NAME}.kernels")
        and any(m.split(".")[0] in {"numba", "llvmlite"} for m, _ in _imports(module, path))
    ]
    assert not bad, f"numba used outside kernels/: {bad}"


def test_the_checks_see_a_planted_cycle_and_private_import(tmp_path):
    """The walker itself: a planted cycle and a private import are found."""
    (tmp_path / "zz_a.py").write_text("from .zz_b import _secret\n")
    (tmp_path / "zz_b.py").write_text("def f():\n    from . import zz_a\n")
    fake = {f"{NAME}.zz_a": tmp_path / "zz_a.py", f"{NAME}.zz_b": tmp_path / "zz_b.py"}
    edges = _graph(fake)
    assert edges == {f"{NAME}.zz_a": {f"{NAME}.zz_b"}, f"{NAME}.zz_b": {f"{NAME}.zz_a"}}
    assert (f"{NAME}.zz_b", "_secret") in set(_imports(f"{NAME}.zz_a", fake[f"{NAME}.zz_a"], fake))


# ---------------------------------------------------------------------- sizes
MAX_MODULE_LINES = 800
MAX_CLASS_LINES = 500
# Known debt, each with the ceiling it may not grow past (lines of the module, or of the
# class); shrink a ceiling when the file shrinks, remove the entry once under the limit.
DEBT_MODULES: dict[str, int] = {}
DEBT_CLASSES: dict[str, int] = {}


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def test_no_module_or_class_is_too_long_for_one_sitting():
    """No module over ~800 lines and no class over ~500, except the listed debt, which may
    not grow."""
    too_long = []
    for path in MODULES.values():
        rel = _rel(path)
        text = path.read_text(encoding="utf-8")
        n = text.count("\n") + 1
        if n > DEBT_MODULES.get(rel, MAX_MODULE_LINES):
            too_long.append(f"{rel}: {n} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                length = node.end_lineno - node.lineno + 1
                if length > DEBT_CLASSES.get(f"{rel}:{node.name}", MAX_CLASS_LINES):
                    too_long.append(f"{rel}:{node.name}: {length} lines")
    assert not too_long, too_long


MAX_VIEW_LINES = 150


def test_the_explorer_is_small_views_around_one_store():
    """Panel's data-store pattern: every view of the explorer (a ``Viewer``) is at most
    ~150 lines, and the app that composes them stays under the class limit; the store and
    its loader import no Panel."""
    explorer = PACKAGE / "explorer"
    views, big = [], []
    for path in sorted(explorer.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and "Viewer" in ast.unparse(node).split(":")[0]:
                length = node.end_lineno - node.lineno + 1
                views.append(node.name)
                if node.name != "Explorer" and length > MAX_VIEW_LINES:
                    big.append(f"{path.name}:{node.name}: {length} lines")
    assert len(views) >= 10, views  # (the app, the cards, the tabs, the messages)
    assert not big, big
    for name in ("store.py", "loader.py"):
        imported = {m for m, _ in _imports(f"{NAME}.explorer.{name[:-3]}", explorer / name)}
        assert not {m for m in imported if m.split(".")[0] in ("panel", "bokeh")}, name


def test_surfaces_take_declared_settings_from_their_one_declaration():
    """The command line and the explorer's store define no bound or choice list of their
    own for a setting of ``settings.SETTINGS``: every such flag's type is
    ``numbers.of(name)`` (no ``choices=``) and every such store param is ``param_for(...)``."""
    from aggmrf_explore.explorer.params import SETTING_OF
    from aggmrf_explore.settings import SETTINGS

    flags = {s.flag: s.name for s in SETTINGS.values() if s.flag}
    own = []
    tree = ast.parse((PACKAGE / "cli" / "parser.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "add_argument" or not node.args:
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and first.value in flags:
            kw = {k.arg: k.value for k in node.keywords}
            # lambda_theta_arg is numbers.of("lambda_theta") plus the word "auto"
            takes_own = "numbers.of" not in ast.unparse(kw.get("type", ast.Constant(None)))
            if (
                "choices" in kw
                or "type" in kw
                and takes_own
                and ast.unparse(kw["type"]) != "lambda_theta_arg"
            ):
                if kw.get("action") is None:
                    own.append(f"cli/parser.py:{node.lineno} {first.value}")
    store = ast.parse((PACKAGE / "explorer" / "store.py").read_text(encoding="utf-8"))
    for node in ast.walk(store):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in SETTING_OF:
                if not (
                    isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "param_for"
                ):
                    own.append(f"explorer/store.py:{node.lineno} {target.id}")
    assert not own, own
