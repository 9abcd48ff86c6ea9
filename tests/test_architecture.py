"""The layout's rules, checked on the source (docs/architecture.md): layers only point down, no
import inside a function crosses apps, one way for each cross-cutting concern, modules stay small.

No database: SECRET_KEY=x python -m pytest tests/test_architecture.py -p no:cacheprovider"""
from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# bottom to top: an app may import only itself and the apps before it
LAYERS = ("common", "accounts", "audit", "annotation", "validity", "workers", "labelstudio", "adjudication",
          "releases", "finetune", "reports", "dashboard", "medr2")
RANK = {app: i for i, app in enumerate(LAYERS)}
MAX_LINES = 500


def _modules(*tops: str) -> list[Path]:
    return sorted(p for top in tops for p in (ROOT / top).rglob("*.py")
                  if "migrations" not in p.parts and "__pycache__" not in p.parts)


APP_MODULES = _modules(*LAYERS)


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _app(path: Path) -> str:
    return path.relative_to(ROOT).parts[0]


def _imports(path: Path):
    """(imported top-level package, line, inside a function?) for every absolute import."""
    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name.split(".")[0], child.lineno, in_function
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                yield child.module.split(".")[0], child.lineno, in_function
            yield from walk(child, inner)
    yield from walk(_tree(path), False)


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def test_layers_only_point_down():
    upward = [f"{_where(p, line)} imports {target} (above {_app(p)})"
              for p in APP_MODULES for target, line, _ in _imports(p)
              if target in RANK and RANK[target] > RANK[_app(p)]]
    assert not upward, "an app imports a layer above it:\n" + "\n".join(upward)


def test_no_import_inside_a_function_crosses_apps():
    hidden = [f"{_where(p, line)} imports {target} inside a function"
              for p in APP_MODULES for target, line, inside in _imports(p)
              if inside and target in RANK and target != _app(p)]
    assert not hidden, "\n".join(hidden)


def test_the_layer_rule_itself_catches_an_upward_import(tmp_path):
    """The check is not vacuous: a workers module importing adjudication is reported."""
    bad = ROOT / "workers" / "_tmp_upward_probe.py"
    bad.write_text("def f():\n    from adjudication.models import AdjudicationCase\n    return AdjudicationCase\n")
    try:
        found = [(t, inside) for t, _, inside in _imports(bad)]
    finally:
        bad.unlink()
    assert found == [("adjudication", True)] and RANK["adjudication"] > RANK["workers"]


@pytest.mark.parametrize("top", ["common", "accounts", "audit", "annotation", "validity", "workers",
                                 "labelstudio", "adjudication", "releases", "finetune", "reports", "dashboard", "medr2",
                                 "tests", "bench", "scripts"])
def test_no_module_is_over_500_lines(top):
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in _modules(top)
            if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not long, "split these into a package or sibling modules:\n" + "\n".join(long)


def _calls(path: Path, attr: str):
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr:
            yield node.lineno


def test_tasks_are_sent_only_through_common_dispatch():
    allowed = {ROOT / "common" / "dispatch.py"}
    sends = [_where(p, line) + f" .{attr}()" for p in APP_MODULES if p not in allowed
             for attr in ("delay", "apply_async") for line in _calls(p, attr)]
    assert not sends, "send tasks with common.dispatch (send_after_commit / send / call_after_commit):\n" + \
        "\n".join(sends)


def _names(path: Path):
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Name):
            yield node.id, node.lineno
        elif isinstance(node, ast.Attribute):
            yield node.attr, node.lineno


def test_pagination_lives_in_one_module():
    allowed = {ROOT / "common" / "pagination.py"}
    hand_made = [_where(p, line) for p in APP_MODULES if p not in allowed
                 for name, line in _names(p) if name in ("Paginator", "StandardPagination", "PageNumberPagination")]
    assert not hand_made, "use common.pagination (page_of / paginated_response):\n" + "\n".join(hand_made)


VIEW_MODULES = [p for p in APP_MODULES if p.name in ("views.py", "apis.py", "forms.py") or
                (p.parent.name == "commands" and p.name != "__init__.py")]


def test_views_apis_forms_and_commands_read_through_selectors():
    direct = [_where(p, line) for p in VIEW_MODULES for name, line in _names(p) if name == "objects"]
    assert not direct, "read through the app's selectors:\n" + "\n".join(direct)


def test_apis_leave_errors_to_the_one_exception_handler():
    caught = []
    for p in (p for p in APP_MODULES if p.name == "apis.py"):
        for node in ast.walk(_tree(p)):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                names = {n.id if isinstance(n, ast.Name) else getattr(n, "attr", "") for n in ast.walk(node.type)}
                if names & {"ValidationError", "DjangoValidationError", "CaseConflict", "ServiceError"}:
                    caught.append(_where(p, node.lineno))
    assert not caught, "let common.errors.exception_handler answer:\n" + "\n".join(caught)


@pytest.mark.parametrize("app", ["accounts", "audit", "annotation", "validity", "workers", "labelstudio",
                                 "adjudication", "releases", "finetune", "reports", "dashboard"])
def test_every_app_has_namespaced_urls_and_its_own_templates(app):
    urls = ROOT / app / "urls.py"
    assert urls.exists()
    assigned = {t.id for n in _tree(urls).body if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Name)}
    assert "app_name" in assigned
    assert (ROOT / "templates" / app).is_dir()


def test_the_production_image_copies_every_app():
    """The Dockerfile copies an explicit list: a new app must be on it (validity once was not)."""
    copied = {line.split()[1] for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("COPY ")}
    missing = [app for app in LAYERS if app not in copied]
    assert not missing, f"add to the Dockerfile: {missing}"
