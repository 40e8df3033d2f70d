"""The front door: the README is a front page that links into the docs, the docs pages it names exist, the
decision records have an index that says which are current, and nothing in the repository points outside it."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

OPERATIONS = ("install", "upgrade", "rule-changes", "sharding", "target-clusters", "monitoring", "security",
              "failures")
SITE_PAGES = {"docs/index.md", "docs/getting-started.md", "docs/tutorial/add-a-kind.md", "docs/rules.md",
              "docs/reference/rule-schema.md", "docs/reference/scenarios.md", "docs/reference/cli.md",
              "docs/testing.md", "docs/render.md", "docs/performance.md", "docs/architecture.md",
              "docs/decisions/index.md", *(f"docs/operations/{name}.md" for name in OPERATIONS)}
"""The site's pages, agreed by the layout of the documentation site (some are written beside this change)."""

WALKTHROUGH = re.compile(r"In another shell:\n\n```sh\n(.*?)```", re.S)


def words(text: str) -> int:
    """Words as a reader counts them: code blocks included, markup left out."""
    return len(re.findall(r"[A-Za-z0-9][\w'./-]*", text))


def walkthrough(path: Path) -> list[str]:
    """The kubectl commands of a page's walkthrough block (after 'In another shell:'), comments dropped."""
    block = WALKTHROUGH.search(path.read_text(encoding="utf-8"))
    assert block, f"{path.relative_to(ROOT)} has no walkthrough block after 'In another shell:'"
    return [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines() if line.startswith("kubectl ")]


def local_links(path: Path) -> list[str]:
    """The repository-relative targets of a Markdown page's relative links (anchors and web links dropped)."""
    targets = []
    for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8")):
        if "://" in target or target.startswith(("#", "mailto:")):
            continue
        resolved = (path.parent / target.split("#", 1)[0]).resolve()
        targets.append(resolved.relative_to(ROOT).as_posix())
    return targets


def test_the_readme_is_a_front_page() -> None:
    """At most about 1,500 words, the Quickstart's two commands, and links to every operations page and the
    results page."""
    text = README.read_text(encoding="utf-8")
    assert words(text) <= 1600, f"the README has {words(text)} words"
    quickstart = re.search(r"## Quickstart\n\n```sh\n(.*?)```", text, re.S)
    assert quickstart, "the README has no Quickstart block"
    commands = [line.split("#", 1)[0].strip() for line in quickstart.group(1).splitlines() if line.strip()]
    assert commands == ["./scripts/engine run", "./scripts/test"]
    links = set(local_links(README))
    for page in ("docs/getting-started.md", "docs/performance.md", "docs/architecture.md", "docs/rules.md",
                 "docs/decisions/index.md", *(f"docs/operations/{name}.md" for name in OPERATIONS)):
        assert page in links, f"the README does not link to {page}"


def test_the_readme_performance_table_has_five_lines() -> None:
    """Five figures in one table under Performance, and the link to the results page."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Performance", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|") and not set(line) <= set("|- :")]
    assert len(rows) == 6, rows  # the header and five figures
    assert "docs/performance.md" in section


def test_the_readme_walkthrough_is_the_getting_started_one() -> None:
    """The README's short walkthrough is a part of the Getting started page's, which a real-server test runs."""
    page = walkthrough(ROOT / "docs" / "getting-started.md")
    assert set(walkthrough(README)) <= set(page)


def test_the_docs_link_only_to_pages_that_exist() -> None:
    """Every relative link of the README and of the pages under docs/ names a file of the repository or a page
    of the site's layout."""
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    missing = [f"{page.relative_to(ROOT)} -> {target}" for page in pages for target in local_links(page)
               if not (ROOT / target).exists() and target not in SITE_PAGES]
    assert missing == []
    # The site is built from docs/ alone: a page's link out of it is a broken link there.
    outside = [f"{page.relative_to(ROOT)} -> {target}" for page in pages[1:] for target in local_links(page)
               if not target.startswith("docs/")]
    assert outside == []


def slug(heading: str) -> str:
    """A heading's anchor as the site's Markdown builds it: lower case, words joined by dashes, punctuation gone."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"[\s]+", "-", text).strip("-")


def test_the_docs_link_to_sections_that_exist() -> None:
    """A link to a section of a page (``page.md#section``) names a heading that page has."""
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    missing = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s#]+\.md)#([^)\s]+)\)", page.read_text(encoding="utf-8")):
            linked = (page.parent / target[0]).resolve()
            if not linked.is_file():
                continue
            text = re.sub(r"```.*?```", "", linked.read_text(encoding="utf-8"), flags=re.S)
            anchors = {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}
            if target[1] not in anchors:
                missing.append(f"{page.relative_to(ROOT)} -> {target[0]}#{target[1]}")
    assert missing == []


def test_every_operations_page_exists() -> None:
    """The operations pages the README's content moved to."""
    for name in OPERATIONS:
        page = ROOT / "docs" / "operations" / f"{name}.md"
        assert page.is_file(), page
        assert page.read_text(encoding="utf-8").startswith("# ")


def test_the_decision_index_names_every_record_and_its_status() -> None:
    """docs/decisions/index.md links every record in one row, saying whether it is current or superseded."""
    index = ROOT / "docs" / "decisions" / "index.md"
    text = index.read_text(encoding="utf-8")
    for record in sorted((ROOT / "docs" / "decisions").glob("[0-9][0-9][0-9][0-9]-*.md")):
        line = next((row for row in text.splitlines() if f"({record.name})" in row), None)
        assert line, f"the index does not link {record.name}"
        assert re.search(r"\b(current|superseded)\b", line, re.I), line
    rows = [row.split("|")[1].strip() for row in text.splitlines() if re.match(r"\| \[\d{4}\]", row)]
    assert sorted(row for row in set(rows) if rows.count(row) > 1) == [], "one row per record"


def test_no_file_refers_to_the_working_material_outside_the_repository() -> None:
    """No tracked file names the working material beside the checkout (the folder shared): a clone carries its own
    references."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True,
                           timeout=60).stdout.split("\0")
    outside = re.compile(r"\.\./shared\b|(?<![\w./-])shared/(?:bench|design|seeds|spec)\b|parents?\b.{0,20}\"shared\"")
    found = []
    for name in files:
        path = ROOT / name
        if not name or not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{name}:{number}" for number, line in enumerate(text.splitlines(), 1) if outside.search(line)]
    assert found == []
