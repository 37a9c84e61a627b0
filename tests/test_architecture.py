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
