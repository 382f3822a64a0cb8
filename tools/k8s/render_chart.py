#!/usr/bin/env python3
"""Renders tools/k8s/chart/kevlaya like `helm template` for the Go-template subset the chart uses.

Strict on purpose (no helm binary in Debian): an unknown action, function or a missing value is an
error, never an empty string. Supported: text with {{ }} actions and -trim markers, comments,
`range $v := P`, `range $k, $v := P` (maps in sorted key order, as Go does), `if P` / `else`,
`end`, and pipelines of .Values/.Release/.Chart paths, $ and $variables with fields, string and
integer literals, and the functions toYaml, quote, indent N, nindent N.

Usage: render_chart.py [CHART_DIR] [--values FILE] [--name RELEASE] [--namespace NS]
Prints the manifests as one YAML stream.
"""
import argparse
import os
import re
import sys

import yaml

ACTION = re.compile(r"\{\{(-?)\s*(.*?)\s*(-?)\}\}", re.S)


class TemplateError(Exception):
    pass


def tokenize(text):
    """Text and action tokens, with Go's trim markers applied to the neighbouring text."""
    out, pos = [], 0
    for m in ACTION.finditer(text):
        out.append(["text", text[pos:m.start()]])
        if m.group(1):
            out[-1][1] = out[-1][1].rstrip()
        out.append(["action", m.group(2), bool(m.group(3))])
        pos = m.end()
    out.append(["text", text[pos:]])
    for i, tok in enumerate(out):
        if tok[0] == "action" and tok[2] and i + 1 < len(out):
            out[i + 1][1] = out[i + 1][1].lstrip()
    return [t for t in out if not (t[0] == "action" and t[1].startswith("/*"))]


def parse(tokens, i=0, closers=()):
    """A node list up to one of `closers` ("end", "else"); returns (nodes, index, closer)."""
    nodes = []
    while i < len(tokens):
        tok = tokens[i]
        if tok[0] == "text":
            nodes.append(("text", tok[1]))
            i += 1
            continue
        word = tok[1].split(None, 1)[0] if tok[1] else ""
        if word in ("end", "else"):
            if word not in closers:
                raise TemplateError("unexpected {{%s}}" % tok[1])
            return nodes, i + 1, word
        if word in ("range", "if"):
            body, i, closer = parse(tokens, i + 1, ("end", "else"))
            other = []
            if closer == "else":
                other, i, _ = parse(tokens, i, ("end",))
            nodes.append((word, tok[1][len(word):].strip(), body, other))
            continue
        if word in ("define", "template", "include", "with", "block", "tpl"):
            raise TemplateError("unsupported action: {{%s}}" % tok[1])
        nodes.append(("expr", tok[1]))
        i += 1
    if closers:
        raise TemplateError("missing {{end}}")
    return nodes, i, None


def split_args(s):
    return re.findall(r'"(?:[^"\\]|\\.)*"|\S+', s)


def lookup(value, fields, where):
    for f in fields:
        if not isinstance(value, dict) or f not in value:
            raise TemplateError("no value for %s" % where)
        value = value[f]
    return value


def term(tok, scope):
    if tok.startswith('"'):
        return yaml.safe_load(tok)  # a double-quoted YAML scalar reads like a Go string literal
    if re.fullmatch(r"-?\d+", tok):
        return int(tok)
    if tok.startswith("."):
        return lookup(scope["."], [f for f in tok.split(".") if f], tok)
    if tok.startswith("$"):
        name, _, rest = tok.partition(".")
        if name not in scope:
            raise TemplateError("undefined variable " + name)
        return lookup(scope[name], [f for f in rest.split(".") if f], tok)
    raise TemplateError("unsupported term " + tok)


def to_yaml(v):
    return yaml.safe_dump(v, default_flow_style=False, sort_keys=True).rstrip("\n")


def indent(n, s):
    return "\n".join(" " * n + line for line in str(s).split("\n"))


FUNCS = {
    "toYaml": (1, lambda v: to_yaml(v)),
    "quote": (1, lambda v: '"%s"' % str(v).replace("\\", "\\\\").replace('"', '\\"')),
    "indent": (2, lambda n, s: indent(n, s)),
    "nindent": (2, lambda n, s: "\n" + indent(n, s)),
}


def pipeline(expr, scope):
    value, first = None, True
    for part in expr.split("|"):
        args = split_args(part.strip())
        if not args:
            raise TemplateError("empty pipeline stage in {{%s}}" % expr)
        if args[0] in FUNCS:
            arity, fn = FUNCS[args[0]]
            vals = [term(a, scope) for a in args[1:]] + ([] if first else [value])
            if len(vals) != arity:
                raise TemplateError("%s takes %d arguments in {{%s}}" % (args[0], arity, expr))
            value = fn(*vals)
        elif first and len(args) == 1:
            value = term(args[0], scope)
        else:
            raise TemplateError("unsupported function %s" % args[0])
        first = False
    return value


def show(v, expr):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)) or v is None:
        raise TemplateError("{{%s}} is not a scalar (use toYaml)" % expr)
    return str(v)


def execute(nodes, scope):
    out = []
    for node in nodes:
        kind = node[0]
        if kind == "text":
            out.append(node[1])
        elif kind == "expr":
            out.append(show(pipeline(node[1], scope), node[1]))
        elif kind == "if":
            out.append(execute(node[2] if pipeline(node[1], scope) else node[3], scope))
        else:  # range
            m = re.fullmatch(r"(?:(\$\w+)\s*,\s*)?(\$\w+)\s*:=\s*(.+)", node[1])
            if not m:
                raise TemplateError("range needs $v := or $k, $v := (got %s)" % node[1])
            items = pipeline(m.group(3), scope)
            pairs = sorted(items.items()) if isinstance(items, dict) else list(enumerate(items or []))
            for k, v in pairs:
                inner = dict(scope)
                inner[m.group(2)] = v
                inner["."] = v
                if m.group(1):
                    inner[m.group(1)] = k
                out.append(execute(node[2], inner))
            if not pairs:
                out.append(execute(node[3], scope))
    return "".join(out)


def render(chart_dir, values=None, release="kevlaya", namespace="default"):
    """The chart's manifests as one YAML stream (templates in file-name order, as helm prints them)."""
    with open(os.path.join(chart_dir, "Chart.yaml")) as f:
        chart = yaml.safe_load(f)
    if values is None:
        with open(os.path.join(chart_dir, "values.yaml")) as f:
            values = yaml.safe_load(f)
    root = {"Values": values, "Release": {"Name": release, "Namespace": namespace},
            "Chart": {"Name": chart["name"], "Version": chart["version"]}}
    tdir = os.path.join(chart_dir, "templates")
    parts = []
    for name in sorted(os.listdir(tdir)):
        if not name.endswith(".yaml"):
            continue
        with open(os.path.join(tdir, name)) as f:
            nodes, _, _ = parse(tokenize(f.read()))
        try:
            parts.append("# Source: %s/templates/%s\n%s" % (chart["name"], name, execute(nodes, {".": root, "$": root})))
        except TemplateError as e:
            raise TemplateError("%s: %s" % (name, e))
    return "\n".join(parts) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("chart", nargs="?", default=os.path.join(os.path.dirname(__file__), "chart", "kevlaya"))
    ap.add_argument("--values")
    ap.add_argument("--name", default="kevlaya")
    ap.add_argument("--namespace", default="default")
    a = ap.parse_args()
    values = None
    if a.values:
        with open(a.values) as f:
            values = yaml.safe_load(f)
    try:
        sys.stdout.write(render(a.chart, values, a.name, a.namespace))
    except TemplateError as e:
        sys.exit("render_chart: %s" % e)


if __name__ == "__main__":
    main()
