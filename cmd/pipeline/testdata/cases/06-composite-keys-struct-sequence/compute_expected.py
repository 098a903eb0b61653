#!/usr/bin/env python3
"""Expected tables of case 06 from the documented rules (../../cdc_model.py), never from the runner."""
import os, sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
from cdc_model import Model, read_batches, write

for scd, out in ((2, "expected.ndjson"), (1, "expected.scd1.ndjson")):
    m = Model(keys=["region", "id"], sequence_by=["epoch", "lsn"], is_delete=lambda e: e["op"] == "D",
              columns=["v"], scd=scd)
    for b in read_batches(os.path.join(here, "input.ndjson")):
        m.apply_batch(b)
    write(os.path.join(here, out), m.rows())
