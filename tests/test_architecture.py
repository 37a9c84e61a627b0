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
# privacy/local.py: randomized response with its channel algebra, tables and theory; split
# the channel algebra into its own module next.
DEBT_MODULES: dict[str, int] = {"privacy/local.py": 813}
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
    """Panel's data-store pattern, in the explorer's layout: every view (a ``Viewer``) lives
    in ``explorer/views/`` and is at most ~150 lines, and the app that composes them stays
    under the class limit; ``explorer/store/`` (the store and what it derives) imports no
    Panel, Bokeh or HoloViews and nothing from the views, the server or the notebook
    widgets; the loader imports no Panel either."""
    explorer = PACKAGE / "explorer"
    views, big, elsewhere = [], [], []
    for path in sorted(explorer.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and "Viewer" in ast.unparse(node).split(":")[0]:
                length = node.end_lineno - node.lineno + 1
                views.append(node.name)
                if path.parent.name != "views":
                    elsewhere.append(f"{_rel(path)}:{node.name}")
                if node.name != "Explorer" and length > MAX_VIEW_LINES:
                    big.append(f"{path.name}:{node.name}: {length} lines")
    assert len(views) >= 10, views  # (the app, the cards, the tabs, the messages)
    assert not big, big
    assert not elsewhere, elsewhere
    module_of = {path: module for module, path in MODULES.items()}
    store = sorted((explorer / "store").glob("*.py"))
    assert len(store) >= 10, store
    for path in [*store, explorer / "server" / "loader.py"]:
        imported = {m for m, _ in _imports(module_of[path], path)}
        drawing = {m for m in imported if m.split(".")[0] in ("panel", "bokeh", "holoviews")}
        assert not drawing, (_rel(path), drawing)
        if path.parent.name == "store":
            others = [f"{NAME}.explorer.{g}" for g in ("views", "server", "notebook")]
            assert not {m for m in imported if m.startswith(tuple(others))}, _rel(path)


def test_surfaces_take_declared_settings_from_their_one_declaration():
    """The command line and the explorer's store define no bound or choice list of their
    own for a setting of ``settings.SETTINGS``: every such flag's type is
    ``numbers.of(name)`` (no ``choices=``) and every such store param is ``param_for(...)``."""
    from aggmrf_explore.explorer.store.params import SETTING_OF
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
    store = ast.parse((PACKAGE / STORE).read_text(encoding="utf-8"))
    for node in ast.walk(store):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in SETTING_OF:
                if not (
                    isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "param_for"
                ):
                    own.append(f"explorer/store/store.py:{node.lineno} {target.id}")
    assert not own, own


# ---------------------------------------------------------------------- state
# Module-level mutable state, defined: in the explorer's modules (``explorer/``) and the
# training worker (``trainer_worker.py``),
#   1. no ``global`` statement (a function rebinding a module's name);
#   2. no module-level name bound to a thread, lock, event, queue, counter, weak
#      container or deque (they exist to change at run time), nor to an instance made at
#      import (any other call) unless the callable is known to return an immutable value
#      (``IMMUTABLE_CALLS``) or the name is declared below;
#   3. a module-level dict, list or set (a literal, a comprehension or ``dict(...)``) is a
#      constant: nothing in the package mutates it (item assignment or deletion, augmented
#      assignment, or a mutating method: ``append``, ``update``, ``add``, ``pop``…), in its
#      module or through ``module.NAME`` elsewhere.
# Declared, each with why: the server's one runtime object, and memo caches (written once
# per key, values never changed, like ``functools.cache``).
DECLARED_STATE = {
    "explorer/server/runtime.py": {"RUNTIME"},  # the process's shared state, one object
    "explorer/store/caches.py": {"UPLOADS"},  # uploaded files by content hash (memo)
    "explorer/store/problems.py": {"_PROBLEMS", "_RELEASES", "_BASELINES"},  # memo caches
    "explorer/views/liveplots.py": {"_FIGURES"},  # serialized figure structures (memo)
}
STATE_SCOPE = ("explorer/", "trainer_worker.py")
IMMUTABLE_CALLS = {
    "tuple",
    "frozenset",
    "bool",
    "int",
    "float",
    "str",
    "re.compile",
    "logging.getLogger",
    "Path",
    "_log_wanted",
    "types.MappingProxyType",
    "MappingProxyType",
}
CONTAINER_CALLS = {"dict", "list", "set"}
MUTATORS = {
    "append",
    "extend",
    "insert",
    "add",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "clear",
    "remove",
    "discard",
    "sort",
    "reverse",
    "difference_update",
    "intersection_update",
    "symmetric_difference_update",
}


def _module_bindings(tree: ast.Module):
    """(name, value node, line) of every assignment at module level (in if/try blocks too)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.If, ast.Try)):
            todo += node.body + node.orelse + getattr(node, "finalbody", [])
            todo += [s for h in getattr(node, "handlers", []) for s in h.body]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    yield t.id, node.value, node.lineno


def _mutations(tree: ast.AST, names: set[str], prefix: str = ""):
    """(name, line) of each mutation of ``names`` (``prefix.NAME`` when given) in ``tree``."""

    def named(node) -> str | None:
        text = ast.unparse(node)
        if prefix:
            return text[len(prefix) + 1 :] if text.startswith(prefix + ".") else None
        return text if isinstance(node, ast.Name) else None

    for node in ast.walk(tree):
        hit = None
        if isinstance(node, (ast.Subscript,)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            hit = named(node.value)
        elif isinstance(node, ast.AugAssign):
            hit = named(node.target)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in MUTATORS:
                hit = named(node.func.value)
        if hit in names:
            yield hit, node.lineno


def _state_problems(modules: dict[str, Path], scope=STATE_SCOPE, declared=DECLARED_STATE):
    problems = []
    constants: dict[str, set[str]] = {}  # module → its dict/list/set constants
    trees = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in modules.items()}
    for module, path in modules.items():
        rel = _rel_to_package(path)
        if not rel.startswith(scope):
            continue
        tree = trees[module]
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                problems.append(f"{rel}:{node.lineno} global {', '.join(node.names)}")
        for name, value, line in _module_bindings(tree):
            if name == "__all__" or name in declared.get(rel, set()):
                continue
            container = isinstance(
                value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
            )
            if isinstance(value, ast.Call):
                callee = ast.unparse(value.func)
                if callee in CONTAINER_CALLS:
                    container = True
                elif callee not in IMMUTABLE_CALLS:
                    problems.append(f"{rel}:{line} {name} = {callee}(…) made at import")
            if container:
                constants.setdefault(module, set()).add(name)
    for module, names in constants.items():
        rel = _rel_to_package(modules[module])
        for name, line in _mutations(trees[module], names):
            problems.append(f"{rel}:{line} mutates the module-level {name}")
        short = module.rsplit(".", 1)[-1]
        for other, tree in trees.items():
            if other != module:
                for name, line in _mutations(tree, names, prefix=short):
                    problems.append(
                        f"{_rel_to_package(modules[other])}:{line} mutates {short}.{name}"
                    )
    return problems


def _rel_to_package(path: Path) -> str:
    try:
        return _rel(path)
    except ValueError:  # (a planted module of the test itself)
        return f"explorer/{path.name}"


def test_the_explorers_server_code_holds_no_module_level_mutable_state():
    """The explorer's modules and the training worker keep no state at module level (the
    definition above): what the server process shares lives in ``runtime.RUNTIME``, what a
    session holds in its store and views."""
    problems = _state_problems(MODULES)
    assert not problems, "module-level mutable state:\n" + "\n".join(problems)


def test_the_state_check_sees_planted_state(tmp_path):
    planted = tmp_path / "zz_state.py"
    planted.write_text(
        "import threading\n"
        "SEEN = {}\n"
        "NAMES = ['a']\n"
        "LOCK = threading.Lock()\n"
        "COUNT = 0\n"
        "def f(x):\n"
        "    global COUNT\n"
        "    COUNT += 1\n"
        "    SEEN[x] = 1\n"
        "    NAMES.append(x)\n"
    )
    problems = _state_problems({f"{NAME}.explorer.zz_state": planted})
    text = "\n".join(problems)
    for expected in ("global COUNT", "LOCK = threading.Lock", "mutates the module-level SEEN"):
        assert expected in text, text
    assert "mutates the module-level NAMES" in text


MIXIN_SCOPE = ("explorer/", "trainer_worker.py")
# Known debt, which may not grow (none: the store's run control is a member object and its
# frames are pure functions).
DEBT_MIXINS: dict[str, int] = {}


def _package_classes() -> dict[str, str]:
    """Class name → module (relative path) of every class defined in the package."""
    out = {}
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                out[node.name] = _rel(path)
    return out


def test_no_explorer_class_is_assembled_from_mixins():
    """A class of the explorer's code inherits from at most one class of the package: run
    control, frames and the like are member objects or functions, not base classes."""
    ours = _package_classes()
    assembled = []
    for path in MODULES.values():
        rel = _rel(path)
        if not rel.startswith(MIXIN_SCOPE):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
                own = [b for b in bases if b in ours]
                if len(own) > DEBT_MIXINS.get(f"{rel}:{node.name}", 1):
                    assembled.append(f"{rel}:{node.name}({', '.join(own)})")
    assert not assembled, assembled


# ---------------------------------------------------------------------- the store writes its own
STORE = "explorer/store/store.py"
STORE_CLASS = "ExplorerSession"


def _store_params(path: Path) -> set[str]:
    """The params the store class declares (``name = param.X(…)`` or ``param_for(…)`` in
    its body)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name == STORE_CLASS:
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
                    callee = ast.unparse(stmt.value.func)
                    if callee.startswith("param.") or callee == "param_for":
                        names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    return names


def _store_writes(modules: dict[str, Path], params: set[str], store: str = STORE) -> list[str]:
    """Each place outside the store, in the explorer's modules, that writes one of the
    store's ``params`` on some object: ``x.NAME = …`` (also augmented, annotated or
    unpacked), ``setattr(x, "NAME", …)`` or ``x.param.update(NAME=…)``.  ``self.NAME``
    is a view's own attribute of the same name, not the store's."""
    problems = []

    def foreign(node: ast.AST) -> bool:  # an object other than the module's own ``self``
        return not (isinstance(node, ast.Name) and node.id == "self")

    for path in modules.values():
        rel = _rel_to_package(path)
        if not rel.startswith("explorer/") or rel == store:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            hits = []
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    hits += [
                        a.attr
                        for a in ast.walk(t)
                        if isinstance(a, ast.Attribute) and isinstance(a.ctx, ast.Store)
                        if a.attr in params and foreign(a.value)
                    ]
            elif isinstance(node, ast.Call):
                func = ast.unparse(node.func)
                if func == "setattr" and len(node.args) >= 2 and foreign(node.args[0]):
                    name = node.args[1]
                    if isinstance(name, ast.Constant) and name.value in params:
                        hits.append(name.value)
                elif func.endswith(".param.update") and foreign(node.func.value.value):
                    hits += [k.arg for k in node.keywords if k.arg in params]
            problems += [f"{rel}:{node.lineno} writes the store's {name}" for name in hits]
    return problems


def test_only_the_store_writes_its_state():
    """Panel's data-store pattern: the store's params (``busy``, ``errors``, the settings,
    ``running``…) change only through the store's own methods (``propose``,
    ``begin_load`` / ``load`` / ``fail_load`` / ``end_load``, ``report_errors`` /
    ``clear_errors``, ``revert``, ``play``…); no other module of the explorer assigns them."""
    params = _store_params(PACKAGE / STORE)
    assert {"busy", "errors", "running", "dataset", "epsilon", "status"} <= params, params
    problems = _store_writes(MODULES, params)
    assert not problems, "\n".join(problems)


def test_the_store_write_check_sees_planted_writes(tmp_path):
    planted = tmp_path / "zz_writes.py"
    planted.write_text(
        "class View:\n"
        "    def f(self, s):\n"
        "        self.status = 'a view of its own'\n"
        "        s.busy = True\n"
        "        self.session.errors = {}\n"
        "        s.epsilon += 1\n"
        "        s.running, x = False, 1\n"
        "        setattr(s, 'dataset', 'xor')\n"
        "        s.param.update(mechanism='none', title='not the store')\n"
    )
    params = {"busy", "errors", "epsilon", "running", "dataset", "mechanism", "status"}
    text = "\n".join(_store_writes({f"{NAME}.explorer.zz_writes": planted}, params))
    for line, name in [(4, "busy"), (5, "errors"), (6, "epsilon"), (7, "running")]:
        assert f"explorer/zz_writes.py:{line} writes the store's {name}" in text, text
    assert ":8 writes the store's dataset" in text and ":9 writes the store's mechanism" in text
    assert "status" not in text and "title" not in text
