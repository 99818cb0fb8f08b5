#!/usr/bin/env python3
"""check_terraform.py: terraform/ checked without a cloud, a provider or a terraform binary.

  check_terraform.py [--root DIR] [--castor PATH] [--checkov PATH] [--only structure|...] [DIR...]

1. structure: every .tf parses (python-hcl2), and what `terraform validate` would catch that a
   parse does not: every var.x, local.x, module.x(.output), data.t.n and resource t.n an
   expression uses is declared in its module; every local module source exists; a module call
   passes every required variable of the module and nothing it does not declare; every output has
   a description and a value whose references exist; every templatefile() and file() path exists
   and a templatefile() passes every variable its template reads; every variable has a
   description and a type, and every validation block an error_message.
2. validations: each module's validation conditions are evaluated (hcl_expr.py) for good values,
   which must pass, and for bad ones (no zones, a budget below zero, 0.0.0.0/0 without the
   opt-in, ...), which must fail with their error_message; every validation block must be failed
   by at least one bad value.
3. templates: the cloud-init, startup-script and castor.yaml templates are rendered
   (tftemplate.py) with sample values and checked by `castor validate` (--cloud-init for the
   workers'); where a terraform binary is on PATH, every rendering is compared with Terraform's
   own (`terraform console`, no provider needed).
4. checkov over terraform/: no failed check (skips only in place, `#checkov:skip=ID:reason`).
5. `terraform fmt -check -recursive`, only where a terraform binary is on PATH.

DIRs given: only step 1 over those folders (the fixtures of tests/terraform/fixtures/).
Prints one line per fault and a summary; exit status 0 when all is well, 1 otherwise.
"""

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# python-hcl2 lives beside checkov's own fork (bc-python-hcl2), which takes the same package name:
# scripts/iac-venv installs it into .venv-iac/python-hcl2, first on the path here.
for _p in (os.environ.get("CASTOR_HCL2_PATH"),
           os.path.join(HERE, "..", "..", ".venv-iac", "python-hcl2")):
    if _p and os.path.isdir(_p):
        sys.path.insert(0, os.path.abspath(_p))
        break

import hcl2  # noqa: E402  pylint: disable=wrong-import-position
import yaml  # noqa: E402  pylint: disable=wrong-import-position

from hcl_expr import HclError, evaluate  # noqa: E402  pylint: disable=wrong-import-position
import tftemplate  # noqa: E402  pylint: disable=wrong-import-position

PROVIDER_PREFIXES = ("aws_", "google_", "random_", "null_", "tls_", "local_", "time_")
META = {"__start_line__", "__end_line__", "__comments__", "__is_block__", "__inline_comments__"}


class Report:
    """Faults and notes, printed as they come."""

    def __init__(self):
        self.faults = []

    def fault(self, where, msg):
        self.faults.append(f"{where}: {msg}")
        print(f"FAIL {where}: {msg}")

    @staticmethod
    def note(msg):
        print(f"  ok {msg}")


def unquote(s):
    """A label or a literal string as python-hcl2 8 gives it ("\\"name\\"")."""
    if isinstance(s, str) and len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1]
    return s


def strings(node):
    """Every string in a parsed block (values and keys), metadata left out."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in META:
                continue
            yield k
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)
    elif isinstance(node, str):
        yield node


def interpolations(s):
    """The ${...} expressions in one string, outermost first."""
    out, i = [], 0
    while True:
        i = s.find("${", i)
        if i < 0:
            return out
        if i > 0 and s[i - 1] == "$":
            i += 2
            continue
        j, depth = i + 2, 1
        while j < len(s) and depth:
            if s[j] == '"':
                j += 1
                while j < len(s) and s[j] != '"':
                    j += 2 if s[j] == "\\" else 1
            elif s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
            j += 1
        out.append(s[i + 2 : j - 1])
        i = j


REF_PATTERNS = {
    "var": re.compile(r"(?<![\w.])var\.([A-Za-z_][\w-]*)"),
    "local": re.compile(r"(?<![\w.])local\.([A-Za-z_][\w-]*)"),
    "module": re.compile(r"(?<![\w.])module\.([A-Za-z_][\w-]*)(?:\.([A-Za-z_][\w-]*))?"),
    "data": re.compile(r"(?<![\w.])data\.([A-Za-z_][\w-]*)\.([A-Za-z_][\w-]*)"),
    "resource": re.compile(r"(?<![\w.\"/-])([a-z][a-z0-9]*_[a-z0-9_]+)\.([A-Za-z_][\w-]*)"),
}


def references(node):
    """(kind, name, attr) for every reference in the expressions of a parsed block."""
    refs = set()
    for s in strings(node):
        for expr in interpolations(s):
            expr = re.sub(r'"(?:\\.|[^"\\$])*"', '""', expr)  # literal strings hold no reference
            for kind, pat in REF_PATTERNS.items():
                for m in pat.finditer(expr):
                    if kind == "resource":
                        if not m.group(1).startswith(PROVIDER_PREFIXES):
                            continue
                        refs.add(("resource", f"{m.group(1)}.{m.group(2)}", None))
                    elif kind == "data":
                        refs.add(("data", f"{m.group(1)}.{m.group(2)}", None))
                    elif kind == "module":
                        refs.add(("module", m.group(1), m.group(2)))
                    else:
                        refs.add((kind, m.group(1), None))
    return refs


class Module:
    """One folder of .tf files, parsed."""

    def __init__(self, path, report):
        self.path = path
        self.files = {}
        self.variables, self.outputs, self.modules = {}, {}, {}
        self.locals, self.resources, self.data = {}, {}, {}
        self.blocks = []  # (file, kind, name, body) for reference checks
        for name in sorted(os.listdir(path)):
            if not name.endswith(".tf"):
                continue
            fpath = os.path.join(path, name)
            try:
                with open(fpath, encoding="utf-8") as f:
                    doc = hcl2.load(f)
            except Exception as exc:  # pylint: disable=broad-except
                report.fault(fpath, f"does not parse: {str(exc).splitlines()[0]}")
                continue
            self.files[fpath] = doc
            self._collect(fpath, doc)

    def _collect(self, fpath, doc):
        for block in doc.get("variable", []):
            for name, body in block.items():
                self.variables[unquote(name)] = (fpath, body)
                self.blocks.append((fpath, "variable", unquote(name), body))
        for block in doc.get("output", []):
            for name, body in block.items():
                self.outputs[unquote(name)] = (fpath, body)
                self.blocks.append((fpath, "output", unquote(name), body))
        for block in doc.get("module", []):
            for name, body in block.items():
                self.modules[unquote(name)] = (fpath, body)
                self.blocks.append((fpath, "module", unquote(name), body))
        for block in doc.get("locals", []):
            for name, value in block.items():
                if name not in META:
                    self.locals[name] = (fpath, value)
                    self.blocks.append((fpath, "local", name, value))
        for kind, table in (("resource", self.resources), ("data", self.data)):
            for block in doc.get(kind, []):
                for rtype, named in block.items():
                    for name, body in named.items():
                        if name in META:
                            continue
                        table[f"{unquote(rtype)}.{unquote(name)}"] = (fpath, body)
                        self.blocks.append((fpath, kind, f"{unquote(rtype)}.{unquote(name)}", body))
        for kind in ("terraform", "provider"):
            for block in doc.get(kind, []):
                self.blocks.append((fpath, kind, kind, block))


def module_source_dir(module, body):
    src = unquote(body.get("source", ""))
    if src.startswith("./") or src.startswith("../"):
        return os.path.normpath(os.path.join(module.path, src))
    return None


def template_calls(module, s):
    """(function, path, keys or None) for each templatefile()/file() call in the string s."""
    out = []
    for expr in interpolations(s):
        for m in re.finditer(r"(?<![\w.])(templatefile|file)\(\s*\"((?:\\.|[^\"\\])*)\"", expr):
            path = m.group(2).replace("${path.module}", module.path)
            keys = None
            if m.group(1) == "templatefile":
                rest = expr[m.end():].lstrip()
                if rest.startswith(","):
                    rest = rest[1:].lstrip()
                if rest.startswith("{"):
                    keys = object_keys(rest)
            out.append((m.group(1), os.path.normpath(path), keys))
    return out


def object_keys(text):
    """The top-level keys of the object literal at the start of text."""
    keys, depth, i, token_start = [], 0, 0, True
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            token_start = False
            continue
        if c in "([{":
            depth += 1
            token_start = depth == 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                break
        elif c == "," and depth == 1:
            token_start = True
        elif depth == 1 and token_start and (c.isalpha() or c == "_"):
            m = re.match(r"([A-Za-z_][\w-]*)\s*[=:](?!=)", text[i:])
            if m:
                keys.append(m.group(1))
                i += m.end()
            token_start = False
            continue
        i += 1
    return keys


def check_structure(module, report, modules_by_path):
    """Step 1 for one module."""
    where = os.path.relpath(module.path)
    declared = {
        "var": set(module.variables),
        "local": set(module.locals),
        "module": set(module.modules),
        "data": set(module.data),
        "resource": set(module.resources),
    }
    for fpath, kind, name, body in module.blocks:
        for rkind, rname, attr in sorted(references(body), key=str):
            if rname not in declared[rkind]:
                what = {"var": "variable", "local": "local value", "module": "module",
                        "data": "data source", "resource": "resource"}[rkind]
                prefix = {"var": "var.", "local": "local.", "module": "module.",
                          "data": "data.", "resource": ""}[rkind]
                report.fault(f"{os.path.relpath(fpath)}: {kind} {name}",
                             f"{prefix}{rname}: no such {what} is declared in {where}")
            elif rkind == "module" and attr:
                child = child_module(module, module.modules[rname][1], modules_by_path, report)
                if child and attr not in child.outputs:
                    report.fault(f"{os.path.relpath(fpath)}: {kind} {name}",
                                 f"module.{rname}.{attr}: the module has no output {attr}")
        for s in strings(body):
            for func, path, keys in template_calls(module, s):
                if not os.path.isfile(path):
                    report.fault(f"{os.path.relpath(fpath)}: {kind} {name}",
                                 f"{func}(): {os.path.relpath(path)} does not exist")
                    continue
                if func == "templatefile" and keys is not None:
                    with open(path, encoding="utf-8") as f:
                        try:
                            used = tftemplate.used_names(f.read())
                        except HclError as exc:
                            report.fault(os.path.relpath(path), f"template: {exc}")
                            continue
                    for missing in sorted(used - set(keys)):
                        report.fault(f"{os.path.relpath(fpath)}: {kind} {name}",
                                     f"templatefile({os.path.relpath(path)}): the template reads "
                                     f"{missing}, which is not passed")
    check_instances(module, report)
    for name, (fpath, body) in module.variables.items():
        if "description" not in body or "type" not in body:
            report.fault(f"{os.path.relpath(fpath)}: variable {name}", "needs a description and a type")
        for v in body.get("validation", []):
            if "error_message" not in v or "condition" not in v:
                report.fault(f"{os.path.relpath(fpath)}: variable {name}",
                             "a validation block needs a condition and an error_message")
    for name, (fpath, body) in module.outputs.items():
        if "description" not in body or "value" not in body:
            report.fault(f"{os.path.relpath(fpath)}: output {name}", "needs a description and a value")
    for name, (fpath, body) in module.modules.items():
        src = module_source_dir(module, body)
        if src is None:
            continue
        if not os.path.isdir(src) or not any(n.endswith(".tf") for n in os.listdir(src)):
            report.fault(f"{os.path.relpath(fpath)}: module {name}",
                         f"source {unquote(body.get('source'))}: no module at {os.path.relpath(src)}")
            continue
        child = child_module(module, body, modules_by_path, report)
        args = {k for k in body if k not in META and k not in
                ("source", "version", "providers", "count", "for_each", "depends_on")}
        for a in sorted(args - set(child.variables)):
            report.fault(f"{os.path.relpath(fpath)}: module {name}",
                         f"{a}: the module at {os.path.relpath(src)} declares no such variable")
        for v, (_, vbody) in sorted(child.variables.items()):
            if "default" not in vbody and v not in args:
                report.fault(f"{os.path.relpath(fpath)}: module {name}",
                             f"the required variable {v} of {os.path.relpath(src)} is not passed")


# ---- step 1, continued: what castor takes for its own instances ----

# castor lists its cluster's instances by this tag (EC2) or label (Compute Engine) and, at start
# and at each tick, terminates one that no launch of its own explains: a stray
# (src/control/realworld_reconcile.c). So the module's instances (the controller; an instance
# template's VMs, started by hand) must never carry it; castor puts it on its workers itself.
CLUSTER_KEYS = {"tags": "castor:cluster", "labels": "castor-cluster"}
CONTROLLER_KEYS = {"tags": "castor:controller", "labels": "castor-controller"}
# resource type => the attribute that tags or labels the instances it makes
INSTANCE_RESOURCES = {
    "aws_instance": "tags",
    "aws_spot_instance_request": "tags",
    "google_compute_instance": "labels",
    "google_compute_instance_from_template": "labels",
    "google_compute_instance_template": "labels",
    "google_compute_region_instance_template": "labels",
}
SAMPLE_CLUSTER_IDS = ("castor-prod", "a", "prod")


def flat(node):
    """A parsed block's strings (keys and values, comments left out) as one text."""
    return "\n".join(strings(node))


def expand_locals(module, text, depth=0):
    """text with every local.NAME replaced by the local's own text, recursively."""
    if depth > 8:
        return text

    def sub(m):
        if m.group(1) not in module.locals:
            return m.group(0)
        return "(" + expand_locals(module, flat(module.locals[m.group(1)][1]), depth + 1) + ")"

    return re.sub(r"(?<![\w.])local\.([A-Za-z_][\w-]*)", sub, text)


def name_prefixes(module, body):
    """What an instance's name starts with for each sample cluster id: its text with string
    locals and var.cluster_id put in, up to the first part this cannot tell (another ${})."""
    out = []
    for cid in SAMPLE_CLUSTER_IDS:
        text = unquote(flat(body.get("name", "")))
        for _ in range(8):
            def sub(m):
                if m.group(1) == "var.cluster_id":
                    return cid
                local = module.locals.get(m.group(1)[len("local."):]) if m.group(1).startswith("local.") else None
                value = flat(local[1]) if local else ""
                if len(value) >= 2 and value[0] == value[-1] == '"':
                    return unquote(value)
                return m.group(0)
            new = re.sub(r"\$\{\s*((?:var|local)\.[A-Za-z_][\w-]*)\s*\}", sub, text)
            if new == text:
                break
            text = new
        out.append(text.split("${", 1)[0])
    return out


def check_instances(module, report):
    """No instance the module makes carries the cluster's tag or label; the controller carries
    the controller's; no instance name matches the launch role's name condition (GCP); the
    controller's startup script replaces it when it changes (GCP)."""
    prefixes = []
    for fpath, kind, name, body in module.blocks:
        if kind == "resource" and name.startswith(("google_project_iam_member.", "google_project_iam_binding.")):
            for cond in body.get("condition", []):
                for m in re.finditer(r'startsWith\(\\?"([^"\\]+)\\?"\)', flat(cond.get("expression", ""))):
                    prefixes.append((name, m.group(1)))
    for fpath, kind, name, body in module.blocks:
        if kind != "resource":
            continue
        rtype = name.split(".", 1)[0]
        attr = INSTANCE_RESOURCES.get(rtype)
        if not attr:
            continue
        where = f"{os.path.relpath(fpath)}: resource {name}"
        text = expand_locals(module, flat(body.get(attr, "")))
        if CLUSTER_KEYS[attr] in text:
            report.fault(where, f"its {attr} carry the cluster's {CLUSTER_KEYS[attr]}: castor lists "
                         f"its instances by it and terminates one it did not launch as a stray "
                         f"(the controller gets {CONTROLLER_KEYS[attr]})")
        elif name.endswith(".controller") and CONTROLLER_KEYS[attr] not in text:
            report.fault(where, f"the controller's {attr} should carry {CONTROLLER_KEYS[attr]}")
        if rtype.startswith("google_compute_instance") and "template" not in rtype:
            for role, prefix in prefixes:
                for n in name_prefixes(module, body):
                    if n.startswith(prefix) or (n and prefix.startswith(n)):
                        report.fault(where, f"its name ({n}...) matches {role}'s condition "
                                     f"startsWith(\"{prefix}\"): castor could delete it")
                        break
            meta = body.get("metadata", {})
            meta = meta[0] if isinstance(meta, list) and meta else meta
            if isinstance(meta, dict) and any(unquote(k) == "startup-script" for k in meta):
                report.fault(where, "metadata's startup-script is updated in place (the script runs "
                             "at the next boot only): use metadata_startup_script, which replaces "
                             "the VM when it changes")


def doc_block(root, doc, heading, lang, what, report):
    """The first ```lang block after heading in docs/doc, or None (a fault: no such what)."""
    text = read(os.path.join(root, "docs", doc))
    m = re.search(re.escape(heading) + r".*?```" + lang + r"\n(.*?)```", text, re.S)
    if not m:
        report.fault("docs/" + doc, f"no {what} (```{lang}) found")
        return None
    return m.group(1)


def check_policy_actions(root, module, report):
    """The controller's policy (terraform/aws/iam.tf) allows every action of docs/aws.md's
    least-privilege policy, which lists what castor calls."""
    block = doc_block(root, "aws.md", "## Least-privilege IAM policy", "json",
                      "least-privilege policy", report)
    if block is None:
        return
    wanted = set()
    for st in json.loads(block)["Statement"]:
        acts = st["Action"]
        wanted.update([acts] if isinstance(acts, str) else acts)
    body = module.data.get("aws_iam_policy_document.controller", (None, {}))[1]
    have = {unquote(a) for st in body.get("statement", []) for a in st.get("actions", [])}
    for a in sorted(wanted - have):
        report.fault("terraform/aws/iam.tf: data aws_iam_policy_document.controller",
                     f"{a} is not allowed, and castor calls it (docs/aws.md's policy)")
    if not wanted - have:
        report.note(f"terraform/aws/iam.tf: the controller's policy allows the {len(wanted)} actions of docs/aws.md's")


def check_role_permissions(root, module, report):
    """The controller's custom roles (terraform/gcp/iam.tf) grant every permission of docs/gcp.md's
    least-privilege role, which lists what castor calls; but one the list marks "only with"
    something the module does not do (an external address)."""
    block = doc_block(root, "gcp.md", "## Least-privilege IAM", "yaml", "least-privilege role",
                      report)
    if block is None:
        return
    wanted = set()
    for line in block.splitlines():
        p = re.match(r"^- ([\w.]+)\s*(?:#\s*(.*))?$", line)
        if p and not (p.group(2) or "").startswith("only with"):
            wanted.add(p.group(1))
    have = set()
    for name, (_, body) in module.resources.items():
        if name.startswith("google_project_iam_custom_role."):
            have.update(unquote(x) for x in body.get("permissions", []))
    for perm in sorted(wanted - have):
        report.fault("terraform/gcp/iam.tf: the controller's roles",
                     f"{perm} is not granted, and castor needs it (docs/gcp.md's role)")
    if wanted and not wanted - have:
        report.note(f"terraform/gcp/iam.tf: the controller's roles grant the {len(wanted)} "
                    "permissions of docs/gcp.md's role")


def child_module(module, body, modules_by_path, report):
    """The module a call's local source names, parsed once (None for a remote or missing one)."""
    src = module_source_dir(module, body)
    if src is None or not os.path.isdir(src):
        return None
    if src not in modules_by_path:
        modules_by_path[src] = Module(src, report)
    return modules_by_path[src]


def load_modules(dirs, report):
    mods = {}
    for d in dirs:
        for root, subdirs, files in os.walk(d):
            subdirs[:] = sorted(s for s in subdirs if not s.startswith("."))
            if any(f.endswith(".tf") for f in files):
                mods[os.path.normpath(root)] = Module(os.path.normpath(root), report)
    return mods


# ---- step 2: the validation blocks ----

GOOD = {
    "aws": {
        "cluster_id": "castor-prod", "region": "us-east-1", "vpc_id": "vpc-0123456789abcdef0",
        "controller_subnet_id": "subnet-0123456789abcdef0",
        "zones": {"us-east-1a": "subnet-0123456789abcdef0", "us-east-1b": "subnet-0fedcba9876543210"},
        "instance_types": [{"instance_type": "g5.xlarge", "gpus": 1},
                           {"instance_type": "g5.12xlarge", "gpus": 4, "market": "on-demand"},
                           {"instance_type": "p4d.24xlarge", "gpus": 8, "max_price": 12.5}],
        "worker_ami_id": "ami-0123456789abcdef0", "controller_ami_id": None,
        "castor_package_url": "https://example.com/castor-1.0-linux-x86_64.tar.gz",
        "castor_package_sha256": "0" * 64, "admin_cidrs": ["10.0.0.0/16", "2001:db8::/32"],
        "allow_public_admin": False, "api_plain_http": True, "api_port": 8470, "budget_per_hour": 0,
        "value_per_job_hour": 1.2, "max_nodes": 16, "policy": "pollux", "interval": 60,
        "state_volume_gb": 10, "worker_volume_gb": 200,
    },
    "gcp": {
        "cluster_id": "castor-prod", "project_id": "my-project-123", "region": "us-central1",
        "zones": ["us-central1-a", "us-central1-b"],
        "machine_types": [{"machine_type": "g2-standard-4"},
                          {"machine_type": "n1-standard-8", "accelerator_type": "nvidia-tesla-t4",
                           "accelerator_count": 2}],
        "worker_image": "projects/deeplearning-platform-release/global/images/family/common-cu129-ubuntu-2204-nvidia-580",
        "castor_package_url": "https://example.com/castor.tar.gz", "castor_package_sha256": "a" * 64,
        "admin_cidrs": ["10.128.0.0/9"], "allow_public_admin": False, "api_plain_http": True,
        "api_port": 8470,
        "budget_per_hour": 25.5, "value_per_job_hour": 1.2, "max_nodes": 16, "policy": "castor",
        "interval": 30, "state_disk_gb": 10, "worker_disk_gb": 200, "worker_disk_type": "pd-standard",
    },
}

# (variable, bad value, other variables changed with it); each must fail a validation of that
# variable. Good values with the opt-in follow in ACCEPTED.
BAD = {
    "aws": [
        ("zones", {}, {}),
        ("zones", {"us-east-1": "subnet-0123456789abcdef0"}, {}),
        ("budget_per_hour", -1, {}),
        ("budget_per_hour", 1e9, {}),
        ("admin_cidrs", ["0.0.0.0/0"], {}),
        ("admin_cidrs", ["::/0"], {}),
        ("identity_certificate", "MIIC...not PEM", {}),
        ("api_plain_http", False, {}),
        ("admin_cidrs", ["10.0.0.300/16"], {}),
        ("cluster_id", "bad id!", {}),
        ("region", "US East", {}),
        ("vpc_id", "vpc_1", {}),
        ("controller_subnet_id", "sub-1", {}),
        ("instance_types", [], {}),
        ("instance_types", [{"instance_type": "g5.xlarge", "gpus": 0}], {}),
        ("instance_types", [{"instance_type": "g5.xlarge", "gpus": 1, "market": "reserved"}], {}),
        ("instance_types", [{"instance_type": "g5.xlarge", "gpus": 1, "max_price": -2}], {}),
        ("instance_types", [{"instance_type": f"t{i}", "gpus": 1} for i in range(33)], {}),
        # the same offer twice: `castor validate` refuses the rendered castor.yaml at first boot
        ("instance_types", [{"instance_type": "g5.xlarge", "gpus": 1},
                            {"instance_type": "g5.xlarge", "gpus": 4, "market": "spot"}], {}),
        ("worker_ami_id", "ubuntu", {}),
        ("controller_ami_id", "debian-12", {}),
        ("castor_package_url", "http://example.com/castor.tar.gz", {}),
        ("castor_package_sha256", "abc", {}),
        ("api_port", 0, {}),
        ("api_port", 8470.5, {}),
        ("value_per_job_hour", 0, {}),
        ("max_nodes", 0, {}),
        ("policy", "fifo", {}),
        ("interval", 0, {}),
        ("state_volume_gb", 0, {}),
        ("worker_volume_gb", 4, {}),
        ("on_demand_discount", 1, {}),
        ("tags", {"team": "ml", "castor:cluster": "castor-prod"}, {}),
        ("worker_job_user", "root", {}),
        ("worker_job_user", "Castor Job", {}),
        ("worker_job_uids", "61000", {}),
        ("worker_job_uids", "0-99", {}),
        ("worker_job_uids", "62000-61000", {}),
        ("worker_job_uids", "1000-99999", {}),
        ("worker_job_uids", "9999999999-9999999999", {}),
    ],
    "gcp": [
        ("zones", [], {}),
        ("zones", ["europe-west4-a"], {}),
        ("budget_per_hour", -0.01, {}),
        ("budget_per_hour", 2e7, {}),
        ("admin_cidrs", ["0.0.0.0/0"], {}),
        ("admin_cidrs", ["not-a-cidr"], {}),
        ("api_plain_http", False, {}),
        ("cluster_id", "Castor", {}),
        ("cluster_id", "castor_prod", {}),
        ("cluster_id", "castor-" + "x" * 24, {}),
        ("project_id", "x", {}),
        ("region", "us central", {}),
        ("machine_types", [], {}),
        ("machine_types", [{"machine_type": "a2-highgpu-1g", "accelerator_type": "nvidia-tesla-t4"}], {}),
        ("machine_types", [{"machine_type": f"g2-standard-{i}"} for i in range(33)], {}),
        # the same offer twice: `castor validate` refuses the rendered castor.yaml at first boot
        ("machine_types", [{"machine_type": "g2-standard-4"},
                           {"machine_type": "g2-standard-4", "spot": True}], {}),
        ("machine_types", [{"machine_type": "n1-standard-8", "accelerator_type": "nvidia-tesla-t4"},
                           {"machine_type": "n1-standard-8", "accelerator_type": "nvidia-tesla-t4",
                            "accelerator_count": 1, "spot": True}], {}),
        ("machine_types", [{"machine_type": "g2-standard-4"},
                           {"machine_type": "g2-standard-4", "accelerator_count": 2}], {}),
        ("worker_image", "debian", {}),
        ("castor_package_url", "ftp://example.com/c.tgz", {}),
        ("castor_package_sha256", "Z" * 64, {}),
        ("api_port", 70000, {}),
        ("value_per_job_hour", 1e7, {}),
        ("max_nodes", 5000, {}),
        ("policy", "", {}),
        ("interval", 1e6, {}),
        ("state_disk_gb", 1, {}),
        ("worker_disk_gb", 5, {}),
        ("worker_disk_type", "hyperdisk-balanced", {}),
        ("on_demand_discount", -0.1, {}),
        ("labels", {"castor-cluster": "castor-prod"}, {}),
        ("worker_job_user", "root", {}),
        ("worker_job_user", "-job", {}),
        ("worker_job_uids", "61000-", {}),
        ("worker_job_uids", "a-b", {}),
    ],
}

ACCEPTED = {
    "aws": [("admin_cidrs", ["0.0.0.0/0"], {"allow_public_admin": True}),
            ("identity_certificate", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", {}),
            ("budget_per_hour", 40, {}), ("controller_ami_id", "ami-0123456789abcdef0", {}),
            ("tags", {"team": "ml", "castor:controller": "x"}, {}),
            # replicas as root (the user off), or every job as the user (the uids off)
            ("worker_job_user", "", {}), ("worker_job_uids", "", {}),
            ("worker_job_uids", "1000000-1065535", {}),
            # one instance type in both markets: two offers
            ("instance_types", [{"instance_type": "g5.xlarge", "gpus": 1},
                                {"instance_type": "g5.xlarge", "gpus": 1, "market": "on-demand"}], {})],
    "gcp": [("admin_cidrs", ["0.0.0.0/0"], {"allow_public_admin": True}), ("budget_per_hour", 0, {}),
            ("worker_disk_type", "pd-balanced", {}), ("labels", {"team": "ml"}, {}),
            ("worker_job_user", "", {}), ("worker_job_uids", "", {}),
            # one machine type as spot and standard, with other GPUs or another count: distinct offers
            ("machine_types", [{"machine_type": "g2-standard-4"},
                               {"machine_type": "g2-standard-4", "spot": False},
                               {"machine_type": "n1-standard-8", "accelerator_type": "nvidia-tesla-t4"},
                               {"machine_type": "n1-standard-8", "accelerator_type": "nvidia-tesla-t4",
                                "accelerator_count": 2},
                               {"machine_type": "n1-standard-8", "accelerator_type": "nvidia-tesla-v100"}], {})],
}


def apply_optional_defaults(type_expr, value):
    """list(object({a = optional(t, d)})): fill what a value leaves out, as Terraform does."""
    m = re.match(r"^\$\{list\(object\(\{(.*)\}\)\)\}$", type_expr or "", re.S)
    if not m or not isinstance(value, list):
        return value
    attrs = {}
    for a in re.finditer(r"(\w+)\s*=\s*(optional\((\w+)(?:,\s*([^)]+))?\)|\w+)", m.group(1)):
        default = None
        if a.group(4) is not None:
            default = json.loads(a.group(4).strip())
        attrs[a.group(1)] = default
    return [{**attrs, **v} for v in value]


def check_validations(module, label, report):
    """Step 2 for the module terraform/<label>."""
    where = os.path.relpath(module.path)
    good = dict(GOOD[label])
    for name in module.variables:
        if name not in good and "default" not in module.variables[name][1]:
            report.fault(where, f"no good sample value for the required variable {name}")
    blocks = {}
    for name, (_, body) in module.variables.items():
        vals = body.get("validation", [])
        blocks[name] = [(unquote(v.get("error_message", "")), v.get("condition", "")) for v in vals]
        if name not in good:
            good[name] = None if "default" not in body else json_default(body["default"])

    def values_with(var, value, extra):
        vals = dict(good)
        vals.update(extra)
        vals[var] = value
        for n, (_, body) in module.variables.items():
            vals[n] = apply_optional_defaults(body.get("type"), vals[n])
        return vals

    def failing(var, vals):
        """The error messages of var's validations that the values fail."""
        failed = []
        for msg, cond in blocks.get(var, []):
            expr = cond[2:-1] if cond.startswith("${") else cond
            try:
                ok = evaluate(expr, {"var": vals})
            except HclError as exc:
                if "not evaluated by this checker" in str(exc):
                    report.fault(f"{where}: variable {var}", f"condition {expr!r}: {exc}")
                    continue
                ok = False  # an error in a condition fails the validation, as in Terraform
            if ok is not True:
                failed.append(msg)
        return failed

    for var in sorted(blocks):
        f = failing(var, values_with(var, good[var], {}))
        if f:
            report.fault(f"{where}: variable {var}", f"the good value {good[var]!r} fails: {f[0]}")
    hit = {var: set() for var in blocks}
    for var, value, extra in BAD[label]:
        if var not in blocks:
            report.fault(where, f"variable {var} has no validation block")
            continue
        f = failing(var, values_with(var, value, extra))
        if not f:
            report.fault(f"{where}: variable {var}", f"the bad value {value!r} passes every validation")
        else:
            hit[var].update(f)
            report.note(f"{where}: {var} = {json.dumps(value)[:60]} refused: {f[0]}")
    for var, value, extra in ACCEPTED[label]:
        f = failing(var, values_with(var, value, extra))
        if f:
            report.fault(f"{where}: variable {var}", f"{value!r} with {extra} should pass: {f[0]}")
    for var, vals in blocks.items():
        for msg, _ in vals:
            if msg not in hit[var]:
                report.fault(f"{where}: variable {var}", f"no bad value exercises the validation {msg!r}")
    for var in ("zones", "budget_per_hour", "admin_cidrs"):
        if not blocks.get(var):
            report.fault(where, f"the issue's variable {var} has no validation block")


def json_default(expr):
    """A literal default as python-hcl2 gives it."""
    if isinstance(expr, (bool, int, float)) or expr is None:
        return expr
    if isinstance(expr, str):
        if expr == "${null}" or expr == "null":
            return None
        if expr.startswith('"'):
            return unquote(expr)
        try:
            return evaluate(expr[2:-1] if expr.startswith("${") else expr, {})
        except HclError:
            return expr
    if isinstance(expr, list):
        return [json_default(e) for e in expr]
    if isinstance(expr, dict):
        return {unquote(k): json_default(v) for k, v in expr.items() if k not in META}
    return expr


# ---- step 3: the templates, rendered and validated ----

def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def indent(n, text):
    """Terraform's indent(): n spaces before every line but the first."""
    return text.replace("\n", "\n" + " " * n)


def aws_renderings(root):
    """(name, template path, variables) for every rendering of terraform/aws's templates."""
    tdir = os.path.join(root, "terraform", "aws", "templates")
    prices = os.path.join(root, "config", "aws-prices.yaml")
    offers = [
        {"instance_type": "g5.xlarge", "zone": "us-east-1a", "subnet": "subnet-0123456789abcdef0",
         "market": "spot", "gpus": 1, "max_price": "0.75"},
        {"instance_type": "g5.12xlarge", "zone": "us-east-1b", "subnet": "subnet-0fedcba9876543210",
         "market": "on-demand", "gpus": 4, "max_price": ""},
    ]
    out = []
    for budget in (0, 40):
        out.append((f"aws castor.yaml (budget {budget})", os.path.join(tdir, "castor.yaml.tftpl"), {
            "cluster": "castor-prod", "region": "us-east-1", "launch_template": "lt-0123456789abcdef0",
            "prices_file": prices, "volume_gb": 200, "offers": offers, "interval": 60, "api_port": 8470,
            "plain_http": True, "policy": "pollux", "budget": budget, "value": 1.2, "max_nodes": 16,
            "discount": 0.28 if budget else 0,
            # with a budget, workers must also prove their instance (identity_certificate set)
            "attest": budget > 0, "account": "123456789012"}))
    out.append(("aws worker user-data", os.path.join(tdir, "worker-init.yaml.tftpl"), {
        "api_url": "http://10.0.1.10:8470", "region": "us-east-1", "token_prefix": "/castor/castor-prod",
        "package_url": "https://example.com/castor.tar.gz", "package_sha256": "0" * 64,
        "job_user": "castor-job", "job_uids": "61000-61999"}))
    return out


def gcp_renderings(root):
    tdir = os.path.join(root, "terraform", "gcp", "templates")
    prices = os.path.join(root, "config", "gcp-prices.yaml")
    worker = {"api_url": "http://10.128.0.5:8470", "project": "my-project-123",
              "node_secret": "castor-prod-node-token",
              "package_url": "https://example.com/castor.tar.gz", "package_sha256": "a" * 64,
              "job_user": "castor-job", "job_uids": "61000-61999"}
    out = [("gcp worker startup script", os.path.join(tdir, "worker-startup.sh.tftpl"), worker)]
    offers = [
        {"machine_type": "g2-standard-4", "zone": "us-central1-a", "spot": True,
         "accelerator_type": "", "accelerator_count": 1},
        {"machine_type": "n1-standard-8", "zone": "us-central1-b", "spot": False,
         "accelerator_type": "nvidia-tesla-t4", "accelerator_count": 2},
    ]
    for budget in (0, 25.5):
        out.append((f"gcp castor.yaml (budget {budget})", os.path.join(tdir, "castor.yaml.tftpl"), {
            "cluster": "castor-prod", "project": "my-project-123", "prices_file": prices,
            "offers": offers, "image": "projects/debian-cloud/global/images/family/debian-12",
            "disk_gb": 200, "disk_type": "pd-balanced" if budget else "pd-standard",
            "network": "projects/my-project-123/global/networks/default",
            "subnetwork": "projects/my-project-123/regions/us-central1/subnetworks/default",
            "service_account": "castor-node-castor-prod@my-project-123.iam.gserviceaccount.com",
            "startup_script": ("@worker", 6), "interval": 60, "api_port": 8470, "plain_http": True,
            "policy": "pollux", "budget": budget, "value": 1.2, "max_nodes": 16,
            "discount": 0.28 if budget else 0,
            # with no budget, workers prove their instance (worker_attestation, the default)
            "attest": budget == 0, "api_url": "http://10.128.0.5:8470"}))
    return out


def castor_validate(castor, args, path, where, report):
    p = subprocess.run([castor, "validate", *args, path], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        report.fault(where, f"castor validate: {(p.stderr or p.stdout).strip()}")
        return False
    report.note(f"{where}: {' '.join(['castor validate', *args])}: ok")
    return True


def terraform_render(tf, template, variables, tmp):
    """Terraform's own rendering (terraform console), or None when it cannot be had."""
    vpath = os.path.join(tmp, "vars.json")
    with open(vpath, "w", encoding="utf-8") as f:
        json.dump(variables, f)
    expr = f'jsonencode(templatefile("{template}", jsondecode(file("{vpath}"))))'
    p = subprocess.run([tf, "console"], input=expr, capture_output=True, text=True, cwd=tmp,
                       timeout=120, check=False)
    if p.returncode != 0:
        return None
    return json.loads(json.loads(p.stdout.strip()))


def offer_names(cloud):
    """The names castor gives the offers of a castor.yaml's cloud section: <type>/<zone>/<market>
    on AWS (docs/aws.md), <machine>[+<gpu>x<count>]/<zone>/<spot|standard> on Compute Engine
    (docs/gcp.md)."""
    names = set()
    for o in cloud.get("offers") or []:
        if "instance_type" in o:
            names.add(f"{o['instance_type']}/{o['zone']}/{o.get('market', 'on-demand')}")
        else:
            gpus = f"+{o['accelerator_type']}x{o.get('accelerator_count', 1)}" if o.get("accelerator_type") else ""
            names.add(f"{o['machine_type']}{gpus}/{o['zone']}/{'spot' if o.get('spot') else 'standard'}")
    return names


def check_offer_names(text, name, report):
    """Every entry of a rendered castor.yaml's top-level offers names one of its cloud's offers:
    castor warns of one that does not at run time, and its settings (a discount) apply to nothing."""
    doc = yaml.safe_load(text)
    known = offer_names(doc.get("cloud") or {})
    listed = [o["name"] for o in (doc.get("offers") or [])]
    unknown = [n for n in listed if n not in known]
    if unknown:
        report.fault(name, f"offers: {', '.join(unknown)} not among the cloud's offers {sorted(known)}")
    elif listed:
        report.note(f"{name}: offers: its {len(listed)} entries name offers of its cloud")


def check_templates(root, castor, report):
    """Step 3."""
    tf = shutil.which("terraform")
    with tempfile.TemporaryDirectory(prefix="castor-tf-") as tmp:
        # the identity certificate a castor.yaml with attestation names, beside it (a test key's)
        shutil.copy(os.path.join(root, "tests", "data", "attest", "test-cert.pem"),
                    os.path.join(tmp, "aws-identity.pem"))
        rendered = {}
        for name, template, variables in aws_renderings(root) + gcp_renderings(root):
            values = dict(variables)
            for k, v in values.items():
                if isinstance(v, tuple) and v[0] == "@worker":
                    values[k] = indent(v[1], rendered["gcp worker startup script"])
            try:
                text = tftemplate.render(read(template), values)
            except HclError as exc:
                report.fault(os.path.relpath(template), f"render ({name}): {exc}")
                continue
            rendered[name] = text
            if tf:
                theirs = terraform_render(tf, template, values, tmp)
                if theirs is None:
                    report.note(f"{name}: terraform console could not render it (skipped the comparison)")
                elif theirs != text:
                    report.fault(os.path.relpath(template), f"{name}: this checker's rendering differs from Terraform's")
                else:
                    report.note(f"{name}: rendered as Terraform renders it")
            out = os.path.join(tmp, re.sub(r"[^\w.-]+", "-", name) + (".sh" if "script" in name else ".yaml"))
            with open(out, "w", encoding="utf-8") as f:
                f.write(text)
            if "castor.yaml" in name:
                castor_validate(castor, [], out, name, report)
                check_offer_names(text, name, report)
            else:
                castor_validate(castor, ["--cloud-init"], out, name, report)
        # the controllers' boot: the castor.yaml they install is the one checked above
        check_controller_boot(root, castor, rendered, tmp, report)
        check_worker_start(rendered, tmp, report)


def check_state_guard(label, dropin, report):
    """castor.service's drop-in: castor never starts without its state volume mounted."""
    if "RequiresMountsFor=/var/lib/castor" not in dropin or \
            "ExecStartPre=+/usr/bin/mountpoint -q /var/lib/castor" not in dropin:
        report.fault(label, "no castor.service drop-in that keeps castor from starting without "
                     "/var/lib/castor mounted (RequiresMountsFor=, ExecStartPre=+mountpoint)")
    else:
        report.note(f"{label}: castor.service starts only with /var/lib/castor mounted")


def check_controller_boot(root, castor, rendered, tmp, report):
    service = read(os.path.join(root, "config", "castor.service"))
    aws_init = os.path.join(root, "terraform", "aws", "templates", "controller-init.yaml.tftpl")
    cert = read(os.path.join(root, "tests", "data", "attest", "test-cert.pem")).strip()
    try:
        text = tftemplate.render(read(aws_init), {
            "castor_yaml": indent(6, rendered["aws castor.yaml (budget 40)"]),
            "castor_service": indent(6, service), "package_url": "https://example.com/c.tgz",
            "package_sha256": "0" * 64, "region": "us-east-1", "token_prefix": "/castor/castor-prod",
            "kms_key": "arn:aws:kms:us-east-1:123456789012:key/abc", "state_volume": "vol0123456789abcdef0",
            "identity_cert": indent(6, cert)})
        if not text.startswith("#cloud-config\n"):
            report.fault(os.path.relpath(aws_init), "the rendering does not start with #cloud-config")
        doc = yaml.safe_load(text)
        files = {f["path"]: f["content"] for f in doc["write_files"]}
        if files["/etc/castor/castor.yaml"] != rendered["aws castor.yaml (budget 40)"]:
            report.fault(os.path.relpath(aws_init), "the castor.yaml it writes differs from the rendered one")
        if files["/etc/systemd/system/castor.service"] != service:
            report.fault(os.path.relpath(aws_init), "the castor.service it writes differs from config/castor.service")
        if files.get("/etc/castor/aws-identity.pem", "").strip() != cert:
            report.fault(os.path.relpath(aws_init), "the identity certificate it writes differs from the variable's")
        check_state_guard("aws controller user-data", files.get(
            "/etc/systemd/system/castor.service.d/state-volume.conf", ""), report)
        runcmd = " ".join(c if isinstance(c, str) else " ".join(c) for c in doc.get("runcmd", []))
        if not re.search(r"castor-controller-boot && .*castor validate .*&& .*enable --now castor", runcmd):
            report.fault(os.path.relpath(aws_init), "runcmd must start castor only after "
                         "castor-controller-boot and castor validate succeed (one && chain)")
        for path in ("/usr/local/sbin/castor-tokens", "/usr/local/sbin/castor-controller-boot"):
            p = subprocess.run(["sh", "-n"], input=files.get(path, ""), capture_output=True, text=True, check=False)
            if path not in files or p.returncode != 0:
                report.fault(os.path.relpath(aws_init), f"{path}: missing or sh -n: {p.stderr.strip()}")
        run_token_script("aws controller castor-tokens (aws cli)", files.get("/usr/local/sbin/castor-tokens", ""),
                         {r: f"/castor/castor-prod/{r}-token" for r in ("node", "job", "user")}, tmp, report)
        out = os.path.join(tmp, "aws-controller-castor.yaml")
        with open(out, "w", encoding="utf-8") as f:
            f.write(files["/etc/castor/castor.yaml"])
        castor_validate(castor, [], out, "aws controller user-data: its castor.yaml", report)
    except (HclError, yaml.YAMLError, KeyError, TypeError) as exc:
        report.fault(os.path.relpath(aws_init), f"the controller's user-data: {exc}")
    gcp_boot = os.path.join(root, "terraform", "gcp", "templates", "controller-startup.sh.tftpl")
    try:
        text = tftemplate.render(read(gcp_boot), {
            "castor_yaml": rendered["gcp castor.yaml (budget 0)"], "castor_service": service,
            "package_url": "https://example.com/c.tgz", "package_sha256": "a" * 64,
            "project": "my-project-123", "node_secret": "n", "job_secret": "j", "user_secret": "u"})
        m = re.search(r"<<'STATE_DISK_END'\n(.*?)\nSTATE_DISK_END\n", text, re.S)
        check_state_guard("gcp controller startup script", m.group(1) if m else "", report)
        m = re.search(r"<<'CASTOR_TOKENS_END'\n(.*?)\nCASTOR_TOKENS_END\n", text, re.S)
        if not m:
            report.fault(os.path.relpath(gcp_boot), "no castor-tokens script in it")
        else:
            tokens = tftemplate.render(read(gcp_boot), {
                "castor_yaml": "", "castor_service": "", "package_url": "https://example.com/c.tgz",
                "package_sha256": "a" * 64, "project": "my-project-123",
                "node_secret": "castor-prod-node-token", "job_secret": "castor-prod-job-token",
                "user_secret": "castor-prod-user-token"})
            tokens = re.search(r"<<'CASTOR_TOKENS_END'\n(.*?)\nCASTOR_TOKENS_END\n", tokens, re.S).group(1)
            run_token_script("gcp controller castor-tokens (curl)", tokens,
                             {r: f"castor-prod-{r}-token" for r in ("node", "job", "user")}, tmp, report)
        m = re.search(r"<<'CASTOR_YAML_END'\n(.*?)\nCASTOR_YAML_END\n", text, re.S)
        if not m or m.group(1) != rendered["gcp castor.yaml (budget 0)"]:
            report.fault(os.path.relpath(gcp_boot), "the castor.yaml it writes differs from the rendered one")
        p = subprocess.run(["sh", "-n"], input=text, capture_output=True, text=True, check=False)
        if p.returncode != 0:
            report.fault(os.path.relpath(gcp_boot), f"sh -n: {p.stderr.strip()}")
        else:
            report.note("gcp controller startup script: castor.yaml embedded as rendered; sh -n: ok")
        cfg = yaml.safe_load(rendered["gcp castor.yaml (budget 0)"])
        if cfg["cloud"]["instance"]["startup_script"] != rendered["gcp worker startup script"]:
            report.fault("terraform/gcp/templates/castor.yaml.tftpl",
                         "the workers' startup_script in castor.yaml differs from the rendered script")
    except (HclError, yaml.YAMLError, KeyError, TypeError) as exc:
        report.fault(os.path.relpath(gcp_boot), f"the controller's startup script: {exc}")
    p = subprocess.run(["sh", "-n"], input=rendered.get("gcp worker startup script", ""),
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        report.fault("terraform/gcp/templates/worker-startup.sh.tftpl", f"sh -n: {p.stderr.strip()}")


# The controllers' token scripts, run against stand-ins for the AWS CLI and curl: a token read
# back is written without the newline the CLI adds; tokens are made only when the store says there
# is none (ParameterNotFound, HTTP 404); any other failure is retried, then fails with no token
# made, stored or written.
STUB_AWS = r"""#!/bin/sh
echo "aws $*" >>"$STUB_DIR/log"
prev= name= value=
for a in "$@"; do
  [ "$prev" = --name ] && name=$a
  [ "$prev" = --value ] && value=$a
  prev=$a
done
case "$*" in
*get-parameter*)
  case $STUB_MODE in
  found) printf 'value-%s\n' "$(basename "$name")" ;;
  notfound) echo "An error occurred (ParameterNotFound) when calling the GetParameter operation: Parameter $name not found." >&2; exit 254 ;;
  *) echo "An error occurred (ThrottlingException) when calling the GetParameter operation: Rate exceeded" >&2; exit 254 ;;
  esac ;;
*put-parameter*)
  cp "${value#file://}" "$STUB_DIR/put-$(basename "$name")" ;;
*) exit 2 ;;
esac
"""
STUB_CURL = r"""#!/bin/sh
echo "curl $*" >>"$STUB_DIR/log"
prev= out= url=
for a in "$@"; do
  [ "$prev" = -o ] && out=$a
  case $a in http*) url=$a ;; esac
  prev=$a
done
case $url in
*computeMetadata*) echo '{"access_token": "ya29.stub"}' ;;
*:addVersion) cat >"$STUB_DIR/add-$(basename "${url%:addVersion}")" ;;
*:access)
  name=$(echo "$url" | sed 's|.*/secrets/\([^/]*\)/versions/.*|\1|')
  case $STUB_MODE in
  found) printf '{"payload": {"data": "%s"}}' "$(printf 'value-%s\n' "$name" | base64 -w0)" >"$out"; printf 200 ;;
  notfound) echo '{"error": {"code": 404, "status": "NOT_FOUND"}}' >"$out"; printf 404 ;;
  *) echo '{"error": {"code": 403, "status": "PERMISSION_DENIED"}}' >"$out"; printf 403 ;;
  esac ;;
*) exit 2 ;;
esac
"""


# The workers' castor-node-start, run against a stand-in for curl that plays the metadata server
# (GCE's or IMDS) and Secret Manager, with castor-node a stub that keeps its environment: the
# instance id is the one the cloud gives; a read that keeps failing (or answers nothing) is tried
# 5 times, then the script fails and castor-node never starts under a made-up id.
STUB_METADATA_CURL = r"""#!/bin/sh
echo "curl $*" >>"$STUB_DIR/log"
url=
for a in "$@"; do
  case $a in http*) url=$a ;; esac
done
case $url in
*/computeMetadata/v1/instance/name | */meta-data/instance-id)
  case $METADATA_MODE in
  fail) exit 22 ;;
  empty) exit 0 ;;
  esac ;;
esac
case $url in
*/api/token) echo "imds-session" ;;
*/meta-data/instance-id) echo "i-0123456789abcdef0" ;;
*/meta-data/placement/availability-zone) echo "us-east-1a" ;;
*/service-accounts/default/token) echo '{"access_token": "ya29.stub"}' ;;
*/computeMetadata/v1/instance/zone) echo "projects/123456/zones/us-central1-a" ;;
*/computeMetadata/v1/instance/name) echo "castor-0a1b2c" ;;
*:access) printf '{"payload": {"data": "%s"}}' "$(printf 'node-secret' | base64)" ;;
*) exit 2 ;;
esac
"""
STUB_NODE = """#!/bin/sh
env | grep '^CASTOR_' >"$STUB_DIR/node-env"
"""


def run_worker_start(label, script, want, instance_read, tmp, report):
    """want: the environment castor-node must start with (the rest of CASTOR_* not compared);
    instance_read: what the URL of the read of the instance's id or name ends with."""
    stubs = os.path.join(tmp, "worker-stubs")
    os.makedirs(stubs, exist_ok=True)
    for prog, text in (("aws", STUB_AWS), ("curl", STUB_METADATA_CURL), ("sleep", "#!/bin/sh\nexit 0\n"),
                       ("castor-node", STUB_NODE)):
        with open(os.path.join(stubs, prog), "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(os.path.join(stubs, prog), 0o755)
    if "/usr/local/bin/castor-node" not in script or "/run/castor-node" not in script:
        report.fault(label, "castor-node-start no longer runs /usr/local/bin/castor-node with "
                     "/run/castor-node: this check needs updating")
        return
    for mode in ("ok", "fail", "empty"):
        work = tempfile.mkdtemp(prefix=f"worker-{mode}-", dir=tmp)
        text = script.replace("/usr/local/bin/castor-node", os.path.join(stubs, "castor-node"))
        text = text.replace("/run/castor-node", os.path.join(work, "run"))
        env = dict(os.environ, PATH=stubs + os.pathsep + os.environ["PATH"], STUB_DIR=work,
                   STUB_MODE="found", METADATA_MODE=mode)
        p = subprocess.run(["sh", "-c", text], env=env, capture_output=True, text=True, timeout=60,
                           check=False)
        where = f"{label} ({mode})"
        started = os.path.exists(os.path.join(work, "node-env"))
        if mode == "ok":
            got = dict(line.split("=", 1) for line in read(os.path.join(work, "node-env")).splitlines()) \
                if started else {}
            wrong = {k: got.get(k) for k, v in want.items() if got.get(k) != v}
            if p.returncode != 0 or wrong:
                report.fault(where, f"exit {p.returncode}, castor-node started with {wrong} "
                             f"(expected {want}): {p.stderr.strip()[-200:]}")
            else:
                report.note(f"{where}: castor-node starts as {want['CASTOR_INSTANCE_ID']}")
            continue
        log = os.path.join(work, "log")
        reads = read(log).count(instance_read) if os.path.exists(log) else 0
        if p.returncode == 0 or started or reads != 5 or "cannot read" not in p.stderr:
            report.fault(where, f"a metadata read that fails must be tried 5 times, then stop with "
                         f"a message and castor-node not started: exit {p.returncode}, {reads} "
                         f"reads, castor-node {'started' if started else 'not started'}, "
                         f"{p.stderr.strip()[-200:]!r}")
        else:
            report.note(f"{where}: tried 5 times, stopped, castor-node not started: "
                        f"{p.stderr.strip()[-90:]}")


def check_worker_start(rendered, tmp, report):
    try:
        doc = yaml.safe_load(rendered["aws worker user-data"])
        files = {f["path"]: f["content"] for f in doc["write_files"]}
        run_worker_start("aws worker castor-node-start", files["/usr/local/sbin/castor-node-start"],
                         {"CASTOR_INSTANCE_ID": "i-0123456789abcdef0", "CASTOR_NODE_ZONE": "us-east-1a",
                          "CASTOR_NODE_RUN_AS": "castor-job",
                          "CASTOR_NODE_RUN_AS_UIDS": "61000-61999"},
                         "/meta-data/instance-id", tmp, report)
    except (yaml.YAMLError, KeyError, TypeError) as exc:
        report.fault("terraform/aws/templates/worker-init.yaml.tftpl", f"castor-node-start: {exc}")
    m = re.search(r"<<'CASTOR_START_END'\n(.*?)\nCASTOR_START_END\n",
                  rendered.get("gcp worker startup script", ""), re.S)
    if not m:
        report.fault("terraform/gcp/templates/worker-startup.sh.tftpl", "no castor-node-start in it")
        return
    run_worker_start("gcp worker castor-node-start", m.group(1),
                     {"CASTOR_INSTANCE_ID": "us-central1-a.castor-0a1b2c", "CASTOR_NODE_ZONE": "us-central1-a",
                      "CASTOR_NODE_RUN_AS": "castor-job", "CASTOR_NODE_RUN_AS_UIDS": "61000-61999"},
                     "/computeMetadata/v1/instance/name", tmp, report)


def run_token_script(label, script, names, tmp, report):
    """names: role => the parameter's or secret's name (whose basename the stubs' values carry)."""
    stubs = os.path.join(tmp, "stubs")
    os.makedirs(stubs, exist_ok=True)
    for prog, text in (("aws", STUB_AWS), ("curl", STUB_CURL), ("sleep", "#!/bin/sh\nexit 0\n")):
        with open(os.path.join(stubs, prog), "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(os.path.join(stubs, prog), 0o755)
    if not shutil.which("openssl"):
        report.note(f"{label}: no openssl here, the token script was not run")
        return
    for mode in ("found", "notfound", "transient"):
        work = tempfile.mkdtemp(prefix=f"tokens-{mode}-", dir=tmp)
        creds = os.path.join(work, "credentials")
        env = dict(os.environ, PATH=stubs + os.pathsep + os.environ["PATH"], STUB_DIR=work,
                   STUB_MODE=mode, CASTOR_CREDENTIALS_DIR=creds)
        p = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True,
                           timeout=60, check=False)
        where = f"{label} ({mode})"
        stored = sorted(n for n in os.listdir(work) if n.startswith(("put-", "add-")))
        tokens = {}
        for role in names:
            path = os.path.join(creds, f"{role}.token")
            if os.path.exists(path):
                tokens[role] = read(path)
        if mode == "transient":
            log = os.path.join(work, "log")
            gets = read(log).count(":access" if "curl" in label else "get-parameter") if os.path.exists(log) else 0
            if p.returncode == 0 or tokens or stored or gets != 5:
                report.fault(where, f"a failure other than not-found must be tried 5 times, then fail "
                             f"with no token made or written: exit {p.returncode}, {gets} reads, "
                             f"written {sorted(tokens)}, stored {stored}")
            else:
                report.note(f"{where}: tried 5 times, failed, nothing made or written: {p.stderr.strip()[-90:]}")
            continue
        if p.returncode != 0 or sorted(tokens) != sorted(names):
            report.fault(where, f"exit {p.returncode}, tokens {sorted(tokens)}: {p.stderr.strip()[-300:]}")
            continue
        bad = []
        for role, name in names.items():
            tok = tokens[role]
            if mode == "found":
                if tok != f"value-{os.path.basename(name)}":
                    bad.append(f"{role}: {tok!r} (the stored value, without a newline, expected)")
            elif not re.fullmatch(r"[0-9a-f]{48}", tok):
                bad.append(f"{role}: {tok!r} is not 48 hex digits without a newline")
            else:
                put = os.path.join(work, f"put-{os.path.basename(name)}")
                add = os.path.join(work, f"add-{os.path.basename(name)}")
                if os.path.exists(put):
                    kept = read(put)
                elif os.path.exists(add):
                    kept = base64.b64decode(json.loads(read(add))["payload"]["data"]).decode()
                else:
                    kept = None
                if kept != tok:
                    bad.append(f"{role}: stored {kept!r}, written {tok!r}")
        if mode == "found" and stored:
            bad.append(f"made tokens although every one was found: {stored}")
        if bad:
            report.fault(where, "; ".join(bad))
        else:
            report.note(f"{where}: {', '.join(sorted(names))}: "
                        + ("read back without a newline" if mode == "found" else "made, stored and written alike"))


# ---- step 4: checkov ----

def check_checkov(checkov, tfdir, report):
    p = subprocess.run([checkov, "-d", tfdir, "--framework", "terraform", "-o", "json", "--quiet",
                        "--compact", "--skip-download"], capture_output=True, text=True, check=False)
    try:
        data = json.loads(p.stdout)
    except json.JSONDecodeError:
        report.fault("checkov", f"no JSON answer (exit {p.returncode}): {p.stderr.strip()[-400:]}")
        return
    runs = data if isinstance(data, list) else [data]
    passed = failed = skipped = 0
    for run in runs:
        s = run.get("summary", {})
        passed += s.get("passed", 0)
        failed += s.get("failed", 0)
        skipped += s.get("skipped", 0)
        for c in run.get("results", {}).get("failed_checks", []):
            report.fault(f"checkov {c['check_id']}",
                         f"{c['file_path']}:{c['file_line_range'][0]} {c['resource']}: {c['check_name']}")
        for c in run.get("results", {}).get("skipped_checks", []):
            reason = (c.get("check_result") or {}).get("suppress_comment") or ""
            if not reason.strip() or reason.strip() == "No comment provided":
                report.fault(f"checkov {c['check_id']}", f"{c['file_path']} {c['resource']}: skipped without a reason")
    print(f"checkov: {passed} passed, {failed} failed, {skipped} skipped")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.normpath(os.path.join(HERE, "..", "..")))
    ap.add_argument("--castor", help="the castor program (for castor validate)")
    ap.add_argument("--checkov", help="the checkov program (default: beside this Python)")
    ap.add_argument("--only", choices=["structure", "validations", "templates", "checkov", "fmt"])
    ap.add_argument("dirs", nargs="*", help="check only the structure of these folders")
    args = ap.parse_args()
    report = Report()
    os.chdir(args.root)
    tfdir = os.path.join(args.root, "terraform")
    if args.dirs:
        mods = load_modules(args.dirs, report)
        for m in list(mods.values()):
            check_structure(m, report, mods)
        print(f"{len(mods)} module(s): {len(report.faults)} fault(s)")
        return 1 if report.faults else 0
    steps = [args.only] if args.only else ["structure", "validations", "templates", "checkov", "fmt"]
    mods = load_modules([tfdir], report)
    if "structure" in steps:
        for m in list(mods.values()):
            check_structure(m, report, mods)
        check_policy_actions(args.root, mods[os.path.join(tfdir, "aws")], report)
        check_role_permissions(args.root, mods[os.path.join(tfdir, "gcp")], report)
        nfiles = sum(len(m.files) for m in mods.values())
        print(f"structure: {len(mods)} modules, {nfiles} .tf files parsed")
    if "validations" in steps:
        for label in ("aws", "gcp"):
            check_validations(mods[os.path.join(tfdir, label)], label, report)
    if "templates" in steps:
        if not args.castor or not os.access(args.castor, os.X_OK):
            report.fault("templates", "--castor must name the castor program")
        else:
            check_templates(args.root, args.castor, report)
    if "checkov" in steps:
        checkov = args.checkov or os.path.join(os.path.dirname(sys.executable), "checkov")
        check_checkov(checkov, tfdir, report)
    if "fmt" in steps:
        tf = shutil.which("terraform")
        if tf:
            p = subprocess.run([tf, "fmt", "-check", "-recursive", tfdir], capture_output=True,
                               text=True, check=False)
            if p.returncode != 0:
                report.fault("terraform fmt", f"not formatted: {p.stdout.strip()}")
            else:
                print("terraform fmt -check: ok")
        else:
            print("terraform fmt -check: skipped (no terraform binary on PATH)")
    print(f"{len(report.faults)} fault(s)")
    return 1 if report.faults else 0


if __name__ == "__main__":
    sys.exit(main())
