"""Where semloop's tuning lives, counted with `ast` over the package's modules (semloop/*.py, not
the integrations): `Config` fields, `Thresholds` fields, module-level numeric constants (a name
bound to a number literal or arithmetic of literals), compiled regexes (module-level
`re.compile` calls, a list of them counted one by one) and word lists (module-level
`frozenset(...)` of strings).

    python benchmarks/count_knobs.py [SEMLOOP_DIR]      # default: semloop/ of this checkout
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def _numeric(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    return False


def _calls(node: ast.AST, name: str) -> int:
    return sum(1 for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute | ast.Name)
               and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) == name)


def count(package: Path) -> dict[str, object]:
    fields: dict[str, int] = {}
    numeric: list[str] = []
    regexes = words = 0
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name in ("Config", "Thresholds") and path.name == "config.py":
                fields[node.name] = sum(1 for n in node.body if isinstance(n, ast.AnnAssign))
            if isinstance(node, ast.Assign):
                value, targets = node.value, node.targets
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                value, targets = node.value, [node.target]
            else:
                continue
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if _numeric(value):
                numeric += [f"{path.stem}.{n}" for n in names]
            regexes += _calls(value, "compile")
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "frozenset":
                strings = [n for n in ast.walk(value) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
                words += bool(strings)
    return {"config_fields": fields.get("Config", 0), "threshold_fields": fields.get("Thresholds", 0),
            "numeric_constants": len(numeric), "compiled_regexes": regexes, "word_lists": words,
            "numeric_constant_names": numeric}


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "semloop"
    result = count(root)
    for key, value in result.items():
        print(f"{key}: {value}")
