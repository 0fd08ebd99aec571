"""requirements.lock pins the whole tree that scripts/test and the README's demo command install:
every dependency pyproject.toml names (test tools included) is pinned there, and the venv the
suite runs in holds exactly those versions. A dependency added without `bash scripts/lock`
fails here, before a fresh clone installs something CI never ran."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

from tests.conftest import REPO

LOCK = REPO / "requirements.lock"


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pins() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            name, version = line.split("==", 1)
            pins[_name(name)] = version.split()[0]
    return pins


def test_every_declared_dependency_is_pinned():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = project["dependencies"] + project["optional-dependencies"]["test"]
    pins = _pins()
    assert len(pins) > len(declared)  # the transitive tree, not only the direct names
    assert [r for r in declared if _name(r) not in pins] == []


def test_the_suite_runs_on_the_locked_versions():
    wrong = {}
    for name, version in _pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            wrong[name] = (version, None)
            continue
        if installed != version:
            wrong[name] = (version, installed)
    assert wrong == {}, "the venv differs from requirements.lock: run bash scripts/test (it installs with -c)"
