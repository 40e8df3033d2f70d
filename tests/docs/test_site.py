"""The documentation site builds with warnings as errors: a broken link, a missing page or a snippet whose file is
gone fails here (mkdocs.yml sets strict; this build passes --strict again so a config edit cannot turn it off)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def build(tmp_path: Path, config: Path = ROOT / "mkdocs.yml") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def nav_pages(entries: list[object]) -> list[str]:
    pages: list[str] = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages.extend(nav_pages(value) if isinstance(value, list) else [str(value)])
    return pages


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """`mkdocs build --strict` succeeds and writes a page for every nav entry."""
    built = build(tmp_path)
    assert built.returncode == 0, built.stderr[-4000:]
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    for page in nav_pages(config["nav"]):
        stem = page.removesuffix(".md")
        html = tmp_path / "site" / (stem.removesuffix("index") if stem.endswith("index") else stem + "/") / "index.html"
        assert html.is_file(), f"{page} was not built"


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The strict build is a real gate: a page linking to a page that does not exist makes it fail."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the guide](missing.md).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text("site_name: t\ndocs_dir: docs\ntheme: {name: material}\n")
    built = build(tmp_path, config)
    assert built.returncode != 0
    assert "missing.md" in built.stderr
