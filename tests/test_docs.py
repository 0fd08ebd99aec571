"""The README documents every setting and CI runs exactly the README's test command."""

from pathlib import Path

from agent.config import Settings

REPO = Path(__file__).resolve().parent.parent


def test_every_setting_is_in_the_readme_table():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [f"ASKDESK_{n.upper()}" for n in Settings.model_fields if f"`ASKDESK_{n.upper()}`" not in readme]
    assert not missing, f"README settings table lacks {missing}; regenerate with `python -m agent.config`"


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci in (REPO / "README.md").read_text(encoding="utf-8")
