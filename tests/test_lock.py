"""The image's dependencies: requirements/operator.lock pins, with hashes, exactly the closure of the declared
dependencies at the versions the tests run; deploy/Containerfile installs it by hash on a digest-pinned base
and leaves the lab and the test harness out."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import PackageNotFoundError, distribution, version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
CONTAINERFILE = (ROOT / "deploy" / "Containerfile").read_text(encoding="utf-8")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")
HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


def pins(path: Path) -> dict[str, tuple[str, list[str]]]:
    """Name -> (version, sha256 hashes) of a lock file written by `uv pip compile --generate-hashes`."""
    found: dict[str, tuple[str, list[str]]] = {}
    current: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if match := PIN.match(line):
            current = canonicalize_name(match[1])
            found[current] = (match[2], [])
        elif current is not None and (hashed := HASH.search(line)):
            found[current][1].append(hashed[1])
    return found


def closure(requirements: list[str]) -> set[str]:
    """The distributions these requirements need, transitively, by the installed metadata (markers evaluated
    here: Python 3.11 on Linux, what the lock is compiled for)."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in seen or (requirement.marker is not None and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        todo.extend(Requirement(r) for r in distribution(name).requires or ())
    return seen


def test_the_lock_pins_the_closure_of_the_declared_dependencies_with_hashes() -> None:
    """Installing it with --no-deps leaves nothing out (a dependency of a dependency added upstream fails here
    until the lock is recompiled) and brings nothing else; every artifact is checked by its sha256."""
    locked = pins(ROOT / "requirements" / "operator.lock")
    assert set(locked) == closure(PYPROJECT["project"]["dependencies"])
    assert all(hashes for _, hashes in locked.values())


def test_the_tests_run_the_versions_the_image_runs() -> None:
    """scripts/bootstrap.sh installs the lock into .venv first: what the suite tests is what the image holds."""
    locked = pins(ROOT / "requirements" / "operator.lock")
    installed = {}
    for name in locked:
        try:
            installed[name] = version(name)
        except PackageNotFoundError:
            installed[name] = "not installed"
    assert installed == {name: pinned for name, (pinned, _) in locked.items()}


def test_no_test_tool_is_locked_for_the_image() -> None:
    locked = pins(ROOT / "requirements" / "operator.lock")
    tools = {canonicalize_name(Requirement(r).name) for r in PYPROJECT["project"]["optional-dependencies"]["test"]}
    assert tools & set(locked) == set()


def test_the_build_lock_pins_setuptools_by_hash() -> None:
    locked = pins(ROOT / "requirements" / "build.lock")
    assert set(locked) == {"setuptools"} and locked["setuptools"][1]


def test_the_containerfile_installs_the_locks_by_hash_on_a_base_pinned_by_digest() -> None:
    base = re.search(r"^ARG BASE=(\S+)$", CONTAINERFILE, re.M)
    assert base is not None and re.fullmatch(r"docker\.io/library/python:3\.11-slim@sha256:[0-9a-f]{64}", base[1])
    assert re.findall(r"^FROM (\S+)", CONTAINERFILE, re.M) == ["${BASE}", "${BASE}"]
    assert "--require-hashes --no-deps -r /tmp/operator.lock" in CONTAINERFILE
    assert "--require-hashes --no-deps -r requirements/build.lock" in CONTAINERFILE
    assert "--no-deps --no-index /tmp/wheels/*.whl" in CONTAINERFILE
    assert "VERIFY THE DIGEST" in CONTAINERFILE  # written without a registry at hand: said where it is used


def test_the_image_copies_neither_the_lab_nor_the_harness_into_its_wheel() -> None:
    copied = re.findall(r"^COPY (?:--from=\S+ )?(\S+)", CONTAINERFILE, re.M)
    assert not [c for c in copied if c.startswith(("simulators", "tests", "bench", "examples"))]
    script = (ROOT / "scripts" / "build-operator-wheel").read_text(encoding="utf-8")
    copies = re.search(r'^cp -a (.*) "\$work/"$', script, re.M)
    assert copies and '"$ROOT/engine"' in copies[1] and "offline" not in copies[1] and "simulators" not in copies[1]
    assert 'rm -rf "$work/engine' not in script  # whole packages are left out, never parts of engine/
