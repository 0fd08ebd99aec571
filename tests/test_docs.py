"""The docs stay true: the settings page is generated from `Settings`, CI runs exactly the
README's test command, and the README stays a short landing page whose links resolve."""

import re
from pathlib import Path

from agent.config import Settings, settings_page

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
README_MAX_BYTES = 12 * 1024


def test_settings_page_is_generated_from_settings():
    page = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    missing = [f"ASKDESK_{n.upper()}" for n in Settings.model_fields if f"`ASKDESK_{n.upper()}`" not in page]
    assert not missing, f"docs/settings.md lacks {missing}; regenerate with `python -m agent.config > docs/settings.md`"
    assert page == settings_page(), "docs/settings.md is stale; regenerate with `python -m agent.config > docs/settings.md`"


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci in README.read_text(encoding="utf-8")


def test_readme_is_a_landing_page():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move detail into docs/ (limit {README_MAX_BYTES})"


def _relative_links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t for t in targets if not re.match(r"^[a-z]+:", t) and not t.startswith("#")]


def test_relative_links_in_readme_and_docs_resolve():
    broken = []
    for page in [README, *sorted((REPO / "docs").glob("*.md"))]:
        for target in _relative_links(page):
            if not (page.parent / target.split("#", 1)[0]).exists():
                broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert not broken, f"broken links: {broken}"
