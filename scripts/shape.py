"""The code shape of the product code, reproducibly: lines per file, long files, long functions,
and the module layout of the library crate.

- Product code is every .rs file under shared/src, functions/*/src and local/src, except test
  files: files named tests.rs or under a tests/ folder, and the files of a module whose `mod`
  declaration is test code (below), e.g. `#[cfg(any(test, feature = "test-support"))] pub mod
  memory;` leaves out memory.rs or memory/mod.rs and every file under memory/.
- Test code is an item behind a cfg that only tests or the `test-support` feature can turn on:
  #[cfg(test)], #[cfg(feature = "test-support")], #[cfg(any(test, feature = "test-support"))],
  #[cfg(all(.., test, ..))] and the like (a cfg that is off whenever both `test` and the
  `test-support` feature are off). The Lambda binaries never compile that code (`test-support` is
  for tests, `local` and `bench`). Code behind #[cfg(not(test))] or #[cfg(not(feature =
  "test-support"))] is product code. An inner #![cfg(..)] of that kind makes a whole file test
  code.
- A file's non-test lines are all its lines (blank and comment lines included) except those of
  its test items: the cfg attribute, the outer attributes and doc comments right above it, and
  the whole item after it (up to its `;`, or its braced body).
- A function is a `fn` item with a body, from the line of its `fn` keyword to its closing brace.
- The layout (--layout): one line per room (top-level module of shared/src, from lib.rs's `mod`
  declarations) with the rooms it imports, and one line per sub-room of `adapters` and `domain`
  with the rooms outside its parent it imports and, after `|`, the sibling sub-rooms. An import is
  a `use` path or a path in code starting with `crate::`, `super::`, `self::` or the name of a
  child module, in non-test code (doc comments are not read); a path through a re-export
  (`pub use`) counts for the room the item lives in. Then the circles (strongly connected rooms,
  and sub-rooms within a room), expected: none.

Braces are counted on the source with comments, string, raw string, byte and char literals
blanked out (a lifetime is not a char literal). No macro is expanded and no `#[path]` followed.

    python3 scripts/shape.py [--json] [--root DIR]
    python3 scripts/shape.py --layout [--json] [--root DIR]
    python3 scripts/shape.py --check-design docs/DESIGN.md [--root DIR]

--root DIR measures another checkout (default: the repository this script is in), e.g. a
worktree of an older commit: `git worktree add /tmp/shape-base <commit>`.
"""

import argparse
import difflib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LONG_FILE = 500
LONG_FN = 80
# Rooms of shared/src whose modules are shown as sub-rooms in the layout (none: its adapters are
# crates of their own now).
SUBDIVIDED = ()
# The crates the layout shows, each with its subdivided rooms: the domain, the ports and use
# cases, then the library. A crate re-exported (`pub use red_packets_domain as domain;`,
# `pub use red_packets_core::{ports, settle};`) is a room of the crate that re-exports it.
CRATES = (
    ("shared/domain/src", ("books",)),
    ("shared/core/src", ()),
    ("shared/redis/src", ()),
    ("shared/dynamo/src", ("items",)),
    ("shared/src", SUBDIVIDED),
)
BEGIN = "<!-- layout:begin -->"
END = "<!-- layout:end -->"

IDENT = re.compile(r"[A-Za-z0-9_]")


# --- lexing -------------------------------------------------------------------------------------


def mask(src):
    """`src` with comments and the contents of string, raw string, byte and char literals replaced
    by spaces (newlines kept, so offsets and line numbers are the same). Quotes are kept."""
    out = list(src)
    n = len(src)

    def blank(a, b):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    i = 0
    while i < n:
        c = src[i]
        nxt = src[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c in "rbc" and (i == 0 or not IDENT.match(src[i - 1])) and raw_string_at(src, i):
            quote, hashes = raw_string_at(src, i)
            close = '"' + "#" * hashes
            j = src.find(close, quote + 1)
            j = n if j < 0 else j
            blank(quote + 1, j)
            i = j + len(close)
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        elif c == "'":
            if nxt == "\\":  # '\n', '\'', '\u{7FFF}'
                j = src.find("'", i + 3)
                j = n if j < 0 else j
                blank(i + 1, j)
                i = j + 1
            elif i + 2 < n and src[i + 2] == "'" and nxt != "\n":  # 'x', b'{'
                blank(i + 1, i + 2)
                i += 3
            else:  # a lifetime or a label
                i += 1
        else:
            i += 1
    return "".join(out)


def raw_string_at(src, i):
    """(index of the opening quote, number of #) when a raw string (r"", r#""#, br"", cr"")
    starts at i, else None."""
    m = re.compile(r'(?:b|c)?r(#*)"').match(src, i)
    if not m:
        return None
    return m.end() - 1, len(m.group(1))


def line_of(text, offset):
    """1-based line number of offset."""
    return text.count("\n", 0, offset) + 1


def matching(text, open_at):
    """Offset of the bracket closing the one at open_at (in masked text), or len(text)."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    stack = []
    for j in range(open_at, len(text)):
        c = text[j]
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if stack and stack[-1] == c:
                stack.pop()
            if not stack:
                return j
    return len(text)


# --- test code ----------------------------------------------------------------------------------

CFG = re.compile(r"#\s*\[\s*cfg\s*\(")
BRACED_ITEM = re.compile(
    r"(?:pub\s*(?:\([^)]*\))?\s*)?(?:(?:const|async|unsafe|default|extern\s*(?:\"\s*\")?)\s+)*"
    r"(?:mod|fn|impl|struct|enum|trait|union|macro_rules\s*!)(?![A-Za-z0-9_])"
)

BLOCK_EXPR = re.compile(r"(?:'[A-Za-z_][A-Za-z0-9_]*\s*:\s*)?(?:if|match|while|for|loop|unsafe)(?![A-Za-z0-9_])")


# The features only tests turn on: the Lambda binaries never compile code behind them.
TEST_FEATURES = ("test-support",)
CFG_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|[A-Za-z_][A-Za-z0-9_]*|[(),=]|.', re.S)


def parse_cfg(predicate):
    """A cfg predicate's text (from the source, not masked) as a tree: ("atom", name, value or
    None), ("not", tree), ("any" or "all", [trees]); None when it does not parse."""
    tokens = [t for t in CFG_TOKEN.findall(predicate) if not (t.isspace() or t.startswith(("//", "/*")))]
    pos = 0

    def pred():
        nonlocal pos
        if pos >= len(tokens) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", tokens[pos]):
            raise ValueError(predicate)
        name = tokens[pos]
        pos += 1
        if pos < len(tokens) and tokens[pos] == "=":
            value = tokens[pos + 1] if pos + 1 < len(tokens) else ""
            if not value.startswith('"'):
                raise ValueError(predicate)
            pos += 2
            return ("atom", name, re.sub(r"\\(.)", r"\1", value[1:-1]))
        if name in ("any", "all", "not") and pos < len(tokens) and tokens[pos] == "(":
            pos += 1
            args = []
            while pos < len(tokens) and tokens[pos] != ")":
                args.append(pred())
                if pos < len(tokens) and tokens[pos] == ",":
                    pos += 1
                elif pos < len(tokens) and tokens[pos] != ")":
                    raise ValueError(predicate)
            if pos >= len(tokens):
                raise ValueError(predicate)
            pos += 1
            if name == "not":
                if len(args) != 1:
                    raise ValueError(predicate)
                return ("not", args[0])
            return (name, args)
        return ("atom", name, None)

    try:
        tree = pred()
    except ValueError:
        return None
    return tree if pos == len(tokens) else None


def cfg_value(tree):
    """The predicate's value when `test` and the test features are off and everything else is
    unknown: True, False, or None (unknown); three-valued (Kleene) logic."""
    kind = tree[0]
    if kind == "atom":
        _, name, value = tree
        if (name, value) == ("test", None) or (name == "feature" and value in TEST_FEATURES):
            return False
        return None
    if kind == "not":
        inner = cfg_value(tree[1])
        return None if inner is None else not inner
    values = [cfg_value(t) for t in tree[1]]
    if kind == "any":
        return True if True in values else (False if all(v is False for v in values) else None)
    return False if False in values else (True if all(v is True for v in values) else None)


def test_only(predicate):
    """Whether a cfg predicate (source text) can hold only under `test` or a test feature: `test`,
    `feature = "test-support"`, `any(test, feature = "test-support")`, `all(.., test, ..)`...;
    not `not(test)`, nor anything this cannot read."""
    tree = parse_cfg(predicate)
    return tree is not None and cfg_value(tree) is False


def item_end(text, start):
    """Offset just past the item (or statement, field, arm) starting at start, in masked text."""
    n = len(text)
    i = start
    while True:  # further outer attributes
        while i < n and text[i].isspace():
            i += 1
        attr = re.compile(r"#\s*\[").match(text, i)
        if attr:
            i = matching(text, attr.end() - 1) + 1
        else:
            break
    braced = text[i] == "{" if i < n else False
    braced = braced or bool(BRACED_ITEM.match(text, i))
    # A block-like expression statement (`if .. { } else { }`, `match`, loops, `unsafe { }`) ends
    # at its closing brace, no `;` needed.
    block_like = not braced and bool(BLOCK_EXPR.match(text, i))
    arm = False
    j = i
    while j < n:
        c = text[j]
        if c in "([":
            j = matching(text, j) + 1
            continue
        if c == "{":
            close = matching(text, j)
            if braced or arm:
                return close + 1
            if block_like:
                after = re.compile(r"\s*else(?![A-Za-z0-9_])").match(text, close + 1)
                if not after:
                    return close + 1
                j = after.end()
                continue
            j = close + 1
            continue
        if c == ";":
            return j + 1
        if c == "," and not braced:  # a braced item's commas are its generics' or its where clause's
            return j + 1
        if c in ")]}":  # the end of the enclosing item: a last field or arm
            return j
        if text.startswith("=>", j):
            arm = True
        j += 1
    return n


INNER_CFG = re.compile(r"#\s*!\s*\[\s*cfg\s*\(")
MOD_ITEM = re.compile(r"(?:pub\s*(?:\([^)]*\))?\s*)?mod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*([;{])")
INLINE_MOD = re.compile(r"(?<![A-Za-z0-9_])mod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*\{")


def whole_file_is_test(src, masked):
    """Whether an inner #![cfg(..)] of the file needs `test` or a test feature."""
    for m in INNER_CFG.finditer(masked):
        close = matching(masked, m.end() - 1)
        if test_only(src[m.end() : close]):
            return True
    return False


def test_items(src, masked):
    """[(cfg attribute offset, offset past the attributes, item end)] of the test-only items."""
    found = []
    covered_to = -1
    for m in CFG.finditer(masked):
        if m.start() < covered_to:
            continue
        close = matching(masked, m.end() - 1)
        # The predicate is read on the source: the masked text has its strings blanked.
        if not test_only(src[m.end() : close]):
            continue
        attr_end = masked.index("]", close) + 1
        end = item_end(masked, attr_end)
        covered_to = end
        i = attr_end
        while True:  # past further outer attributes
            while i < len(masked) and masked[i].isspace():
                i += 1
            attr = re.compile(r"#\s*\[").match(masked, i)
            if not attr:
                break
            i = matching(masked, attr.end() - 1) + 1
        found.append((m.start(), i, end))
    return found


def test_lines(src, masked=None):
    """The set of 1-based line numbers of test-only code in src (whole file: every line)."""
    masked = mask(src) if masked is None else masked
    lines = src.split("\n")
    if src.endswith("\n"):
        lines.pop()
    if whole_file_is_test(src, masked):
        return set(range(1, len(lines) + 1))
    out = set()
    for start, _, end in test_items(src, masked):
        first = line_of(masked, start)
        last = line_of(masked, max(end - 1, start))
        # The outer attributes and doc comments right above belong to the item.
        while first > 1:
            above = lines[first - 2].strip()
            if above.startswith("#[") or (above.startswith("///") and not above.startswith("////")):
                first -= 1
            else:
                break
        out.update(range(first, last + 1))
    return out


def test_modules(src, masked=None):
    """[(module path inside the file, the cfg attribute's text)] of the modules declared behind a
    test-only cfg: ["memory"] for `#[cfg(test)] mod memory;`, ["a", "b"] for `b` declared so inside
    an inline `mod a { .. }`."""
    masked = mask(src) if masked is None else masked
    if whole_file_is_test(src, masked):
        return []
    inline = []  # (name, open brace, close brace) of the inline modules
    for m in INLINE_MOD.finditer(masked):
        inline.append((m.group(1), m.end() - 1, matching(masked, m.end() - 1)))
    out = []
    for start, item, _ in test_items(src, masked):
        m = MOD_ITEM.match(masked, item)
        if not m:
            continue
        outer = [name for name, a, b in inline if a < start < b]
        attr = src[start : masked.index("]", matching(masked, CFG.match(masked, start).end() - 1)) + 1]
        out.append((outer + [m.group(1)], re.sub(r"\s+", " ", attr)))
    return out


def without_tests(src):
    """(masked text with test-only lines blanked, set of test line numbers): offsets kept."""
    masked = mask(src)
    gone = test_lines(src, masked)
    if not gone:
        return masked, gone
    kept = []
    for number, line in enumerate(masked.split("\n"), start=1):
        kept.append(" " * len(line) if number in gone else line)
    return "\n".join(kept), gone


def line_count(src):
    return src.count("\n") + (1 if src and not src.endswith("\n") else 0)


# --- functions ----------------------------------------------------------------------------------

FN = re.compile(r"(?<![A-Za-z0-9_])fn\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)")


def functions(code):
    """[(name, first line, last line)] of the fn items with a body in (masked, test-free) code."""
    found = []
    for m in FN.finditer(code):
        j, n = m.end(), len(code)
        while j < n:
            c = code[j]
            if c in "([":
                j = matching(code, j) + 1
            elif c == ";" or c == "}":
                j = -1
                break
            elif c == "{":
                break
            else:
                j += 1
        if j < 0 or j >= n:
            continue
        close = matching(code, j)
        found.append((m.group(1), line_of(code, m.start()), line_of(code, close)))
    return found


# --- files --------------------------------------------------------------------------------------


def is_test_path(rel):
    parts = rel.split("/")
    return parts[-1] == "tests.rs" or "tests" in parts[:-1]


def test_path_reason(rel):
    return "named tests.rs" if rel.split("/")[-1] == "tests.rs" else "under tests/"


def child_dir(rel):
    """The folder of the files of the modules a file declares: a/ for a/mod.rs, a/lib.rs and
    a/main.rs; a/b/ for a/b.rs."""
    if rel.rsplit("/", 1)[-1] in ("lib.rs", "main.rs", "mod.rs"):
        return rel.rsplit("/", 1)[0]
    return rel[:-3]


def test_module_files(root, tops):
    """{rel: reason} of the .rs files under root/top (for each top) that belong to a module
    declared behind a test-only cfg: the module's file and every file under its folder."""
    rels = [rel for top in tops for rel in rust_files(root, top) if not is_test_path(rel)]
    out = {}
    for rel in sorted(rels, key=lambda r: (r.count("/"), r)):  # outer declarations first
        if rel in out:
            continue
        src = read(root, rel)
        for path, attr in test_modules(src):
            base = child_dir(rel) + "/" + "/".join(path)
            reason = f"mod {'::'.join(path)} behind {attr} in {rel}"
            for other in rels:
                if other not in out and (other == base + ".rs" or other.startswith(base + "/")):
                    out[other] = reason
    return out


def product_dirs(root):
    dirs = ["shared/domain/src", "shared/core/src", "shared/redis/src", "shared/dynamo/src", "shared/src"]
    functions_dir = os.path.join(root, "functions")
    if os.path.isdir(functions_dir):
        for name in sorted(os.listdir(functions_dir)):
            if os.path.isdir(os.path.join(functions_dir, name, "src")):
                dirs.append(f"functions/{name}/src")
    dirs.append("local/src")
    return [d for d in dirs if os.path.isdir(os.path.join(root, d))]


def rust_files(root, top):
    """Relative paths (with /) of the .rs files under root/top, sorted."""
    out = []
    for here, subdirs, files in os.walk(os.path.join(root, top)):
        subdirs.sort()
        for f in files:
            if f.endswith(".rs"):
                out.append(os.path.relpath(os.path.join(here, f), root).replace(os.sep, "/"))
    return sorted(out)


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def measure(root):
    """The figures, as a dict."""
    files, left_out, long_fns = [], [], []
    test_modules_of = test_module_files(root, product_dirs(root))
    for top in product_dirs(root):
        for rel in rust_files(root, top):
            src = read(root, rel)
            if is_test_path(rel) or rel in test_modules_of:
                reason = test_path_reason(rel) if is_test_path(rel) else test_modules_of[rel]
                left_out.append({"path": rel, "lines": line_count(src), "reason": reason})
                continue
            code, gone = without_tests(src)
            total = line_count(src)
            files.append({"path": rel, "lines": total, "non_test_lines": total - len(gone)})
            for name, first, last in functions(code):
                length = last - first + 1
                if length > LONG_FN:
                    long_fns.append({"path": rel, "line": first, "name": name, "lines": length})
    files.sort(key=lambda f: f["path"])
    long_fns.sort(key=lambda f: (-f["lines"], f["path"], f["line"]))
    return {
        "dirs": product_dirs(root),
        "files": files,
        "left_out": sorted(left_out, key=lambda f: f["path"]),
        "total_non_test_lines": sum(f["non_test_lines"] for f in files),
        "total_lines": sum(f["lines"] for f in files),
        "left_out_lines": sum(f["lines"] for f in left_out),
        "files_over_500": [f for f in files if f["non_test_lines"] > LONG_FILE],
        "functions_over_80": long_fns,
    }


def render(figures):
    out = [
        "Code shape of the product code: " + ", ".join(figures["dirs"]) + ".",
        "Non-test lines: all lines of a file, blank and comment lines included, less its test items:",
        "those behind a cfg only tests or the test-support feature turn on (#[cfg(test)],",
        '#[cfg(any(test, feature = "test-support"))], ...), which no Lambda binary compiles. Left out:',
        "files named tests.rs or under tests/, and the files of a module declared behind such a cfg.",
        '#[cfg(not(feature = "test-support"))] code counts.',
        "",
        "non-test    all  file",
    ]
    for f in figures["files"]:
        out.append(f"{f['non_test_lines']:8d} {f['lines']:6d}  {f['path']}")
    out.append(
        f"{figures['total_non_test_lines']:8d} {figures['total_lines']:6d}  total, {len(figures['files'])} files"
    )
    gone = figures["left_out"]
    if gone:
        out += ["", f"left out (test files): {len(gone)} files, {figures['left_out_lines']} lines"]
        out += [f"{f['lines']:8d}  {f['path']}  ({f['reason']})" for f in gone]
    big = figures["files_over_500"]
    out += ["", f"files over {LONG_FILE} non-test lines: {len(big)}"]
    out += [f"{f['non_test_lines']:8d}  {f['path']}" for f in big]
    fns = figures["functions_over_80"]
    out += ["", f"functions over {LONG_FN} lines (from the `fn` line to the closing brace): {len(fns)}"]
    out += [f"{f['lines']:8d}  {f['path']}:{f['line']}  fn {f['name']}" for f in fns]
    return "\n".join(out)


# --- layout -------------------------------------------------------------------------------------

# `pub use other_crate as name;`, `pub use other_crate::name;`, `pub use other_crate::{a, b};`:
# another crate, or its modules, re-exported as rooms of this one.
EXTERN_ROOM = re.compile(r"(?<![A-Za-z0-9_])pub\s+use\s+([a-z_][a-z0-9_]*)\s+as\s+([a-z_][a-z0-9_]*)\s*;")
EXTERN_MODULES = re.compile(r"(?<![A-Za-z0-9_])pub\s+use\s+([a-z_][a-z0-9_]*)::(\{[^}]*\}|[a-z_][a-z0-9_]*)\s*;")
MOD_DECL = re.compile(r"(?<![A-Za-z0-9_])mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*[;{]")
USE = re.compile(r"(?<![A-Za-z0-9_])(pub\s*(?:\([^)]*\))?\s*)?use\s+(?=[A-Za-z_:{])([^;]*);")
TOKEN = re.compile(r"::|[{},*]|[A-Za-z_][A-Za-z0-9_]*")
CODE_PATH = re.compile(r"(?<![A-Za-z0-9_:$.])(crate|self|super(?:\s*::\s*super)*)((?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+)")


def module_path(rel, top="shared/src"):
    """The module path (tuple) of a file under top: lib.rs is (), a/mod.rs and a.rs are (a,)."""
    parts = rel[len(top) + 1 : -3].split("/")
    if parts[-1] in ("lib", "main", "mod"):
        parts.pop()
    return tuple(parts)


def use_paths(tree):
    """[(segments, alias)] of a use tree's text: `a::{b, c::{self, d as e}}`."""
    tokens = TOKEN.findall(tree)
    pos = 0

    def parse(prefix):
        nonlocal pos
        segs = list(prefix)
        out = []
        if pos < len(tokens) and tokens[pos] == "::":
            pos += 1
        while pos < len(tokens):
            t = tokens[pos]
            if t == "{":
                pos += 1
                while pos < len(tokens) and tokens[pos] != "}":
                    out += parse(segs)
                    if pos < len(tokens) and tokens[pos] == ",":
                        pos += 1
                pos += 1
                return out
            if t == "*":
                pos += 1
                return out + [(segs + ["*"], None)]
            if t in (",", "}"):
                return out + ([(segs, None)] if len(segs) > len(prefix) else [])
            if t == "::":
                pos += 1
                continue
            if t == "as":
                pos += 1
                alias = tokens[pos] if pos < len(tokens) else None
                pos += 1
                return out + [(segs, alias)]
            segs.append(t)
            pos += 1
        return out + [(segs, None)]

    result = []
    if tokens[:1] == ["::"]:  # ::name: an extern crate, never a module of this one
        return [(["::"] + segs, alias) for segs, alias in use_paths(tree.split("::", 1)[1])]
    while pos < len(tokens):
        before = pos
        result += parse([])
        if pos < len(tokens) and tokens[pos] == ",":
            pos += 1
        if pos == before:
            pos += 1
    # `a::{self}` means `a`.
    cleaned = []
    for segs, alias in result:
        if len(segs) > 1 and segs[-1] == "self":
            segs = segs[:-1]
        cleaned.append((segs, alias))
    return cleaned


class Crate:
    """The modules of a library crate's non-test code, their children, re-exports and paths."""

    def __init__(self, root, top="shared/src"):
        self.files = {}  # module path -> (rel, test-free masked code)
        test_modules_of = test_module_files(root, [top])
        for rel in rust_files(root, top):
            if is_test_path(rel) or rel in test_modules_of or rel.endswith("/main.rs"):
                continue
            code, _ = without_tests(read(root, rel))
            self.files[module_path(rel, top)] = (rel, code)
        self.children = {m: set(MOD_DECL.findall(code)) for m, (_, code) in self.files.items()}
        self.modules = set(self.files)
        for m, kids in self.children.items():
            self.modules.update(m + (k,) for k in kids)
        lib = self.files.get((), ("", ""))[1]
        local = ("crate", "self", "super")
        self.extern_rooms = {alias for name, alias in EXTERN_ROOM.findall(lib) if name not in local}
        for name, items in EXTERN_MODULES.findall(lib):
            if name not in local and name not in self.children.get((), ()):
                self.extern_rooms.update(re.findall(r"\b[a-z_][a-z0-9_]*\b", items))
        self.modules.update((alias,) for alias in self.extern_rooms)
        self.uses = {}  # module -> [(absolute segments or None, alias, public)]
        self.reexports = {}  # module -> {name: absolute segments}
        for m, (_, code) in self.files.items():
            found = []
            for u in USE.finditer(code):
                public = bool(u.group(1))
                for segs, alias in use_paths(u.group(2)):
                    absolute = self.absolute(m, segs)
                    found.append((absolute, alias, public))
                    if public and absolute is not None and segs and segs[-1] != "*":
                        self.reexports.setdefault(m, {})[alias or absolute[-1]] = absolute
            self.uses[m] = found

    def absolute(self, module, segs):
        """The absolute segments (from the crate root) of a path used in module, or None for a
        path outside the crate."""
        if not segs or segs[0] == "::":
            return None
        head = segs[0]
        if head == "crate":
            return list(segs[1:])
        if head == "self":
            return list(module) + list(segs[1:])
        if head == "super":
            base = list(module)
            rest = list(segs)
            while rest and rest[0] == "super":
                base = base[:-1]
                rest = rest[1:]
            return base + rest
        if head in self.children.get(module, ()):
            return list(module) + list(segs)
        return None

    def resolve(self, segs, depth=0):
        """The module an absolute path lands in, through re-exports."""
        mod = ()
        for i, seg in enumerate(segs):
            if mod + (seg,) in self.modules:
                mod = mod + (seg,)
                continue
            target = self.reexports.get(mod, {}).get(seg)
            if target is not None and depth < 8 and target[: len(mod) + 1] != list(mod) + [seg]:
                return self.resolve(list(target) + list(segs[i + 1 :]), depth + 1)
            break
        return mod

    def imports(self, module):
        """The modules module's non-test code reaches through crate paths."""
        code = self.files[module][1]
        targets = set()
        for absolute, _, _ in self.uses[module]:
            if absolute is not None:
                targets.add(self.resolve([s for s in absolute if s != "*"]))
        code_only = USE.sub(lambda u: " " * len(u.group(0)), code)
        for m in CODE_PATH.finditer(code_only):
            head = re.sub(r"\s", "", m.group(1)).split("::")
            rest = [s for s in re.split(r"\s*::\s*", m.group(2).strip()) if s]
            absolute = self.absolute(module, head + rest)
            if absolute is not None:
                targets.add(self.resolve(absolute))
        kids = self.children.get(module, ())
        if kids:
            child = re.compile(r"(?<![A-Za-z0-9_:$.])(" + "|".join(sorted(kids)) + r")\s*::\s*([A-Za-z_][A-Za-z0-9_]*)")
            for m in child.finditer(code_only):
                targets.add(self.resolve(list(module) + [m.group(1), m.group(2)]))
        return targets


def room_of(module, subdivided=SUBDIVIDED):
    """("adapters", "dynamo") for adapters::dynamo::items; ("clock", None) for clock."""
    if not module:
        return ("crate", None)
    if module[0] in subdivided and len(module) > 1:
        return (module[0], module[1])
    return (module[0], None)


def sccs(graph):
    """Strongly connected components of more than one node, each sorted, sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
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
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def layout(root, top="shared/src", subdivided=SUBDIVIDED):
    """The rooms of the crate, what each imports, and the circles, as a dict."""
    crate = Crate(root, top)
    lib = crate.files.get((), ("", ""))[1]
    rooms = sorted(set(MOD_DECL.findall(lib)) | crate.extern_rooms)
    outside = {r: set() for r in rooms}  # room -> rooms it imports
    subs = {r: {} for r in rooms if r in subdivided}  # room -> sub -> {"outside", "siblings"}
    for r in subs:
        for kid in sorted(crate.children.get((r,), ())):
            subs[r][kid] = {"outside": set(), "siblings": set(), "parent": False}
    for module in sorted(crate.files):
        if not module:
            continue
        room, sub = room_of(module, subdivided)
        if room not in outside:
            continue
        for target in crate.imports(module):
            t_room, t_sub = room_of(target, subdivided)
            if t_room == "crate":
                continue
            if t_room != room:
                outside[room].add(t_room)
                if sub is not None:
                    subs[room][sub]["outside"].add(t_room)
            elif sub is not None and t_sub != sub:
                if t_sub is None:
                    subs[room][sub]["parent"] = True
                else:
                    subs[room][sub]["siblings"].add(t_sub)
    sub_circles = []
    for r, kids in sorted(subs.items()):
        graph = {k: v["siblings"] for k, v in kids.items()}
        sub_circles += [[f"{r}::{k}" for k in comp] for comp in sccs(graph)]
    return {
        "crate": top,
        "rooms": [
            {
                "room": r,
                "imports": sorted(outside[r]),
                "sub_rooms": [
                    {
                        "room": f"{r}::{k}",
                        "imports": sorted(v["outside"]),
                        "siblings": sorted(v["siblings"]),
                        "parent": v["parent"],
                    }
                    for k, v in sorted(subs.get(r, {}).items())
                ],
            }
            for r in rooms
        ],
        "circles": sccs(outside),
        "sub_room_circles": sub_circles,
    }


def layouts(root):
    """The layout of each crate of CRATES that this checkout has."""
    return [layout(root, top, subdivided) for top, subdivided in CRATES if os.path.isdir(os.path.join(root, top))]


def render_layouts(shapes):
    return "\n\n".join(render_layout(shape, shape["crate"]) for shape in shapes)


def render_layout(shape, top="shared/src"):
    names = []
    for r in shape["rooms"]:
        names.append(r["room"])
        names += ["  " + s["room"].split("::", 1)[1] for s in r["sub_rooms"]]
    width = max(len(n) for n in names) + 2 if names else 0
    out = [
        f"{top}: room -> the rooms it imports (non-test code)",
        "  sub-room -> the rooms outside its parent | its sibling sub-rooms",
    ]
    if any(s["parent"] for r in shape["rooms"] for s in r["sub_rooms"]):
        out.append("  (mod): the parent's own items (not re-exported from a sub-room)")
    out.append("")

    def row(name, imports):
        return (name.ljust(width) + "-> " + imports).rstrip()

    for r in shape["rooms"]:
        out.append(row(r["room"], ", ".join(r["imports"]) or "-"))
        for s in r["sub_rooms"]:
            own = s["siblings"] + (["(mod)"] if s["parent"] else [])
            text = ", ".join(s["imports"]) or "-"
            if own:
                text += " | " + ", ".join(own)
            out.append(row("  " + s["room"].split("::", 1)[1], text))
    out.append("")

    def circles(found):
        return "; ".join(" <-> ".join(c) for c in found) or "none"

    out.append("circles between rooms: " + circles(shape["circles"]))
    out.append("circles between sub-rooms: " + circles(shape["sub_room_circles"]))
    return "\n".join(out)


def design_block(text):
    """The lines of the fenced block between the layout markers of a document, or None."""
    if BEGIN not in text or END not in text:
        return None
    inner = text.split(BEGIN, 1)[1].split(END, 1)[0]
    lines = inner.strip("\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and lines[0].lstrip().startswith("```"):
        lines.pop(0)
    if lines and lines[-1].strip().startswith("```"):
        lines.pop()
    return [line.rstrip() for line in lines]


def check_design(path, layout_text):
    """(exit status, message): 0 when the document's block is the layout, 1 with a diff when not,
    2 when the document has no block."""
    with open(path, encoding="utf-8") as f:
        block = design_block(f.read())
    if block is None:
        return 2, f"{path}: no {BEGIN} ... {END} block"
    want = [line.rstrip() for line in layout_text.split("\n")]
    if block == want:
        return 0, f"{path}: the layout block matches the code"
    diff = difflib.unified_diff(block, want, f"{path} (layout block)", "scripts/shape.py --layout", lineterm="")
    return 1, "\n".join(diff)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--layout", action="store_true", help="the module layout of the domain crate and the library")
    parser.add_argument("--check-design", metavar="FILE", help="compare the layout with FILE's layout block")
    parser.add_argument(
        "--root", metavar="DIR", default=ROOT, help="the checkout to measure (default: the repository of this script)"
    )
    args = parser.parse_args(argv)
    if args.check_design:
        status, message = check_design(args.check_design, render_layouts(layouts(args.root)))
        print(message, file=sys.stdout if status == 0 else sys.stderr)
        return status
    if args.layout:
        shapes = layouts(args.root)
        print(json.dumps(shapes, indent=2) if args.json else render_layouts(shapes))
        return 0
    figures = measure(args.root)
    print(json.dumps(figures, indent=2) if args.json else render(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
