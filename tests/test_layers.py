"""The layer contract of tutorial_lib, read from the source with ``ast`` (no import-linter needed).

Folders are layers and imports point one way only::

    core <- tasks <- methods, zoo <- viz <- studies <- course

(``methods`` and ``zoo`` are siblings: neither imports the other.) Every import counts, at module level
and inside functions. The checker fails on

(a) an import that points up the order, or sideways between ``methods`` and ``zoo`` -- except that a
    ``plot*`` function or method of ``methods`` may import ``tutorial_lib.viz`` inside its body (a
    result's ``.plot()`` is a one-line delegate to ``viz``);
(b) an import cycle among tutorial_lib's modules;
(c) a ``_private`` name imported from a module of another layer;
(d) a module over :data:`MAX_LINES` lines;
(e) more than :data:`MAX_LOOSE` loose modules at the top of the package, or a folder that is no layer.

``test_checker_reports_forbidden_imports`` writes a small fake package that breaks each rule and checks
that the checker reports every break.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "tutorial_lib"
ORDER = {"core": 0, "tasks": 1, "methods": 2, "zoo": 2, "viz": 3, "studies": 4, "course": 5}
TOP = 6  # the package's own __init__ (and any loose top-level module) may import every layer
MAX_LINES = 500
MAX_LOOSE = 3  # loose top-level modules besides __init__.py / __main__.py
ORDER_TEXT = "core <- tasks <- methods, zoo <- viz <- studies <- course"


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted
    target: str  # the imported module, dotted
    names: tuple  # names taken from it ("from target import a, b"); () for "import target"
    line: int
    function: str | None  # the enclosing function's name, None at module level


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def scan(package_dir: Path) -> tuple[dict, list]:
    """``({module: line count}, [Import, ...])`` for every module of the package in ``package_dir``."""
    pkg = package_dir.name
    files = {module_name(p, package_dir): p for p in sorted(package_dir.rglob("*.py"))}
    lines, imports = {}, []

    def resolve(mod: str, name: str | None) -> str:
        sub = f"{mod}.{name}" if name else None
        return sub if sub in files else mod

    for mod, path in files.items():
        text = path.read_text()
        lines[mod] = len(text.splitlines())
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]

        def visit(node, function):
            for child in ast.iter_child_nodes(node):
                fn = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
                if isinstance(child, ast.ImportFrom):
                    if child.level:
                        base = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                        target = ".".join(base + ([child.module] if child.module else []))
                    else:
                        target = child.module or ""
                    if target == pkg or target.startswith(pkg + "."):
                        by_target: dict = {}
                        for alias in child.names:  # "from pkg.x import y" where y is a module: an edge to pkg.x.y
                            by_target.setdefault(resolve(target, alias.name), []).append(alias.name)
                        for t, names in by_target.items():
                            imports.append(Import(mod, t, tuple(names), child.lineno, function))
                elif isinstance(child, ast.Import):
                    for alias in child.names:
                        if alias.name == pkg or alias.name.startswith(pkg + "."):
                            imports.append(Import(mod, alias.name, (), child.lineno, function))
                visit(child, fn)

        visit(ast.parse(text), None)
    return lines, imports


def layer(module: str) -> str:
    """The layer of a dotted module name: its first folder under the package, or ``"top"``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in ORDER) else "top"


def rank(module: str) -> int:
    return ORDER.get(layer(module), TOP)


def cycles(modules, imports) -> list[list[str]]:
    """Strongly connected components with more than one module (or a module importing itself)."""
    graph = {m: set() for m in modules}
    for imp in imports:
        if imp.target in graph:
            graph[imp.source].add(imp.target)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):  # Tarjan, iterative enough for a package this size
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph[v]:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def check(package_dir: Path) -> list[str]:
    """Every break of the layer contract in the package at ``package_dir``, one line each."""
    pkg = package_dir.name
    lines, imports = scan(package_dir)
    problems = []
    for imp in imports:
        src, dst = layer(imp.source), layer(imp.target)
        where = f"{imp.source}:{imp.line}"
        if src != dst and dst != "top":
            plot_delegate = (src == "methods" and dst == "viz" and imp.function is not None
                             and imp.function.startswith("plot"))
            if (rank(imp.target) >= rank(imp.source)) and not plot_delegate:
                problems.append(f"(a) {where} imports {imp.target} ({dst}) from layer {src}: imports point "
                                f"down the order {ORDER_TEXT} only")
        elif dst == "top" and imp.target != imp.source and src != "top":
            problems.append(f"(a) {where} imports the package top {imp.target}: only the top re-exports")
        private = [n for n in imp.names if n.startswith("_")]
        if private and src != dst:
            problems.append(f"(c) {where} imports private {private} from {imp.target} (layer {dst})")
    for comp in cycles(lines, imports):
        problems.append(f"(b) import cycle: {' -> '.join(comp)}")
    for mod, n in lines.items():
        if n > MAX_LINES:
            problems.append(f"(d) {mod} has {n} lines (at most {MAX_LINES})")
    loose = [p.stem for p in package_dir.glob("*.py") if p.stem not in ("__init__", "__main__")]
    if len(loose) > MAX_LOOSE:
        problems.append(f"(e) {len(loose)} loose top-level modules {sorted(loose)} (at most {MAX_LOOSE})")
    for folder in sorted(p for p in package_dir.iterdir() if p.is_dir() and p.name != "__pycache__"):
        if folder.name not in ORDER and folder.name != "data":
            problems.append(f"(e) {pkg}/{folder.name}/ is not a layer; layers: {list(ORDER)}")
        elif folder.name in ORDER and not (folder / "__init__.py").exists():
            problems.append(f"(e) {pkg}/{folder.name}/ has no __init__.py")
    return problems


# ----------------------------------------------------------------------------------- the tests
def test_tutorial_lib_obeys_the_layer_contract():
    problems = check(PACKAGE_DIR)
    assert not problems, "layer contract broken:\n" + "\n".join(problems)


def test_checker_sees_every_module_and_function_level_imports():
    lines, imports = scan(PACKAGE_DIR)
    assert {layer(m) for m in lines} == set(ORDER) | {"top"}
    local = [i for i in imports if i.function is not None]
    assert local, "function-level imports must be read too"
    edges = {(i.source, i.target) for i in imports}
    assert ("tutorial_lib.methods.patching", "tutorial_lib.core.forward") in edges
    assert ("tutorial_lib", "tutorial_lib.course.checks") in edges  # "from .course import checks" is a module


def _write(root: Path, files: dict) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_checker_reports_forbidden_imports(tmp_path):
    pkg = _write(tmp_path / "fakelib", {
        "__init__.py": "from .course import checks\n",
        "core/__init__.py": "",
        "core/a.py": "def _helper():\n    pass\n\ndef use():\n    from . import b\n",
        "core/b.py": "from .a import use\n",  # core.a <-> core.b: a cycle through a function-level import
        "tasks/__init__.py": "",
        "tasks/t.py": "from ..zoo.z import thing\nfrom ..core.a import _helper\n",  # up the order; private
        "methods/__init__.py": "",
        "methods/m.py": ("from ..core import a\n\nclass R:\n    def plot(self):\n        from ..viz.f import fig\n\n"
                         "def draw():\n    from ..viz.f import fig\n\ndef train():\n    from ..zoo.z import thing\n"),
        "zoo/__init__.py": "",
        "zoo/z.py": "thing = 1\n" + "x = 1\n" * 600,  # too long
        "viz/__init__.py": "",
        "methods/n.py": "x = 1\n",
        "viz/f.py": "from ..methods.n import x\nfig = 1\n",
        "studies/__init__.py": "",
        "course/__init__.py": "",
        "course/checks.py": "from ..studies import x\n",
        "extras/__init__.py": "",  # a folder that is no layer
        "one.py": "", "two.py": "", "three.py": "", "four.py": "",  # too many loose modules
    })
    problems = check(pkg)
    text = "\n".join(problems)
    assert "(a) fakelib.tasks.t:1 imports fakelib.zoo.z (zoo) from layer tasks" in text
    assert "(c) fakelib.tasks.t:2 imports private ['_helper']" in text
    assert "(a) fakelib.methods.m:8 imports fakelib.viz.f (viz) from layer methods" in text  # draw(), not plot()
    assert not any("fakelib.methods.m:5" in p for p in problems)  # plot()'s delegate to viz is allowed
    assert "(a) fakelib.methods.m:11 imports fakelib.zoo.z (zoo) from layer methods" in text  # siblings
    assert "(b) import cycle: fakelib.core.a -> fakelib.core.b" in text
    assert "(d) fakelib.zoo.z has 601 lines" in text
    assert "(e) 4 loose top-level modules" in text
    assert "(e) fakelib/extras/ is not a layer" in text
    assert not any(p.startswith("(a) fakelib.viz.f:") for p in problems)  # viz -> methods points down
    assert not any(p.startswith("(a) fakelib.course.checks:") for p in problems)  # course -> studies points down
    assert len(problems) == 8, text


def test_checker_passes_a_clean_fake_package(tmp_path):
    pkg = _write(tmp_path / "cleanlib", {
        "__init__.py": "from .core.a import f\n",
        "core/__init__.py": "", "core/a.py": "def f():\n    return 1\n",
        "tasks/__init__.py": "", "tasks/t.py": "from ..core.a import f\n",
        "zoo/__init__.py": "", "zoo/z.py": "from ..tasks.t import f\n",
    })
    assert check(pkg) == []
