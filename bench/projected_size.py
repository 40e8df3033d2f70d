"""Measurement: the bytes a K-ORC User takes in a cache, whole and cut to what the name claims read (decision 0040).

    .venv/bin/python bench/projected_size.py

Runs the demo world (``engine demo``'s simulated K-ORC and ESO on the in-memory cluster) until its KeystoneUser is
Ready, takes its K-ORC User as a cache stores it (managedFields cut to the Apply entries, keys and short values
interned) and cuts it to the paths ``kinds.projections`` derives from the rules. Counts the bytes each object holds
on its own: dicts, lists, numbers and strings longer than 16 characters (map keys and shorter strings are interned,
shared by every cached object). Prints one JSON document; the per-replica estimate for T Users over N replicas is
``whole * T / N + projected * T`` (before: ``whole * T``).
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.cluster.kube.store import SHORT_TEXT, interned, stripped  # noqa: E402
from engine.cluster.projection import project, tree  # noqa: E402
from engine.rules.catalog import load_catalog  # noqa: E402
from engine.runtime.kinds import projections  # noqa: E402
from simulators import demo as story  # noqa: E402

USER = ("openstack.k-orc.cloud/v1alpha1", "User")


def own_bytes(value: Any, seen: set[int]) -> int:
    """Bytes of ``value`` not shared with other cached objects (interned keys and short strings excluded)."""
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, str):
        return 0 if len(value) <= SHORT_TEXT else sys.getsizeof(value)
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(own_bytes(item, seen) for item in value.values())
    elif isinstance(value, list):
        size += sum(own_bytes(item, seen) for item in value)
    return size


def main() -> None:
    demo = story.Demo(io.StringIO())
    demo.manager.start()
    demo.cluster.create(story.ORDER)
    demo.run(story.PATIENCE)
    shape = tree(projections(load_catalog(ROOT / "rules"))[USER])
    found = []
    for user in demo.cluster.list(*USER).items:
        whole = interned(stripped(user))
        cut = project(whole, shape)
        found.append({"name": user["metadata"]["name"], "whole_bytes": own_bytes(whole, set()),
                      "projected_bytes": own_bytes(cut, set()),
                      "whole_json_bytes": len(json.dumps(whole)), "projected_json_bytes": len(json.dumps(cut))})
    print(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
