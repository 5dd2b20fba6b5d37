"""``ray.data.expressions``: column expressions for ``Dataset.filter(expr=...)``.

    from ray.data.expressions import col, lit

    ds.filter(expr=(col("x") > 10) & col("s").is_in(["a", "b"]))
    ds.filter(expr="x > 10 and s in ['a', 'b']")          # the same, as a string

An expression turns into a ``pyarrow.compute.Expression`` (``to_pyarrow()``), which
Arrow evaluates on a block, and which a Parquet read applies while reading (row
groups whose statistics rule the predicate out are skipped). The subset of Ray's
module offered here: ``col``, ``lit``, arithmetic (``+ - * / // %``), comparisons,
``& | ~``, ``is_null``/``is_not_null``, ``is_in``/``not_in``. A string is parsed as a
Python expression over column names with the same operators (``and``/``or``/``not``,
``in``/``not in``, ``is None``/``is not None``).
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass
from typing import Any

__all__ = ["Expr", "ColumnExpr", "LiteralExpr", "BinaryExpr", "UnaryExpr", "col", "lit", "parse"]


def _pc():
    from ray.data._formats import require_pyarrow

    require_pyarrow("ray.data expressions")
    import pyarrow.compute as pc

    return pc


class Expr:
    """A column expression; combine with operators, evaluate with ``to_pyarrow()``."""

    def to_pyarrow(self):
        raise NotImplementedError

    def _bin(self, other, op: str, swap: bool = False) -> BinaryExpr:
        other = other if isinstance(other, Expr) else LiteralExpr(other)
        return BinaryExpr(op, other, self) if swap else BinaryExpr(op, self, other)

    def __add__(self, other): return self._bin(other, "add")
    def __radd__(self, other): return self._bin(other, "add", True)
    def __sub__(self, other): return self._bin(other, "sub")
    def __rsub__(self, other): return self._bin(other, "sub", True)
    def __mul__(self, other): return self._bin(other, "mul")
    def __rmul__(self, other): return self._bin(other, "mul", True)
    def __truediv__(self, other): return self._bin(other, "div")
    def __rtruediv__(self, other): return self._bin(other, "div", True)
    def __floordiv__(self, other): return self._bin(other, "floordiv")
    def __rfloordiv__(self, other): return self._bin(other, "floordiv", True)
    def __mod__(self, other): return self._bin(other, "mod")
    def __gt__(self, other): return self._bin(other, "gt")
    def __ge__(self, other): return self._bin(other, "ge")
    def __lt__(self, other): return self._bin(other, "lt")
    def __le__(self, other): return self._bin(other, "le")
    def __eq__(self, other): return self._bin(other, "eq")  # type: ignore[override]
    def __ne__(self, other): return self._bin(other, "ne")  # type: ignore[override]
    def __and__(self, other): return self._bin(other, "and")
    def __rand__(self, other): return self._bin(other, "and", True)
    def __or__(self, other): return self._bin(other, "or")
    def __ror__(self, other): return self._bin(other, "or", True)
    def __invert__(self): return UnaryExpr("not", self)
    def __neg__(self): return UnaryExpr("neg", self)

    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError(
            "a ray.data expression has no truth value: combine conditions with & | ~ "
            "(not and/or/not), e.g. (col('a') > 1) & (col('b') < 2)"
        )

    def is_null(self) -> UnaryExpr:
        return UnaryExpr("is_null", self)

    def is_not_null(self) -> UnaryExpr:
        return UnaryExpr("is_valid", self)

    def is_in(self, values) -> BinaryExpr:
        return BinaryExpr("is_in", self, LiteralExpr(list(values)))

    def not_in(self, values) -> UnaryExpr:
        return UnaryExpr("not", self.is_in(values))


@dataclass(frozen=True, eq=False)
class ColumnExpr(Expr):
    name: str

    def to_pyarrow(self):
        return _pc().field(self.name)

    def __repr__(self) -> str:
        return f"col({self.name!r})"


@dataclass(frozen=True, eq=False)
class LiteralExpr(Expr):
    value: Any

    def to_pyarrow(self):
        return _pc().scalar(self.value)

    def __repr__(self) -> str:
        return f"lit({self.value!r})"


_BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "gt": operator.gt, "ge": operator.ge, "lt": operator.lt, "le": operator.le,
    "eq": operator.eq, "ne": operator.ne, "and": operator.and_, "or": operator.or_,
}
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%", "gt": ">",
            "ge": ">=", "lt": "<", "le": "<=", "eq": "==", "ne": "!=", "and": "&", "or": "|"}


@dataclass(frozen=True, eq=False)
class BinaryExpr(Expr):
    op: str
    left: Expr
    right: Expr

    def to_pyarrow(self):
        pc = _pc()
        left = self.left.to_pyarrow()
        if self.op == "is_in":
            return pc.is_in(left, value_set=_value_set(self.right.value))
        right = self.right.to_pyarrow()
        if self.op == "floordiv":
            return pc.floor(pc.divide(left, right))
        if self.op == "mod":
            return pc.subtract(left, pc.multiply(pc.floor(pc.divide(left, right)), right))
        return _BINARY[self.op](left, right)

    def __repr__(self) -> str:
        if self.op == "is_in":
            return f"{self.left!r}.is_in({self.right.value!r})"
        return f"({self.left!r} {_SYMBOLS[self.op]} {self.right!r})"


def _value_set(values):
    import pyarrow as pa

    return pa.array(values)


@dataclass(frozen=True, eq=False)
class UnaryExpr(Expr):
    op: str
    operand: Expr

    def to_pyarrow(self):
        pc = _pc()
        inner = self.operand.to_pyarrow()
        if self.op == "not":
            return ~inner
        if self.op == "neg":
            return pc.negate(inner)
        return getattr(pc, self.op)(inner)

    def __repr__(self) -> str:
        if self.op in ("is_null", "is_valid"):
            return f"{self.operand!r}.{'is_null' if self.op == 'is_null' else 'is_not_null'}()"
        return f"{'~' if self.op == 'not' else '-'}{self.operand!r}"


def col(name: str) -> ColumnExpr:
    """The column ``name``."""
    if not isinstance(name, str):
        raise TypeError(f"col() takes a column name (a str), got {type(name).__name__}")
    return ColumnExpr(name)


def lit(value) -> LiteralExpr:
    """A constant."""
    return LiteralExpr(value)


# -- strings ------------------------------------------------------------------------------

_AST_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
               ast.Mod: "mod"}
_AST_COMPARE = {ast.Gt: "gt", ast.GtE: "ge", ast.Lt: "lt", ast.LtE: "le", ast.Eq: "eq", ast.NotEq: "ne"}


def parse(text: str) -> Expr:
    """A string expression (``"x > 1 and s in ['a']"``) as an ``Expr``."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ValueError(f"cannot parse filter expression {text!r}: {e.msg}") from None
    return _from_ast(tree.body, text)


def _from_ast(node, text: str) -> Expr:
    if isinstance(node, ast.Name):
        return ColumnExpr(node.id)
    if isinstance(node, ast.Constant):
        return LiteralExpr(node.value)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return LiteralExpr([_literal(e, text) for e in node.elts])
    if isinstance(node, ast.BoolOp):
        parts = [_from_ast(v, text) for v in node.values]
        out = parts[0]
        for part in parts[1:]:
            out = BinaryExpr("and" if isinstance(node.op, ast.And) else "or", out, part)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        return UnaryExpr("not" if isinstance(node.op, ast.Not) else "neg", _from_ast(node.operand, text))
    if isinstance(node, ast.BinOp) and type(node.op) in _AST_BINARY:
        return BinaryExpr(_AST_BINARY[type(node.op)], _from_ast(node.left, text), _from_ast(node.right, text))
    if isinstance(node, ast.Compare):
        return _compare(node, text)
    raise ValueError(
        f"filter expression {text!r}: {ast.unparse(node)!r} is not supported; use column names, "
        "constants, + - * / // %, comparisons, and/or/not, in, is None"
    )


def _literal(node, text: str):
    if isinstance(node, ast.Constant):
        return node.value
    raise ValueError(f"filter expression {text!r}: lists may hold only constants, got {ast.unparse(node)!r}")


def _compare(node: ast.Compare, text: str) -> Expr:
    out = None
    left = _from_ast(node.left, text)
    for op, right_node in zip(node.ops, node.comparators):
        if isinstance(op, (ast.In, ast.NotIn)):
            values = _from_ast(right_node, text)
            if not isinstance(values, LiteralExpr) or not isinstance(values.value, list):
                raise ValueError(f"filter expression {text!r}: 'in' needs a list of constants")
            term = left.is_in(values.value) if isinstance(op, ast.In) else left.not_in(values.value)
        elif isinstance(op, (ast.Is, ast.IsNot)):
            if not (isinstance(right_node, ast.Constant) and right_node.value is None):
                raise ValueError(f"filter expression {text!r}: 'is' compares only with None")
            term = left.is_null() if isinstance(op, ast.Is) else left.is_not_null()
        elif type(op) in _AST_COMPARE:
            right = _from_ast(right_node, text)
            term = BinaryExpr(_AST_COMPARE[type(op)], left, right)
            left = right
        else:
            raise ValueError(f"filter expression {text!r}: comparison {type(op).__name__} is not supported")
        out = term if out is None else BinaryExpr("and", out, term)
    return out


def to_pyarrow_expression(expr):
    """``expr`` (an ``Expr``, a string, or a ``pyarrow.compute.Expression``) for Arrow."""
    pc = _pc()
    if isinstance(expr, pc.Expression):
        return expr
    if isinstance(expr, str):
        expr = parse(expr)
    if not isinstance(expr, Expr):
        raise TypeError(
            f"expr must be a ray.data.expressions expression (col('x') > 1), a string ('x > 1') or "
            f"a pyarrow.compute.Expression, got {type(expr).__name__}"
        )
    return expr.to_pyarrow()
