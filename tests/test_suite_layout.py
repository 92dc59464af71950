"""The suite's own layout: what test modules share lives in the kit (tests/kit/, and the
end-to-end harness modules in tests/e2e/), never in another test module or a conftest."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent


def borrowed(path: Path) -> list[str]:
    """The test modules and conftests ``path`` imports from."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            last = name.split(".")[-1]
            if (name.startswith("tests.") or name == last) and (
                last.startswith("test_") or last == "conftest"
            ):
                found.append(name)
    return found


def test_no_test_module_imports_another_or_a_conftest() -> None:
    offenders = {
        str(path.relative_to(TESTS)): names
        for path in sorted(TESTS.rglob("*.py"))
        if (names := borrowed(path))
    }
    assert offenders == {}, "move what they share into tests/kit/"
