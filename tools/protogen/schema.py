"""Reads Kafka JSON message schemas into a small model for code generation."""

import json
import os
import re

SCHEMA_DIRS = ["message", "metadata", "group-coordinator", "transaction-coordinator", "remote-log-metadata"]

MAX_VERSION = 32767

C_KEYWORDS = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool",
    "true", "false", "alignas", "alignof", "noreturn", "static_assert", "thread_local",
}

PRIMITIVES = {"int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "uuid", "string", "bytes",
              "records"}


class SchemaError(Exception):
    pass


def strip_comments(text):
    """Removes // comments that are outside JSON strings."""
    out = []
    i = 0
    in_string = False
    n = len(text)
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if c == '"':
            in_string = True
            out.append(c)
            i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def snake(name):
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


class VersionRange:
    """An inclusive version range; empty when lo > hi."""

    def __init__(self, lo, hi):
        self.lo = lo
        self.hi = hi

    @staticmethod
    def parse(text, what):
        if text is None:
            return None
        text = str(text).strip()
        if text == "none":
            return VersionRange(1, 0)
        m = re.fullmatch(r"(\d+)\+", text)
        if m:
            return VersionRange(int(m.group(1)), MAX_VERSION)
        m = re.fullmatch(r"(\d+)-(\d+)", text)
        if m:
            return VersionRange(int(m.group(1)), int(m.group(2)))
        m = re.fullmatch(r"(\d+)", text)
        if m:
            return VersionRange(int(m.group(1)), int(m.group(1)))
        raise SchemaError("bad version range %r in %s" % (text, what))

    def empty(self):
        return self.lo > self.hi

    def contains(self, v):
        return self.lo <= v <= self.hi

    def intersect(self, other):
        return VersionRange(max(self.lo, other.lo), min(self.hi, other.hi))

    def __repr__(self):
        return "%d-%d" % (self.lo, self.hi)


class Field:
    def __init__(self):
        self.name = ""
        self.cname = ""
        self.type = ""          # element type name for arrays
        self.is_array = False
        self.struct = None      # StructDef when the (element) type is a struct
        self.versions = None
        self.nullable = VersionRange(1, 0)
        self.tagged = VersionRange(1, 0)
        self.tag = None
        self.default = None     # raw default from the schema (string, bool, None)
        self.has_default = False
        self.flexible_override = None  # field-level flexibleVersions (strings only)
        self.ignorable = False

    def is_struct(self):
        return self.struct is not None

    def nullable_ever(self):
        return not self.nullable.empty()

    def default_is_null(self):
        return self.has_default and (self.default is None or str(self.default) in ("null", "None"))


class StructDef:
    def __init__(self, name, cname, fields, message):
        self.name = name
        self.cname = cname
        self.fields = fields
        self.message = message
        self.needs_is_default = False


class Message:
    def __init__(self):
        self.name = ""
        self.cname = ""
        self.kind = ""
        self.api_key = None
        self.valid = None
        self.flexible = None
        self.listeners = []
        self.unstable = False
        self.top = None
        self.structs = []       # nested struct types, children before parents
        self.source = ""

    def flexible_min(self):
        if self.flexible is None or self.flexible.empty():
            return -1
        return self.flexible.lo


def parse_default(raw):
    if raw is None:
        return None
    return raw


class SchemaLoader:
    def __init__(self, root, overlay=None):
        self.root = root
        # A folder of the same layout whose files replace (or add to) the
        # root's: later Kafka versions of a message than the copied schemas.
        self.overlay = overlay
        self.messages = []

    def load(self):
        for sub in SCHEMA_DIRS:
            paths = {}
            for base in (self.root, self.overlay):
                folder = os.path.join(base, sub) if base else None
                if not folder or not os.path.isdir(folder):
                    continue
                for fn in os.listdir(folder):
                    if fn.endswith(".json"):
                        paths[fn] = os.path.join(folder, fn)
            for fn in sorted(paths):
                with open(paths[fn], encoding="utf-8") as f:
                    doc = json.loads(strip_comments(f.read()))
                self.messages.append(self.build_message(doc, sub + "/" + fn))
        self.messages.sort(key=lambda m: (m.cname, m.source))
        self.resolve_names()
        return self.messages

    def build_message(self, doc, source):
        m = Message()
        m.source = source
        m.name = doc["name"]
        m.cname = snake(m.name)
        m.kind = doc.get("type", "data")
        m.api_key = doc.get("apiKey")
        m.valid = VersionRange.parse(doc.get("validVersions"), source)
        m.flexible = VersionRange.parse(doc.get("flexibleVersions", "none"), source)
        m.listeners = list(doc.get("listeners", []))
        m.unstable = bool(doc.get("latestVersionUnstable", False))
        # Common structs first: fields may refer to them by type name.
        known = {}
        self.pending = []
        for cs in doc.get("commonStructs", []):
            self.build_struct(m, cs["name"], cs.get("fields", []), known)
        m.top = StructDef(m.name, m.cname, self.build_fields(m, doc.get("fields", []), known), m)
        # References may name a struct defined later in the file.
        for f, where in self.pending:
            if f.type not in known:
                raise SchemaError("%s: unknown type %s" % (where, f.type))
            f.struct = known[f.type]
        m.structs = self.order_structs(m.structs)
        return m

    @staticmethod
    def order_structs(structs):
        """Orders struct types so each comes after the types it embeds
        (definition order otherwise), as C needs complete types."""
        done = []
        seen = set()

        def visit(sd):
            if id(sd) in seen:
                return
            seen.add(id(sd))
            for f in sd.fields:
                if f.struct is not None:
                    visit(f.struct)
            done.append(sd)
        for sd in structs:
            visit(sd)
        return done

    def build_struct(self, m, name, fields_json, known):
        if name in known:
            raise SchemaError("%s: struct %s defined twice" % (m.source, name))
        sd = StructDef(name, m.cname + "_" + snake(name), None, m)
        known[name] = sd
        sd.fields = self.build_fields(m, fields_json, known)
        m.structs.append(sd)
        return sd

    def build_fields(self, m, fields_json, known):
        out = []
        for fj in fields_json:
            f = Field()
            f.name = fj["name"]
            f.cname = snake(f.name)
            if f.cname in C_KEYWORDS:
                f.cname += "_"
            t = fj["type"]
            f.is_array = t.startswith("[]")
            base = t[2:] if f.is_array else t
            f.type = base
            where = "%s field %s" % (m.source, f.name)
            f.tagged = VersionRange.parse(fj.get("taggedVersions"), where) or VersionRange(1, 0)
            f.versions = VersionRange.parse(fj.get("versions"), where)
            if f.versions is None:
                if not f.tagged.empty():
                    f.versions = VersionRange(f.tagged.lo, f.tagged.hi)
                else:
                    raise SchemaError("%s: no versions" % where)
            f.nullable = VersionRange.parse(fj.get("nullableVersions"), where) or VersionRange(1, 0)
            f.tag = int(fj["tag"]) if fj.get("tag") is not None else None
            if not f.tagged.empty() and f.tag is None:
                raise SchemaError("%s: taggedVersions without tag" % where)
            f.has_default = "default" in fj
            f.default = fj.get("default")
            f.ignorable = bool(fj.get("ignorable", False))
            f.flexible_override = VersionRange.parse(fj.get("flexibleVersions"), where)
            if base not in PRIMITIVES:
                if "fields" in fj:
                    f.struct = self.build_struct(m, base, fj["fields"], known)
                elif base in known:
                    f.struct = known[base]
                else:
                    self.pending.append((f, where))
            elif "fields" in fj:
                raise SchemaError("%s: primitive type with fields" % where)
            out.append(f)
        seen = {}
        for f in out:
            # Array members also claim <name>_count; resolve clashes by suffix.
            while f.cname in seen or (f.is_array and f.cname + "_count" in seen):
                f.cname += "_"
            seen[f.cname] = f
            if f.is_array:
                seen[f.cname + "_count"] = f
        return out

    def resolve_names(self):
        """Makes every C struct name unique across all schemas: on a clash the
        later one (in sorted schema order) gets a numeric suffix."""
        taken = set()
        self.renamed = []
        tops = [m.top for m in self.messages]
        nested = [sd for m in self.messages for sd in m.structs]
        for sd in tops + nested:
            name = sd.cname
            n = 2
            while name in taken:
                name = "%s_%d" % (sd.cname, n)
                n += 1
            if name != sd.cname:
                self.renamed.append((sd.cname, name, sd.message.source))
                sd.cname = name
            taken.add(name)
        for m in self.messages:
            m.cname = m.top.cname
