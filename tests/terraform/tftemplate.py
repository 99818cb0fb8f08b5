"""tftemplate.py: Terraform's template syntax as terraform/ uses it (templatefile()): ${expr}
interpolation, %{ if }/%{ else }/%{ endif } and %{ for x in xs }/%{ endfor } directives, the
strip marker ~} (removes the blanks after the directive up to and including one newline, as
Terraform 1.x does), and the escapes $${ and %%{. Expressions are hcl_expr's subset."""

import re

from hcl_expr import HclError, _tostring, evaluate

_OPEN = re.compile(r"(\$\$\{|%%\{|\$\{|%\{)")


def _scan(text):
    """The template as a list of ('lit', s) / ('interp', expr, strip) / ('dir', words, strip)."""
    out, i, lit = [], 0, ""
    while True:
        m = _OPEN.search(text, i)
        if not m:
            lit += text[i:]
            break
        lit += text[i : m.start()]
        tok = m.group(1)
        if tok in ("$${", "%%{"):
            lit += tok[1:]
            i = m.end()
            continue
        j, depth = m.end(), 1
        while depth:
            if j >= len(text):
                raise HclError(f"unterminated {tok} at offset {m.start()}")
            if text[j] == '"':
                j += 1
                while j < len(text) and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        inner = text[m.end() : j - 1]
        if inner.startswith("~"):
            raise HclError("the left strip marker {~ is not used in these templates")
        strip = inner.endswith("~")
        inner = inner[:-1] if strip else inner
        out.append(("lit", lit))
        lit = ""
        out.append(("interp" if tok == "${" else "dir", inner.strip(), strip))
        i = j
    out.append(("lit", lit))
    return out


def _strip_after(parts):
    """Apply ~}: the literal after a stripping directive loses its blanks and one newline."""
    for k, p in enumerate(parts):
        if p[0] != "lit" and p[2] and k + 1 < len(parts) and parts[k + 1][0] == "lit":
            s = parts[k + 1][1]
            s = s.lstrip(" \t")
            if s.startswith("\r\n"):
                s = s[2:]
            elif s.startswith("\n"):
                s = s[1:]
            parts[k + 1] = ("lit", s)
    return parts


def _parse(parts, i, ends):
    """Nodes from parts[i:] up to a directive whose first word is in ends; (nodes, i, word)."""
    nodes = []
    while i < len(parts):
        p = parts[i]
        if p[0] == "lit":
            nodes.append(("lit", p[1]))
            i += 1
            continue
        if p[0] == "interp":
            nodes.append(("interp", p[1]))
            i += 1
            continue
        words = p[1].split(None, 1)
        head = words[0] if words else ""
        if head in ends:
            return nodes, i, head
        if head == "if":
            then, i, word = _parse(parts, i + 1, ("else", "endif"))
            other = []
            if word == "else":
                other, i, word = _parse(parts, i + 1, ("endif",))
            if word != "endif":
                raise HclError("%{ if } without %{ endif }")
            nodes.append(("if", words[1], then, other))
            i += 1
        elif head == "for":
            m = re.match(r"([A-Za-z_]\w*)(?:\s*,\s*([A-Za-z_]\w*))?\s+in\s+(.+)$", words[1])
            if not m:
                raise HclError(f"cannot read %{{ {p[1]} }}")
            body, i, word = _parse(parts, i + 1, ("endfor",))
            if word != "endfor":
                raise HclError("%{ for } without %{ endfor }")
            nodes.append(("for", m.group(1), m.group(2), m.group(3), body))
            i += 1
        else:
            raise HclError(f"unknown directive %{{ {p[1]} }}")
    return nodes, i, None


def parse(text):
    """The template text as a tree of nodes."""
    nodes, _, word = _parse(_strip_after(_scan(text)), 0, ())
    if word:
        raise HclError(f"%{{ {word} }} without its opening directive")
    return nodes


def _render(nodes, names, out):
    for n in nodes:
        if n[0] == "lit":
            out.append(n[1])
        elif n[0] == "interp":
            out.append(_tostring(evaluate(n[1], names)))
        elif n[0] == "if":
            cond = evaluate(n[1], names)
            if not isinstance(cond, bool):
                raise HclError(f"%{{ if {n[1]} }}: not a bool")
            _render(n[2] if cond else n[3], names, out)
        else:
            coll = evaluate(n[3], names)
            pairs = coll.items() if isinstance(coll, dict) else enumerate(coll)
            for k, v in pairs:
                inner = dict(names)
                if n[2]:
                    inner[n[1]], inner[n[2]] = k, v
                else:
                    inner[n[1]] = v
                _render(n[4], inner, out)


def render(text, variables):
    """Render the template text with the variables (a dict of plain Python values)."""
    out = []
    _render(parse(text), dict(variables), out)
    return "".join(out)


def used_names(text):
    """The variables the template reads (names bound by its own for loops left out)."""
    used = set()

    def roots(expr, bound):
        expr = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)
        for m in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)(?!\w)(?!\s*\()", expr):
            w = m.group(1)
            if w not in bound and w not in ("true", "false", "null", "in", "for", "if"):
                used.add(w)

    def walk(nodes, bound):
        for n in nodes:
            if n[0] == "interp":
                roots(n[1], bound)
            elif n[0] == "if":
                roots(n[1], bound)
                walk(n[2], bound)
                walk(n[3], bound)
            elif n[0] == "for":
                roots(n[3], bound)
                walk(n[4], bound | {n[1]} | ({n[2]} if n[2] else set()))

    walk(parse(text), set())
    return used
