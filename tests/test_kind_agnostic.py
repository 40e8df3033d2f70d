"""The engine package stays kind-agnostic: no seeded kind or external system is named in it."""

import pathlib
import re

FORBIDDEN = re.compile(r"keystone|k-orc|korc|openbao|pushsecret|rabbit|vhost|controlplane", re.IGNORECASE)
ENGINE = pathlib.Path(__file__).resolve().parent.parent / "engine"


def test_engine_names_no_order_kind() -> None:
    """Every file under engine/ is free of kind-specific names."""
    offenders = [
        f"{path.relative_to(ENGINE.parent)}:{lineno}: {line.strip()}"
        for path in sorted(ENGINE.rglob("*"))
        if path.is_file() and path.suffix in {".py", ".yaml", ".j2", ".json", ".txt"}
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FORBIDDEN.search(line)
    ]
    assert offenders == []
