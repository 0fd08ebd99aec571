"""Prompts load from the package and are validated at start-up, naming prompt and variable."""

from __future__ import annotations

import pytest

from agent.prompts import REQUIRED, PromptError, default_prompts, load_prompts
from agent.turn.service import Askdesk

GOOD = """
name: router
version: 2
description: test router
variables: [domain, capabilities, history, message]
template: "{{ domain }} {{ capabilities }} {{ history }} {{ message }}"
"""


def write(tmp_path, name: str, text: str):
    (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_package_prompts_load_and_cover_everything_the_code_renders():
    prompts = default_prompts()
    assert set(REQUIRED) <= set(prompts.prompts)
    assert prompts.get("router").version and prompts.get("agent").description
    text = prompts.render("refusal", capabilities="CAPS", examples="")
    assert "CAPS" in text and "Try asking" not in text
    assert '"EX?"' in prompts.render("greeting", capabilities="CAPS", examples='"EX?"')


def test_template_using_an_undeclared_variable_is_a_load_error(tmp_path):
    write(tmp_path, "router.yaml", GOOD.replace("{{ message }}", "{{ mesage }}"))
    with pytest.raises(PromptError, match=r"router.*undeclared.*mesage"):
        load_prompts(tmp_path)


def test_declared_but_unused_variable_is_a_load_error(tmp_path):
    write(tmp_path, "router.yaml", GOOD.replace("[domain,", "[extra, domain,"))
    with pytest.raises(PromptError, match=r"router.*unused.*extra"):
        load_prompts(tmp_path)


def test_prompt_whose_variables_differ_from_what_the_code_renders_is_a_load_error(tmp_path):
    write(tmp_path, "router.yaml", GOOD.replace("{{ history }} ", "").replace(" history,", ""))
    with pytest.raises(PromptError, match=r"'router'.*history"):
        load_prompts(tmp_path)


def test_syntax_error_names_the_prompt(tmp_path):
    write(tmp_path, "router.yaml", GOOD.replace("{{ message }}", "{% if message %}"))
    with pytest.raises(PromptError, match=r"router.*syntax"):
        load_prompts(tmp_path)


def test_missing_or_unknown_variable_at_render_names_both():
    prompt = default_prompts().get("too_long")
    with pytest.raises(PromptError, match=r"'too_long'.*missing.*length"):
        prompt.render(limit=3)
    with pytest.raises(PromptError, match=r"unknown.*colour"):
        prompt.render(limit=3, length=4, colour="red")


def test_a_broken_prompt_set_stops_the_service_at_start_up(tmp_path, settings):
    """Askdesk validates its prompts when it is created, not in the middle of a turn."""
    import shutil
    from importlib.resources import files

    for entry in files("prompts").iterdir():
        if entry.name.endswith(".yaml"):
            shutil.copy(str(entry), tmp_path / entry.name)
    text = (tmp_path / "messages.yaml").read_text().replace("{{ ref }}", "{{ reference }}", 1)
    (tmp_path / "messages.yaml").write_text(text)
    with pytest.raises(PromptError, match=r"'provider_error'.*reference"):
        Askdesk.create(settings.model_copy(update={"prompts_dir": tmp_path}), runtime=object())
