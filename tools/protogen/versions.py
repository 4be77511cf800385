"""Version sets of a field within a message, and C conditions over them."""


class FieldVersions:
    """Per-version facts about one field, restricted to the message's valid
    versions. Every set holds plain ints."""

    def __init__(self, message, field):
        valid = message.valid
        self.universe = (valid.lo, valid.hi)
        all_versions = set(range(valid.lo, valid.hi + 1))
        flex = {v for v in all_versions if message.flexible.contains(v)}
        self.present = {v for v in all_versions if field.versions.contains(v)}
        self.absent = all_versions - self.present
        self.tagged = {v for v in self.present if field.tagged.contains(v) and v in flex}
        self.regular = self.present - self.tagged
        self.nullable = {v for v in all_versions if field.nullable.contains(v)}
        if field.flexible_override is not None:
            self.compact = {v for v in flex if field.flexible_override.contains(v)}
        else:
            self.compact = flex


def version_cond(versions, universe):
    """C expression over `version` that is true exactly for `versions`,
    assuming version already lies within universe (lo, hi)."""
    lo_u, hi_u = universe
    vs = sorted(v for v in set(versions) if lo_u <= v <= hi_u)
    if not vs:
        return "0"
    if len(vs) == hi_u - lo_u + 1:
        return "1"
    runs = []
    start = prev = vs[0]
    for v in vs[1:]:
        if v == prev + 1:
            prev = v
            continue
        runs.append((start, prev))
        start = prev = v
    runs.append((start, prev))
    parts = []
    for lo, hi in runs:
        p = []
        if lo == hi and lo > lo_u and hi < hi_u:
            p.append("version == %d" % lo)
        else:
            if lo > lo_u:
                p.append("version >= %d" % lo)
            if hi < hi_u:
                p.append("version <= %d" % hi)
        parts.append(" && ".join(p))
    if len(parts) == 1:
        return parts[0]
    return " || ".join("(%s)" % p for p in parts)


def cond_within(prop, active, universe):
    """Condition for `prop` when the code only runs for versions in `active`."""
    if not active or active <= prop:
        return "1"
    if not (active & prop):
        return "0"
    return version_cond(prop, universe)


def pick(cond, when_true, when_false):
    if cond == "1":
        return when_true
    if cond == "0":
        return when_false
    return "(%s) ? %s : %s" % (cond, when_true, when_false)

