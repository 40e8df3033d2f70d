"""The engine and offline packages stay kind-agnostic: no seeded kind or external system is named in them."""

import pathlib
import re

FORBIDDEN = re.compile(r"keystone|k-orc|korc|openbao|pushsecret|rabbit|vhost|controlplane", re.IGNORECASE)
ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = (ROOT / "engine", ROOT / "offline")


def test_engine_names_no_order_kind() -> None:
    """Every file under engine/ and offline/ (the operator and the offline world) is free of kind-specific names."""
    offenders = [
        f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}"
        for package in PACKAGES
        for path in sorted(package.rglob("*"))
        if path.is_file() and path.suffix in {".py", ".yaml", ".j2", ".json", ".txt"}
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FORBIDDEN.search(line)
    ]
    assert offenders == []
