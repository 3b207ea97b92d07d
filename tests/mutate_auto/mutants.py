"""Mutation sites: one change of one token (or one expression) in one source file.

Both generators return sites in the order they appear in the file, so a file's sites are
numbered the same way on every run of the same tree. A site is kept as byte offsets into
the file (Python's `ast` gives byte columns), so applying it is a slice and nothing else
of the file moves.

Kinds of change (the names the reports use):
  operator    + <-> -, * <-> /, // -> /, % -> //, ** -> *, += <-> -=, *= <-> /=
  comparison  == <-> !=, < -> >=, > -> <=, in <-> not in, is <-> is not
  boundary    < <-> <=, > <-> >=, ceil <-> floor, min <-> max, any <-> all
  logic       and <-> or, not dropped
  constant    an integer +1 and -1 (0 -> 1), a float x2 (0.0 -> 1.0), True <-> False
  return      a returned value replaced by None, a returned condition negated,
              (C++) return true <-> return false
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import List, Optional


@dataclass(frozen=True)
class Mutant:
    path: str            # relative to the repository root, '/'-separated
    start: int           # byte offsets of the replaced text in the file
    end: int
    original: str
    replacement: str
    kind: str            # operator, comparison, boundary, logic, constant, return
    line: int

    def apply(self, data: bytes) -> bytes:
        """The file's bytes with this one change made; refuses a file that moved under it."""
        found = data[self.start:self.end].decode("utf-8")
        if found != self.original:
            raise ValueError(f"{self.path}:{self.line}: expected {self.original!r} at byte {self.start}, "
                             f"found {found!r} (the file changed since the sites were listed)")
        return data[:self.start] + self.replacement.encode("utf-8") + data[self.end:]

    def describe(self) -> str:
        return f"{self.kind}: {self.original!r} -> {self.replacement!r}"

    @property
    def language(self) -> str:
        return "python" if self.path.endswith(".py") else "cpp"


# ---------------------------------------------------------------- Python

BINARY = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "/"), ast.Div: ("/", "*"),
          ast.FloorDiv: ("//", "/"), ast.Mod: ("%", "//"), ast.Pow: ("**", "*")}
AUGMENTED = {ast.Add: ("+=", "-="), ast.Sub: ("-=", "+="), ast.Mult: ("*=", "/="), ast.Div: ("/=", "*=")}
# (symbol, [(replacement, kind), ...])
COMPARE = {ast.Lt: ("<", [("<=", "boundary"), (">=", "comparison")]),
           ast.LtE: ("<=", [("<", "boundary"), (">", "comparison")]),
           ast.Gt: (">", [(">=", "boundary"), ("<=", "comparison")]),
           ast.GtE: (">=", [(">", "boundary"), ("<", "comparison")]),
           ast.Eq: ("==", [("!=", "comparison")]),
           ast.NotEq: ("!=", [("==", "comparison")]),
           ast.In: ("in", [("not in", "comparison")]),
           ast.NotIn: ("not in", [("in", "comparison")]),
           ast.Is: ("is", [("is not", "comparison")]),
           ast.IsNot: ("is not", [("is", "comparison")])}
SWAPPED_CALLS = {"min": "max", "max": "min", "ceil": "floor", "floor": "ceil", "any": "all", "all": "any",
                 "nanmin": "nanmax", "nanmax": "nanmin", "argmin": "argmax", "argmax": "argmin",
                 "minimum": "maximum", "maximum": "minimum"}


class _Lines:
    """Byte offsets of (line, byte column) positions as `ast` reports them."""

    def __init__(self, data: bytes):
        self.starts = [0]
        for i, b in enumerate(data):
            if b == 0x0A:
                self.starts.append(i + 1)

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col


def _blank_comments(region: bytes) -> bytes:
    """The text between two operands with its comments blanked, so a '#' comment's
    words are never taken for the operator."""
    return re.sub(rb"#[^\n]*", lambda m: b" " * len(m.group(0)), region)


def _find_symbol(region: bytes, symbol: str) -> Optional[int]:
    """Where the operator `symbol` stands in the text between two operands (only brackets,
    spaces, line continuations and comments besides it), or None."""
    text = _blank_comments(region)
    sym = symbol.encode()
    if symbol[0].isalpha():
        pattern = rb"(?<![A-Za-z0-9_])" + re.escape(sym).replace(rb"\ ", rb"\s+") + rb"(?![A-Za-z0-9_])"
    else:
        pattern = rb"(?<![*/=<>!%+-])" + re.escape(sym) + rb"(?![*/=<>])"
    found = [m for m in re.finditer(pattern, text)]
    if len(found) != 1:
        return None
    return found[0].start()


def _is_text(node) -> bool:
    """A string operand: its '+' is concatenation and its '%' formatting, not arithmetic."""
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)))


class _PythonSites(ast.NodeVisitor):
    def __init__(self, path: str, data: bytes):
        self.path, self.data, self.lines = path, data, _Lines(data)
        self.sites: List[Mutant] = []

    # positions
    def begin(self, node) -> int:
        return self.lines.offset(node.lineno, node.col_offset)

    def finish(self, node) -> int:
        return self.lines.offset(node.end_lineno, node.end_col_offset)

    def add(self, start: int, end: int, replacement: str, kind: str):
        original = self.data[start:end].decode("utf-8")
        if original == replacement:
            return
        line = self.data.count(b"\n", 0, start) + 1
        self.sites.append(Mutant(self.path, start, end, original, replacement, kind, line))

    def between(self, left, right, symbol: str, replacement: str, kind: str):
        lo, hi = self.finish(left), self.begin(right)
        if hi <= lo:
            return
        at = _find_symbol(self.data[lo:hi], symbol)
        if at is None:
            return
        text = self.data[lo + at:hi].decode("utf-8")
        length = len(re.match(re.escape(symbol).replace(r"\ ", r"\s+"), text).group(0).encode())
        self.add(lo + at, lo + at + length, replacement, kind)

    # what is never mutated: annotations, f-strings (3.11 gives their parts no reliable
    # positions), docstrings and other strings, asserts, the `if __name__` block
    def visit_JoinedStr(self, node):
        return

    def visit_Assert(self, node):
        return

    def visit_arg(self, node):
        return

    def visit_AnnAssign(self, node):
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_FunctionDef(self, node):
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)
        for decorator in node.decorator_list:
            self.visit(decorator)
        for statement in node.body:
            self.visit(statement)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node):
        test = node.test
        if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"):
            return
        self.generic_visit(node)

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return          # a docstring
        self.generic_visit(node)

    # the changes
    def visit_BinOp(self, node):
        pair = BINARY.get(type(node.op))
        if pair and not (_is_text(node.left) or _is_text(node.right)):
            self.between(node.left, node.right, pair[0], pair[1], "operator")
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        pair = AUGMENTED.get(type(node.op))
        if pair and not _is_text(node.value):
            self.between(node.target, node.value, pair[0], pair[1], "operator")
        self.generic_visit(node)

    def visit_Compare(self, node):
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            symbol, changes = COMPARE[type(op)]
            for replacement, kind in changes:
                self.between(left, right, symbol, replacement, kind)
            left = right
        self.generic_visit(node)

    def visit_BoolOp(self, node):
        symbol, replacement = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        for left, right in zip(node.values, node.values[1:]):
            self.between(left, right, symbol, replacement, "logic")
        self.generic_visit(node)

    def visit_UnaryOp(self, node):
        if isinstance(node.op, ast.Not):
            start, operand = self.begin(node), self.begin(node.operand)
            match = re.match(rb"not\s*", self.data[start:operand])
            if match:
                # 'not x' -> 'x' (an operand with a lower precedence than 'not' has brackets already)
                self.add(start, start + match.end(), "", "logic")
        self.generic_visit(node)

    def visit_Constant(self, node):
        value = node.value
        start, end = self.begin(node), self.finish(node)
        if isinstance(value, bool):
            self.add(start, end, str(not value), "constant")
        elif isinstance(value, int):
            if value == 0:
                self.add(start, end, "1", "constant")
            else:
                self.add(start, end, str(value + 1), "constant")
                self.add(start, end, str(value - 1), "constant")
        elif isinstance(value, float):
            self.add(start, end, "1.0" if value == 0 else repr(value * 2), "constant")

    def visit_Call(self, node):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in SWAPPED_CALLS:
            end = self.finish(func)
            self.add(end - len(name.encode()), end, SWAPPED_CALLS[name], "boundary")
        self.generic_visit(node)

    def visit_Return(self, node):
        value = node.value
        if value is not None and not (isinstance(value, ast.Constant) and
                                      (value.value is None or isinstance(value.value, bool))):
            start, end = self.begin(value), self.finish(value)
            if isinstance(value, (ast.Compare, ast.BoolOp)) or (isinstance(value, ast.UnaryOp) and
                                                                isinstance(value.op, ast.Not)):
                self.add(start, end, "not (" + self.data[start:end].decode("utf-8") + ")", "return")
            else:
                self.add(start, end, "None", "return")
        self.generic_visit(node)


def python_sites(path: str, data: bytes) -> List[Mutant]:
    """Every mutation site of one Python source, in file order."""
    tree = ast.parse(data, filename=path)
    visitor = _PythonSites(path, data)
    visitor.visit(tree)
    return sorted(visitor.sites, key=lambda m: (m.start, m.end, m.replacement))


def python_equivalent_by_construction(original: bytes, mutated: bytes) -> Optional[str]:
    """Why a Python mutant is no mutant at all (it does not parse, or parses to the same
    tree), else None."""
    try:
        after = ast.dump(ast.parse(mutated))
    except SyntaxError as e:
        return f"does not parse: {e.msg} at line {e.lineno}"
    if after == ast.dump(ast.parse(original)):
        return "the same syntax tree as the original"
    return None


def python_tree(mutated: bytes) -> str:
    return ast.dump(ast.parse(mutated))


# ---------------------------------------------------------------- C++

CPP_TOKEN = re.compile(rb"""
    (?P<space>[ \t]+)
  | (?P<newline>\r?\n)
  | (?P<linecomment>//[^\n]*)
  | (?P<blockcomment>/\*.*?\*/)
  | (?P<rawstring>R"(?P<delim>[^(\s]*)\(.*?\)(?P=delim)")
  | (?P<string>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*")
  | (?P<char>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*')
  | (?P<hexnumber>0[xXbB][0-9a-fA-F']+[A-Za-z]*)
  | (?P<number>(?:\d[\d']*\.?[\d']*(?:[eE][+-]?\d+)?|\.\d[\d']*(?:[eE][+-]?\d+)?)[A-Za-z]*)
  | (?P<word>[A-Za-z_]\w*)
  | (?P<op><<=|>>=|->\*|\.\.\.|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||\+=|-=|\*=|/=|%=|&=|\|=|\^=|[^\s])
""", re.VERBOSE | re.DOTALL)

# binary operators written with a space on each side (clang-format's layout for every
# binary operator, and never for template brackets, pointers or references)
CPP_SPACED = {b"<": [("<=", "boundary"), (">=", "comparison")], b"<=": [("<", "boundary"), (">", "comparison")],
              b">": [(">=", "boundary"), ("<=", "comparison")], b">=": [(">", "boundary"), ("<", "comparison")],
              b"==": [("!=", "comparison")], b"!=": [("==", "comparison")],
              b"+": [("-", "operator")], b"-": [("+", "operator")], b"*": [("/", "operator")],
              b"/": [("*", "operator")], b"&&": [("||", "logic")], b"||": [("&&", "logic")],
              b"+=": [("-=", "operator")], b"-=": [("+=", "operator")]}
CPP_SWAPPED = {b"min": "max", b"max": "min", b"ceil": "floor", b"floor": "ceil", b"min_element": "max_element",
               b"max_element": "min_element", b"any_of": "all_of", b"all_of": "any_of",
               b"lower_bound": "upper_bound", b"upper_bound": "lower_bound"}
# words after which a spaced '-', '*' or '&&' is unary or part of a type, not a binary operator
CPP_KEYWORDS_BEFORE_AN_OPERAND = {b"return", b"case", b"throw", b"else", b"do", b"co_return", b"co_yield", b"sizeof",
                                  b"operator", b"template", b"typename", b"new", b"delete", b"const", b"auto",
                                  b"constexpr", b"static", b"volatile"}
# lines never mutated: the preprocessor, compile-time checks, and the tables that only name things
CPP_SKIPPED_LINE = re.compile(rb"^\s*(#|static_assert\b|template\b)")


def _cpp_tokens(data: bytes):
    """(kind, text, offset) of every token outside comments and preprocessor lines (string
    literals are tokens, so that a '+' joining strings is known for one, but never mutated)."""
    pos, tokens, line_start = 0, [], True
    skipping_line = False
    while pos < len(data):
        if line_start:
            end_of_line = data.find(b"\n", pos)
            end_of_line = len(data) if end_of_line < 0 else end_of_line
            skipping_line = bool(CPP_SKIPPED_LINE.match(data[pos:end_of_line]))
            if skipping_line and data[pos:end_of_line].lstrip().startswith(b"#"):
                # a directive, with its continuation lines
                while end_of_line < len(data) and data[end_of_line - 1:end_of_line] == b"\\":
                    nxt = data.find(b"\n", end_of_line + 1)
                    end_of_line = len(data) if nxt < 0 else nxt
                pos, line_start = end_of_line, False
                continue
        match = CPP_TOKEN.match(data, pos)
        if not match:           # a stray byte: step over it
            pos += 1
            continue
        kind = match.lastgroup
        if not skipping_line and kind in ("number", "hexnumber", "word", "op", "string", "rawstring", "char"):
            tokens.append((kind, match.group(0), match.start()))
        line_start = kind == "newline"
        if kind in ("blockcomment", "rawstring", "string") and b"\n" in match.group(0):
            line_start = False
        pos = match.end()
    return tokens


def _bigger_number(text: bytes):
    """The +1/-1 and x2 variants of a C++ literal (decimal only; hex and octal are masks)."""
    match = re.fullmatch(rb"([\d'.]+(?:[eE][+-]?\d+)?)([A-Za-z]*)", text)
    if not match or text.startswith(b"0x") or text.startswith(b"0X"):
        return []
    digits, suffix = match.group(1).replace(b"'", b"").decode(), match.group(2).decode()
    is_float = "." in digits or "e" in digits.lower() or suffix.lower() == "f"
    if is_float and suffix.lower() not in ("", "f", "l"):
        return []
    if not is_float and suffix.lower().strip("ul") not in ("", "z"):
        return []
    if is_float:
        value = float(digits)
        doubled = "1.0" if value == 0 else repr(value * 2)
        return [doubled + suffix]
    if len(digits) > 1 and digits.startswith("0"):
        return []
    value = int(digits)
    return ["1" + suffix] if value == 0 else [f"{value + 1}{suffix}", f"{value - 1}{suffix}"]


def cpp_sites(path: str, data: bytes) -> List[Mutant]:
    """Every mutation site of one C++ source by the rule set above, in file order."""
    tokens = _cpp_tokens(data)
    sites: List[Mutant] = []

    def add(offset, original: bytes, replacement: str, kind: str):
        line = data.count(b"\n", 0, offset) + 1
        sites.append(Mutant(path, offset, offset + len(original), original.decode(), replacement, kind, line))

    for i, (kind, text, offset) in enumerate(tokens):
        before = tokens[i - 1] if i else (None, b"", 0)
        after = tokens[i + 1] if i + 1 < len(tokens) else (None, b"", len(data))
        if kind == "op" and text in CPP_SPACED:
            end = offset + len(text)
            spaced = data[offset - 1:offset] in (b" ", b"\n") and data[end:end + 1] == b" "
            operand_before = before[0] in ("word", "number", "hexnumber", "char") or before[1] in (b")", b"]")
            text_operand = after[0] in ("string", "rawstring")
            if spaced and operand_before and not text_operand and before[1] not in CPP_KEYWORDS_BEFORE_AN_OPERAND:
                for replacement, change in CPP_SPACED[text]:
                    add(offset, text, replacement, change)
        elif kind == "op" and text == b"!" and after[1] != b"=":
            add(offset, text, "", "logic")
        elif kind == "number":
            for replacement in _bigger_number(text):
                add(offset, text, replacement, "constant")
        elif kind == "word" and text in (b"true", b"false"):
            change = "return" if before[1] == b"return" else "constant"
            add(offset, text, "false" if text == b"true" else "true", change)
        elif kind == "word" and text in CPP_SWAPPED and before[1] == b"::" and after[1] in (b"(", b"<"):
            add(offset, text, CPP_SWAPPED[text], "boundary")
    return sites


def sites_of(path: str, data: bytes) -> List[Mutant]:
    return python_sites(path, data) if path.endswith(".py") else cpp_sites(path, data)
