#!/usr/bin/env python3
"""Expected tables of case 19 from semantics.md "APPLY CHANGES FROM SNAPSHOT", never from the runner.

Each batch is one snapshot file; its sequence is its position 1, 2, 3, ... in name order. A snapshot
is a full copy: keys new in it are inserted, keys whose values changed are updated, keys missing
from it are deleted (identical repeated rows count once). That is a change log of upserts at the
snapshot's sequence for every key present whose row differs from the previous snapshot, and of
deletes for the keys that vanished; the reference model folds it like any APPLY CHANGES log.
"""
import os, sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
from cdc_model import Model, read_batches, write

snaps = read_batches(os.path.join(here, "input.ndjson"))
for scd, tracked, out in ((1, None, "expected.ndjson"), (2, None, "expected.scd2.ndjson"),
                          (2, ["city"], "expected.scd2-except.ndjson")):
    m = Model(keys=["id"], sequence_by="seq", is_delete=lambda e: e["op"] == "D",
              columns=["name", "city"], scd=scd, tracked=tracked)
    prev = {}
    for n, snap in enumerate(snaps, start=1):
        cur = {r["id"]: r for r in snap}
        events = [dict(r, op="U", seq=n) for k, r in cur.items() if prev.get(k) != r]
        events += [{"op": "D", "id": k, "name": None, "city": None, "seq": n} for k in prev if k not in cur]
        m.apply_batch(events)
        prev = cur
    write(os.path.join(here, out), m.rows())
