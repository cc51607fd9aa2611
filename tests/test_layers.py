"""The layers import one way (the import contracts in pyproject.toml, checked by import-linter),
and an import that is not at the top of its module says why, in a comment on its line or the
line above (a measured import cost, an optional dependency)."""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "streamrt")


def test_the_import_contracts_hold(capsys):
    cli = pytest.importorskip("importlinter.cli")
    code = cli.lint_imports(config_filename=os.path.join(ROOT, "pyproject.toml"),
                            no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert code == 0, out


def _deferred_imports():
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                src = f.read()
            lines = src.split("\n")
            tree = ast.parse(src)
            for fn in ast.walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        yield (os.path.relpath(path, ROOT), node.lineno,
                               lines[node.lineno - 1], lines[node.lineno - 2])


def test_a_deferred_import_says_why():
    silent = [f"{path}:{n}: {line.strip()}" for path, n, line, above in _deferred_imports()
              if "#" not in line and not above.strip().startswith("#")]
    assert not silent, "imports inside functions without a reason:\n" + "\n".join(silent)
