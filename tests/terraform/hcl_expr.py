"""hcl_expr.py: the small part of Terraform's expression language that terraform/ uses in
variable validation conditions and templates, evaluated in Python: literals, var.x and attribute
access, indexing, arithmetic and comparison, && || !, [for ...] and {for ...} expressions, string
templates, and the functions can, regex, length, alltrue, anytrue, contains, startswith, endswith,
floor, cidrhost, coalesce, tostring, tonumber, split, lower. The conditional operator (?:) is refused: a
validation that needs it is written without it (Terraform evaluates both sides anyway).

An expression is turned into Python source token by token and evaluated with eval() over a
namespace that holds only the values given and these functions."""

import ipaddress
import math
import re


class HclError(Exception):
    """An expression the evaluator does not take, or that fails the way Terraform's would."""


class Obj(dict):
    """An HCL object: attributes read as obj.name."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError as exc:
            raise HclError(f"no attribute {name}") from exc


def wrap(value):
    """Python values (from JSON) as HCL values: dicts become Obj, recursively."""
    if isinstance(value, dict):
        return Obj({k: wrap(v) for k, v in value.items()})
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


def _can(thunk):
    try:
        thunk()
        return True
    except Exception:  # pylint: disable=broad-except
        return False


def _regex(pattern, string):
    if not isinstance(string, str):
        raise HclError("regex: not a string")
    m = re.search(pattern, string)
    if not m:
        raise HclError("regex: no match")
    return m.group(0)


def _tonumber(v):
    if isinstance(v, bool):
        raise HclError("tonumber: a bool")
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str) and re.fullmatch(r"-?\d+(\.\d+)?([eE][+-]?\d+)?", v):
        return float(v) if re.search(r"[.eE]", v) else int(v)
    raise HclError(f"tonumber: {v!r} is not a number")


def _split(sep, s):
    if not isinstance(sep, str) or not isinstance(s, str):
        raise HclError("split: not strings")
    return s.split(sep)


def _cidrhost(prefix, num):
    net = ipaddress.ip_network(prefix, strict=False)
    return str(net[num])


def _length(v):
    if v is None:
        raise HclError("length of null")
    return len(v)


def _bool_list(v, name):
    if any(not isinstance(x, bool) for x in v):
        raise HclError(f"{name}: not a list of bools")
    return v


def _tostring(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return fmt_number(v)
    if isinstance(v, str):
        return v
    raise HclError("tostring: not a primitive")


def _cmp(op, a, b):
    if a is None or b is None:
        raise HclError("comparison with null")
    return op(a, b)


def fmt_number(v):
    """A number as Terraform prints it: whole numbers without a point."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


FUNCTIONS = {
    "can": _can,
    "regex": _regex,
    "length": _length,
    "alltrue": lambda v: all(_bool_list(v, "alltrue")),
    "anytrue": lambda v: any(_bool_list(v, "anytrue")),
    "contains": lambda lst, v: v in lst,
    "keys": lambda m: sorted(m),  # a map's keys, in lexical order as Terraform gives them
    "startswith": lambda s, p: s.startswith(p),
    "endswith": lambda s, p: s.endswith(p),
    "strcontains": lambda s, p: p in s,
    "floor": math.floor,
    "cidrhost": _cidrhost,
    "coalesce": lambda *a: next(x for x in a if x is not None and x != ""),
    "tostring": _tostring,
    "tonumber": _tonumber,
    "split": _split,
    "lower": lambda s: s.lower(),
}

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
    | (?P<str>")
    | (?P<id>[A-Za-z_][\w-]*)
    | (?P<op>&&|\|\||==|!=|<=|>=|=>|[-+*/%<>!?:.,()\[\]{}=])
    )""",
    re.X,
)


def _string_end(src, i):
    """The index after the closing quote of the string starting at src[i] == '"'."""
    j, depth = i + 1, 0
    while j < len(src):
        c = src[j]
        if c == "\\":
            j += 2
            continue
        if src.startswith("${", j):
            depth += 1
            j += 2
            continue
        if c == "}" and depth:
            depth -= 1
        elif c == '"' and not depth:
            return j + 1
        j += 1
    raise HclError("unterminated string")


def _string_to_py(body):
    """A quoted HCL string's body (with ${...} inside) as a Python expression."""
    parts, i, lit = [], 0, ""
    while i < len(body):
        if body.startswith("$${", i):
            lit += "${"
            i += 3
        elif body.startswith("${", i):
            j, depth = i + 2, 1
            while depth:
                if j >= len(body):
                    raise HclError("unterminated interpolation")
                if body[j] == '"':
                    j = _string_end(body, j)
                    continue
                depth += {"{": 1, "}": -1}.get(body[j], 0)
                j += 1
            if lit:
                parts.append(repr(lit))
                lit = ""
            parts.append(f"_tostring({to_python(body[i + 2 : j - 1])})")
            i = j
        elif body[i] == "\\" and i + 1 < len(body):
            lit += {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(body[i + 1], body[i + 1])
            i += 2
        else:
            lit += body[i]
            i += 1
    if lit or not parts:
        parts.append(repr(lit))
    return "(" + " + ".join(parts) + ")"


def _tokens(src):
    out, i = [], 0
    while i < len(src):
        if src[i].isspace():
            i += 1
            continue
        if src[i] == '"':
            j = _string_end(src, i)
            out.append(("str", src[i + 1 : j - 1]))
            i = j
            continue
        m = _TOKEN.match(src, i)
        if not m or m.end() == i:
            raise HclError(f"cannot read {src[i:i + 20]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        i = m.end()
    return out


def _for_to_py(toks, close):
    """[for a, b in X : E] or {for k, v in X : K => V} (toks after the bracket, up to close)."""
    # the names up to 'in'
    k = toks.index(("id", "in"))
    names = [t[1] for t in toks[1:k] if t[0] == "id"]
    depth, colon = 0, None
    for j in range(k + 1, len(toks)):
        t = toks[j]
        if t[1] in "([{" and t[0] == "op":
            depth += 1
        elif t[1] in ")]}" and t[0] == "op":
            depth -= 1
        elif t == ("op", ":") and depth == 0:
            colon = j
            break
    if colon is None:
        raise HclError("for expression without ':'")
    coll = _join(toks[k + 1 : colon])
    body = toks[colon + 1 :]
    if len(names) == 2:
        it = f"_pairs({coll})"
        target = f"{names[0]}, {names[1]}"
    else:
        it = f"_items({coll})"
        target = names[0]
    if close == "]":
        return f"[{_join(body)} for {target} in {it}]"
    arrow = body.index(("op", "=>"))
    return f"Obj({{{_join(body[:arrow])}: {_join(body[arrow + 1:])} for {target} in {it}}})"


def _join(toks):
    """Tokens as Python source."""
    out, i = [], 0
    while i < len(toks):
        kind, text = toks[i]
        if kind == "str":
            out.append(_string_to_py(text))
        elif kind == "num":
            out.append(text)
        elif kind == "id":
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            if text in ("true", "false"):
                out.append(text.capitalize())
            elif text == "null":
                out.append("None")
            elif text == "can" and nxt == ("op", "("):
                inner, end = _group(toks, i + 1)
                out.append(f"_can(lambda: {_join(inner)})")
                i = end
            elif nxt == ("op", "("):
                if text not in FUNCTIONS:
                    raise HclError(f"the function {text} is not evaluated by this checker")
                out.append(f"_{text}")
            elif text == "var" and nxt == ("op", "."):
                out.append("_var")
            else:
                out.append(text)
        elif text == "&&":
            out.append(" and ")
        elif text == "||":
            out.append(" or ")
        elif text == "!":
            out.append(" not ")
        elif text == "?":
            raise HclError("the conditional operator is not evaluated by this checker")
        elif text in ("[", "{") and i + 1 < len(toks) and toks[i + 1] == ("id", "for"):
            inner, end = _group(toks, i)
            out.append(_for_to_py(inner, "]" if text == "[" else "}"))
            i = end
        elif text == "{":
            inner, end = _group(toks, i)
            out.append(_object_to_py(inner))
            i = end
        elif text in ("<", ">", "<=", ">="):
            out.append(f" {text} ")
        else:
            out.append(text)
        i += 1
    return "".join(out)


def _group(toks, i):
    """The tokens inside the bracket at toks[i], and the index of its closing bracket."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    depth = 0
    for j in range(i, len(toks)):
        if toks[j][0] != "op":
            continue
        if toks[j][1] in pairs:
            depth += 1
        elif toks[j][1] in pairs.values():
            depth -= 1
            if depth == 0:
                return toks[i + 1 : j], j
    raise HclError("unbalanced brackets")


def _object_to_py(toks):
    items, depth, start = [], 0, 0
    for j, t in enumerate(toks + [("op", ",")]):
        if t[0] == "op" and t[1] in "([{":
            depth += 1
        elif t[0] == "op" and t[1] in ")]}":
            depth -= 1
        elif t == ("op", ",") and depth == 0:
            if j > start:
                items.append(toks[start:j])
            start = j + 1
    out = []
    for it in items:
        eq = next(k for k, t in enumerate(it) if t in (("op", "="), ("op", ":")))
        key = it[0][1] if it[0][0] in ("id", "str") and eq == 1 else None
        if key is None:
            raise HclError("object keys must be names")
        out.append(f"{key!r}: {_join(it[eq + 1:])}")
    return "Obj({" + ", ".join(out) + "})"


def to_python(src):
    """An HCL expression as Python source (raises HclError for what is not taken)."""
    return _join(_tokens(src))


def _items(coll):
    if isinstance(coll, dict):
        return list(coll.values())
    return list(coll)


def _pairs(coll):
    if isinstance(coll, dict):
        return list(coll.items())
    return list(enumerate(coll))


def evaluate(src, names):
    """Evaluate the HCL expression src; names maps the names it may use (var is an Obj)."""
    ns = {f"_{k}": v for k, v in FUNCTIONS.items()}
    ns.update({"_items": _items, "_pairs": _pairs, "Obj": Obj, "_tostring": _tostring})
    for k, v in names.items():
        ns["_var" if k == "var" else k] = wrap(v)
    code = to_python(src)
    try:
        ns["__builtins__"] = {}
        return eval(code, ns)  # pylint: disable=eval-used
    except HclError:
        raise
    except Exception as exc:  # pylint: disable=broad-except
        raise HclError(f"{type(exc).__name__}: {exc}") from exc
