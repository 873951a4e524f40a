#!/usr/bin/env python3
"""Generate src/protobuf/direct_generated.rs: protobuf decode functions that
fill k8s-openapi's structs field by field, for the messages reachable from
the kinds in ROOTS.

This is the second protobuf design, kept for measurement beside the
serde-driven decoder (src/protobuf/de.rs): one function per (message,
Rust struct) that matches field numbers and assigns k8s-openapi's public
fields directly, with no field names and no serde in between. It is tied to
one k8s-openapi version: the field names and types are read from that
version's sources, and the code compiles only against it (the private
`protobuf-generated` feature selects it).

Inputs:
- src/protobuf/schema_generated.rs (scripts/protobuf/gen_schema.py's table):
  per message its shape and, per field, number, JSON name, type, label and
  flags (inline, omit-zero);
- k8s-openapi's sources (K8S_OPENAPI_SRC, or the one under
  ~/.cargo/registry): per struct its Rust fields, their types, and the JSON
  name each is read from.

Usage:
    scripts/protobuf/gen_direct.py [--check]
"""
import glob
import os
import re
import sys

from generated_file import write_or_check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "src", "protobuf", "schema_generated.rs")
OUT = os.path.join(ROOT, "src", "protobuf", "direct_generated.rs")
K8S_OPENAPI = "k8s-openapi-0.29.0"
K8S_VERSION = "v1_34"
# (apiVersion, kind) of each top-level function.
ROOTS = [("v1", "Pod")]

MSG_RE = re.compile(r'^    m\("(\w+)", (\w+), &\[(.*)\]\),$')
FIELD_RE = re.compile(r'f\((\d+), "(\w*)", (Str|Bytes|Bool|I32|I64|Msg\((\d+)\)), (Single|Repeated|Map), ([\w |]+)\)')
KIND_RE = re.compile(r'^    \("([^"]*)", "(\w+)", (\d+)\),$')


def read_table():
    messages, kinds = [], {}
    for line in open(TABLE):
        m = MSG_RE.match(line.rstrip("\n"))
        if m:
            fields = []
            for f in FIELD_RE.finditer(m.group(3)):
                number, name, kind, msg, label, flags = f.groups()
                fields.append({
                    "number": int(number), "json": name,
                    "kind": "Msg" if msg else kind, "msg": int(msg) if msg else None,
                    "label": label, "inline": "INLINE" in flags, "omit_zero": "OMIT_ZERO" in flags,
                })
            messages.append({"name": m.group(1), "shape": m.group(2), "fields": fields})
            continue
        k = KIND_RE.match(line.rstrip("\n"))
        if k:
            kinds[(k.group(1), k.group(2))] = int(k.group(3))
    return messages, kinds


def k8s_openapi_src():
    if os.environ.get("K8S_OPENAPI_SRC"):
        return os.environ["K8S_OPENAPI_SRC"]
    found = glob.glob(os.path.expanduser(f"~/.cargo/registry/src/*/{K8S_OPENAPI}/src"))
    if not found:
        sys.exit(f"{K8S_OPENAPI} not found: build the crate once, or set K8S_OPENAPI_SRC")
    return found[0]


STRUCT_RE = re.compile(r"^pub struct (\w+) \{\n(.*?)^\}", re.S | re.M)
RUST_FIELD_RE = re.compile(r"^    pub (\w+): (.+),$", re.M)
JSON_KEY_RE = re.compile(r'"(\w+)" => Field::Key_(\w+),')


def read_structs(src):
    """Rust path (`api::core::v1::Pod`) -> {json name: (rust field, type)}."""
    base = os.path.join(src, K8S_VERSION)
    structs = {}
    for path in glob.glob(os.path.join(base, "**", "*.rs"), recursive=True):
        rel = os.path.relpath(os.path.dirname(path), base)
        text = open(path).read()
        for s in STRUCT_RE.finditer(text):
            types = dict(RUST_FIELD_RE.findall(s.group(2)))
            fields = {}
            for json, rust in JSON_KEY_RE.findall(text):
                if rust in types:
                    fields[json] = (rust, types[rust])
            structs["::".join(rel.split(os.sep) + [s.group(1)])] = fields
    return structs


def rust_path(t):
    return t.replace("crate::", "k8s_openapi::").replace("std::string::String", "String").replace(
        "std::vec::Vec", "Vec").replace("std::collections::BTreeMap", "std::collections::BTreeMap")


def unwrap(t, outer):
    if t.startswith(outer + "<") and t.endswith(">"):
        return t[len(outer) + 1:-1]
    return None


SPECIAL_TYPES = {
    "Time": "crate::apimachinery::pkg::apis::meta::v1::Time",
    "MicroTime": "crate::apimachinery::pkg::apis::meta::v1::MicroTime",
    "Quantity": "crate::apimachinery::pkg::api::resource::Quantity",
    "IntOrString": "crate::apimachinery::pkg::util::intstr::IntOrString",
}
RAW_JSON_TYPES = {
    "crate::apimachinery::pkg::apis::meta::v1::FieldsV1": "FieldsV1",
    "crate::apimachinery::pkg::runtime::RawExtension": "RawExtension",
}
SCALAR_TYPES = {"Str": "std::string::String", "Bytes": "crate::ByteString", "Bool": "bool", "I32": "i32", "I64": "i64"}


def snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


class Gen:
    def __init__(self, messages, structs):
        self.messages = messages
        self.structs = structs
        self.functions = {}  # (msg index, rust path) -> function name
        self.order = []
        self.bodies = {}
        self.names = set()
        self.edges = {}

    def function(self, index, path):
        key = (index, path)
        if key in self.functions:
            return self.functions[key]
        msg = self.messages[index]
        rust_name = path.rsplit("::", 1)[1]
        name = snake(msg["name"]) if msg["name"] == rust_name else f"{snake(msg['name'])}_into_{snake(rust_name)}"
        if name in self.names:
            name = f"{name}_{index}"
        self.names.add(name)
        self.functions[key] = name
        self.order.append(key)
        self.edges[key] = set()
        self.bodies[key] = self.body(index, path, key)
        return name

    def value_expr(self, field, leaf, msg_name, key):
        """An expression of Rust type `leaf` from `b: &[u8]` (a LEN value)
        or `v: u64` (a varint), and whether it reads `b`."""
        kind = field["kind"]
        if kind in SCALAR_TYPES:
            if leaf != SCALAR_TYPES[kind]:
                sys.exit(f"{msg_name}.{field['json']}: {kind} into {leaf}")
            return {
                "Str": ("string(b)", True),
                "Bytes": ("k8s_openapi::ByteString(b.to_vec())", True),
                "Bool": ("v != 0", False),
                "I32": ("v as i32", False),
                "I64": ("v as i64", False),
            }[kind]
        target = self.messages[field["msg"]]
        shape = target["shape"]
        if shape == "Object":
            if not leaf.startswith("crate::"):
                sys.exit(f"{msg_name}.{field['json']}: message {target['name']} into {leaf}")
            path = leaf[len("crate::"):]
            if path not in self.structs:
                sys.exit(f"{msg_name}.{field['json']}: no struct {path}")
            f = self.function(field["msg"], path)
            self.edges[key].add((field["msg"], path))
            return (f"{{ let mut m = {rust_path(leaf)}::default(); {f}(b, &mut m)?; m }}", True)
        if shape in SPECIAL_TYPES:
            if leaf != SPECIAL_TYPES[shape]:
                sys.exit(f"{msg_name}.{field['json']}: {shape} into {leaf}")
            return ({"Time": "time(b)?", "MicroTime": "micro_time(b)?", "Quantity": "quantity(b)?",
                     "IntOrString": "int_or_string(b)?"}[shape], True)
        if shape == "RawJson":
            if leaf not in RAW_JSON_TYPES:
                sys.exit(f"{msg_name}.{field['json']}: raw JSON into {leaf}")
            return (f"raw_json(b, \"{target['name']}\")?.map({rust_path(leaf)})", True)
        sys.exit(f"{msg_name}.{field['json']}: shape {shape} is not supported")

    def body(self, index, path, key):
        msg = self.messages[index]
        rust = self.structs[path]
        name = msg["name"]
        arms = []
        # Vectors end with room for their elements only: `push` grows a
        # vector to four elements or the next power of two, and the slack
        # would stay in the cache for as long as the object does (the
        # serde paths give `Vec` exact capacities instead).
        shrinks = []
        for field in msg["fields"]:
            n = field["number"]
            if field["inline"]:
                target = self.messages[field["msg"]]
                f = self.function(field["msg"], path)
                self.edges[key].add((field["msg"], path))
                arms.append(f"{n} => {f}(len(&mut cur, wt, NAME, {n})?, out)?,")
                continue
            if field["json"] not in rust:
                continue  # a field this k8s-openapi version does not have
            rfield, rtype = rust[field["json"]]
            optional = unwrap(rtype, "Option") is not None
            inner = unwrap(rtype, "Option") or rtype
            target = f"out.{rfield}"
            is_time = field["kind"] == "Msg" and self.messages[field["msg"]]["shape"] in ("Time", "MicroTime")
            is_raw = field["kind"] == "Msg" and self.messages[field["msg"]]["shape"] == "RawJson"
            def element(leaf, what):
                """The expression of one element of a map or repeated field
                whose elements are of Rust type `leaf`."""
                if not leaf:
                    sys.exit(f"{name}.{field['json']}: {what} into {rtype}")
                if is_time or is_raw:
                    sys.exit(f"{name}.{field['json']}: {what} of times or raw JSON")
                return self.value_expr(field, leaf, name, key)[0]

            if field["label"] == "Map":
                leaf = unwrap(inner, "std::collections::BTreeMap") or ""
                prefix = "std::string::String, "
                expr = element(leaf[len(prefix):] if leaf.startswith(prefix) else None, "map")
                slot = f"{target}.get_or_insert_with(Default::default)" if optional else target
                if field["kind"] in ("Bool", "I32", "I64"):
                    sys.exit(f"{name}.{field['json']}: map of numbers")
                arms.append(
                    f"{n} => {{ let (k, b) = entry(len(&mut cur, wt, NAME, {n})?, NAME, {n})?; "
                    f"{slot}.insert(string(k), {expr}); }}")
            elif field["label"] == "Repeated":
                expr = element(unwrap(inner, "std::vec::Vec"), "repeated")
                slot = f"{target}.get_or_insert_with(Vec::new)" if optional else target
                shrinks.append(f"if let Some(v) = &mut {target} {{ v.shrink_to_fit(); }}" if optional else f"{target}.shrink_to_fit();")
                if field["kind"] in ("Bool", "I32", "I64"):
                    arms.append(f"{n} => {{ let list = {slot}; varints(&mut cur, wt, NAME, {n}, |v| list.push({expr}))?; }}")
                else:
                    arms.append(f"{n} => {{ let b = len(&mut cur, wt, NAME, {n})?; {slot}.push({expr}); }}")
            else:
                expr, reads_len = self.value_expr(field, inner, name, key)
                read = f"let b = len(&mut cur, wt, NAME, {n})?;" if reads_len else f"let v = varint(&mut cur, wt, NAME, {n})?;"
                zero = "b.is_empty()" if reads_len else "v == 0"
                if field["kind"] == "Msg" and self.messages[field["msg"]]["shape"] == "Object":
                    # A message field given twice merges (the proto rule).
                    f = self.functions[(field["msg"], inner[len("crate::"):])]
                    slot = f"{target}.get_or_insert_with(Default::default)" if optional else f"&mut {target}"
                    arms.append(f"{n} => {{ {read} {f}(b, {slot})?; }}")
                elif is_time or is_raw:
                    # A zero time and empty raw JSON are JSON's null.
                    if not optional:
                        sys.exit(f"{name}.{field['json']}: a required time or raw JSON")
                    arms.append(f"{n} => {{ {read} {target} = {expr}; }}")
                else:
                    value = f"Some({expr})" if optional else expr
                    if field["omit_zero"]:
                        arms.append(f"{n} => {{ {read} if !({zero}) {{ {target} = {value}; }} }}")
                    else:
                        arms.append(f"{n} => {{ {read} {target} = {value}; }}")
        return name, path, arms, shrinks

    def check_acyclic(self):
        state = {}

        def visit(k, stack):
            if state.get(k) == 1:
                sys.exit(f"recursive messages: {' -> '.join(self.messages[i]['name'] for i, _ in stack)}")
            if state.get(k) == 2:
                return
            state[k] = 1
            for e in sorted(self.edges[k]):
                visit(e, stack + [e])
            state[k] = 2

        for k in self.order:
            visit(k, [k])

    def render(self, fname, key):
        name, path, arms, shrinks = self.bodies[key]
        out = [
            f"fn {fname}(buf: &[u8], out: &mut {rust_path('crate::' + path)}) -> Result<(), Error> {{",
            f'    const NAME: &str = "{name}";',
            "    let mut cur = Cursor::new(buf);",
            "    while !cur.at_end() {",
            "        let (number, wt) = cur.tag()?;",
            "        match number {",
        ]
        out += [f"            {a}" for a in arms]
        out += [
            "            _ => { cur.value(wt)?; }",
            "        }",
            "    }",
            "    let _ = NAME;" if not arms else None,
        ]
        out += [f"    {line}" for line in shrinks]
        out += [
            "    Ok(())",
            "}",
            "",
        ]
        return [line for line in out if line is not None]


def main():
    check = "--check" in sys.argv[1:]
    messages, kinds = read_table()
    structs = read_structs(k8s_openapi_src())
    gen = Gen(messages, structs)
    roots = []
    for api_version, kind in ROOTS:
        index = kinds[(api_version, kind)]
        group = "core" if api_version == "v1" else api_version.split("/")[0].split(".")[0]
        version = api_version.split("/")[-1]
        path = f"api::{group}::{version}::{kind}"
        roots.append((kind, path, gen.function(index, path)))
    gen.check_acyclic()
    lines = [
        "// @generated by scripts/protobuf/gen_direct.py from schema_generated.rs and",
        f"// the sources of {K8S_OPENAPI} ({K8S_VERSION}). Do not edit.",
        "",
        "use super::direct_read::*;",
        "",
    ]
    for kind, path, fname in roots:
        lines += [
            f"/// The fields of a `{kind}` message, into `out`.",
            f"pub(super) fn decode_{snake(kind)}(buf: &[u8], out: &mut {rust_path('crate::' + path)}) -> Result<(), Error> {{",
            f"    {fname}(buf, out)",
            "}",
            "",
        ]
    for key in gen.order:
        lines += gen.render(gen.functions[key], key)
    content = "\n".join(lines)
    write_or_check(OUT, content, check, "scripts/protobuf/gen_direct.py",
                   f"wrote {OUT}: {len(gen.order)} functions, {content.count(chr(10))} lines")


if __name__ == "__main__":
    main()
