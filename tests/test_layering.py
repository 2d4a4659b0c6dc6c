"""The package's import graph, read from the source (imports inside
functions included): no cycle, no upward import, no private name taken
across modules.

Layers, from the bottom: the core (`keras_gauss`: ops, layers, losses,
constraints, optimizers, models, kernels, the run format, export, the job
sequence), the applications (`keras_gauss.hierarchy`, then
`keras_gauss.pipelines`), the command line (`keras_gauss.cli`,
`keras_gauss.__main__`). The run format (`keras_gauss.runs`) is a leaf of
the core: export, evaluation and the CLI use it, never the reverse.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# source folder -> package name (pyproject.toml's package-dir)
SOURCES = {"keras_gauss": "keras_gauss", "hierarchy": "keras_gauss.hierarchy",
           "pipelines": "keras_gauss.pipelines"}
APPLICATIONS = ("keras_gauss.hierarchy", "keras_gauss.pipelines")
COMMAND_LINE = ("keras_gauss.cli", "keras_gauss.__main__")
RUN_FORMAT = "keras_gauss.run_format"
# what the run format may use: the core's checks, files, the energies'
# descriptors (themselves a leaf: NumPy only) and the package root
RUN_FORMAT_USES = {"keras_gauss", "keras_gauss.checks", "keras_gauss.inputs", "keras_gauss.io",
                   "keras_gauss.energies"}


def _modules():
    modules = {}
    for folder, package in SOURCES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((package, *parts))] = path
    return modules


MODULES = _modules()


def _owner(name):
    """The module of `MODULES` that `name` (a module or a name in one) is."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module):
    """`[(imported module, name or None, line)]` of every import in `module`."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(_owner(alias.name), None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                if whole in MODULES:
                    found.append((whole, None, node.lineno))
                else:
                    found.append((_owner(base), alias.name, node.lineno))
    return [(target, name, line) for target, name, line in found
            if target is not None and target != module]


GRAPH = {module: imports(module) for module in MODULES}


def _layer(module):
    if module in COMMAND_LINE:
        return 3
    if module.startswith("keras_gauss.pipelines"):
        return 2
    if module.startswith("keras_gauss.hierarchy"):
        return 1
    return 0


def test_the_graph_is_read():
    assert len(MODULES) > 50
    assert ("keras_gauss.layers.gaussian_embedding" in
            {target for target, _, _ in GRAPH["keras_gauss.layers"]})


def test_no_import_goes_up_a_layer():
    upward = [f"{MODULES[m].relative_to(ROOT)}:{line} imports {target}"
              for m, found in GRAPH.items() for target, _, line in found
              if _layer(target) > _layer(m)]
    assert not upward, "\n".join(upward)


def test_the_run_format_is_a_leaf():
    used = {target for target, _, _ in GRAPH[RUN_FORMAT]}
    assert used <= RUN_FORMAT_USES, sorted(used - RUN_FORMAT_USES)


def test_no_private_name_is_taken_across_modules():
    private = [f"{MODULES[m].relative_to(ROOT)}:{line} takes {target}.{name}"
               for m, found in GRAPH.items() for target, name, line in found
               if name and name.startswith("_") and not name.startswith("__")]
    assert not private, "\n".join(private)


def _cycles():
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target, _, _ in GRAPH[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in MODULES:
        if module not in index:
            visit(module)
    return cycles


def test_no_import_cycle():
    assert not _cycles(), _cycles()


@pytest.mark.parametrize("broken, check", [
    ({"keras_gauss.layers": [("keras_gauss.hierarchy.model", None, 1)]}, "up"),
    ({"keras_gauss.ops": [("keras_gauss.layers", None, 1)]}, "cycle"),
    ({"keras_gauss.ops": [("keras_gauss.io", "_secret", 1)]}, "private"),
])
def test_each_check_fails_on_a_broken_graph(broken, check, monkeypatch):
    for module, extra in broken.items():
        monkeypatch.setitem(GRAPH, module, GRAPH[module] + extra)
    test = {"up": test_no_import_goes_up_a_layer, "cycle": test_no_import_cycle,
            "private": test_no_private_name_is_taken_across_modules}[check]
    with pytest.raises(AssertionError):
        test()


def test_the_energies_are_a_leaf():
    """`keras_gauss.energies` (NumPy only; the Keras formula and layer are
    named, imported on use) imports nothing else of the package, so the run
    format, the C++ bindings and the command lines can ask it."""
    used = {target for module, found in GRAPH.items()
            if module.startswith("keras_gauss.energies") for target, _, _ in found}
    assert {u for u in used if not u.startswith("keras_gauss.energies")} == set()
