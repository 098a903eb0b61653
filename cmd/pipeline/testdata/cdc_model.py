"""An independent reference model of APPLY CHANGES, written from docs/semantics.md only.

It never looks at the runner. The acceptance cases' compute_expected.py scripts use it to derive
their expected.ndjson from input.ndjson.

The guiding rule (semantics.md "APPLY CHANGES"): the target equals the result of applying every
event received so far, in sequence order, in one batch. So the model keeps, per key, the distinct
event chosen for each sequence value (the tie rules decide which one), and folds those in sequence
order. The tie rules (a Decision of semantics.md):
  - same key and sequence inside one batch: a delete beats an upsert; between upserts, the later
    arrival wins;
  - across batches: a delete beats a stored upsert at the same sequence; an upsert whose sequence
    equals one already stored is a no-op.
Truncates (SCD type 1): remove every row whose sequence is at or below the truncate's; events at
or below the highest truncate change nothing.
Tombstone GC is not modelled (every case runs well inside the two-day window).
"""
import json
from decimal import Decimal


def read_batches(path):
    """Events of input.ndjson grouped by _batch (default 1), in arrival order."""
    batches = {}
    for line in open(path):
        if line.strip():
            ev = json.loads(line, parse_float=Decimal)
            batches.setdefault(ev.pop("_batch", 1), []).append(ev)
    return [batches[b] for b in sorted(batches)]


class Model:
    def __init__(self, keys, sequence_by, is_delete, columns, is_truncate=None,
                 scd=1, ignore_null_updates=False, tracked=None):
        """keys, sequence_by: column names (sequence_by a list: compared left to right);
        is_delete / is_truncate: predicates on an event; columns: the target's non-key data
        columns (after column_list / except_column_list); tracked: SCD2 tracked columns
        (default: all of columns)."""
        self.keys = keys
        self.seq = sequence_by if isinstance(sequence_by, list) else [sequence_by]
        self.struct_seq = isinstance(sequence_by, list)
        self.is_delete = is_delete
        self.is_truncate = is_truncate or (lambda e: False)
        self.columns = columns
        self.scd = scd
        self.ignore_nulls = ignore_null_updates
        self.tracked = tracked if tracked is not None else list(columns)
        self.events = {}       # key -> {seqtuple: ("D"|"U", row)}
        self.truncates = []    # truncate sequences

    def seqof(self, e):
        return tuple(e[c] for c in self.seq)

    def keyof(self, e):
        return tuple(e[c] for c in self.keys)

    def apply_batch(self, batch):
        chosen = {}  # (key, seq) -> (kind, row), ties inside the batch resolved
        for e in batch:
            if self.is_truncate(e):
                self.truncates.append(self.seqof(e))
                continue
            k, s = self.keyof(e), self.seqof(e)
            assert None not in k and None not in s, "NULL key or sequence: the batch must fail"
            kind = "D" if self.is_delete(e) else "U"
            prev = chosen.get((k, s))
            if prev is not None and prev[0] == "D":
                continue  # a delete beats an upsert (and an equal delete changes nothing)
            chosen[(k, s)] = (kind, e)  # later arrival wins between upserts
        for (k, s), (kind, e) in chosen.items():
            stored = self.events.setdefault(k, {})
            if s in stored:
                if stored[s][0] == "U" and kind == "D":
                    stored[s] = (kind, e)  # a delete beats a stored upsert
                continue  # an upsert equal to the stored sequence is a no-op
            stored[s] = (kind, e)

    def _merge(self, current, e):
        if not self.ignore_nulls or current is None:
            return {c: e.get(c) for c in self.columns}
        return {c: (current[c] if e.get(c) is None else e.get(c)) for c in self.columns}

    def scd1_rows(self):
        out = []
        for k, evs in self.events.items():
            current = None
            for s in sorted(evs):
                kind, e = evs[s]
                if kind == "D":
                    current = None
                else:
                    current = self._merge(current, e)
                # a truncate between this event and the next removes the row
                nxt = [t for t in self.truncates if t >= s]
                later = [x for x in sorted(evs) if x > s]
                if nxt and (not later or min(nxt) < later[0]):
                    current = None
            if current is not None:
                row = dict(zip(self.keys, k))
                row.update(current)
                out.append(row)
        return out

    def _seqval(self, s):
        if self.struct_seq:
            return dict(zip(self.seq, s))
        return s[0]

    def scd2_rows(self):
        out = []
        for k, evs in self.events.items():
            versions = []  # [start, end, values]
            open_v = None
            for s in sorted(evs):
                kind, e = evs[s]
                if kind == "D":
                    if open_v is not None:
                        open_v[1] = s
                        open_v = None
                    continue
                values = self._merge(open_v[2] if open_v else None, e)
                if open_v is None:
                    open_v = [s, None, values]
                    versions.append(open_v)
                elif any(values[c] != open_v[2][c] for c in self.tracked):
                    open_v[1] = s
                    open_v = [s, None, values]
                    versions.append(open_v)
                else:
                    open_v[2] = values  # untracked columns rewrite the version in place
            for start, end, values in versions:
                row = dict(zip(self.keys, k))
                row.update(values)
                row["__START_AT"] = self._seqval(start)
                row["__END_AT"] = None if end is None else self._seqval(end)
                out.append(row)
        return out

    def rows(self):
        return self.scd1_rows() if self.scd == 1 else self.scd2_rows()


def dumps(v):
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, dict):
        return "{" + ", ".join(json.dumps(k) + ": " + dumps(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(dumps(x) for x in v) + "]"
    return json.dumps(v)


def write(path, rows):
    rows = sorted(rows, key=lambda r: json.dumps({k: str(v) for k, v in r.items()}, sort_keys=True))
    with open(path, "w") as f:
        for r in rows:
            f.write(dumps(r) + "\n")
