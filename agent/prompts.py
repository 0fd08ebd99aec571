"""Prompts from `prompts/*.yaml`, loaded and validated once at start-up.

Each YAML file holds one prompt (name, version, description, variables, template) or a
`prompts:` list of them (messages.yaml). Templates are Jinja2 with StrictUndefined, and the
declared `variables` must match what the template uses exactly, so a typo is a start-up
error naming the prompt and the variable instead of a surprise in the middle of a turn.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from jinja2 import Environment, StrictUndefined, Template, TemplateSyntaxError, UndefinedError, meta

from agent.yamlio import safe_load

_ENV = Environment(undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False)
# Plain JSON for prompts (Jinja's `tojson` HTML-escapes <, > and & for web pages).
_ENV.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False)


class PromptError(ValueError):
    """A prompt file is invalid or a render lacks a variable; the message names both."""


@dataclass(frozen=True)
class Prompt:
    name: str
    version: str
    description: str
    variables: tuple[str, ...]
    source: str
    _template: Template = field(repr=False, compare=False)

    def render(self, **values: Any) -> str:
        missing = [v for v in self.variables if v not in values]
        unknown = [k for k in values if k not in self.variables]
        if missing or unknown:
            parts = []
            if missing:
                parts.append(f"missing variable(s) {', '.join(missing)}")
            if unknown:
                parts.append(f"unknown variable(s) {', '.join(unknown)}")
            raise PromptError(f"prompt {self.name!r}: {'; '.join(parts)}")
        try:
            return self._template.render(**values).strip()
        except UndefinedError as exc:  # e.g. an attribute missing on a passed object
            raise PromptError(f"prompt {self.name!r}: {exc}") from exc


def _compile(doc: dict[str, Any], source: str, defaults: dict[str, Any] | None = None) -> Prompt:
    defaults = defaults or {}
    name = doc.get("name")
    if not name or not isinstance(name, str):
        raise PromptError(f"{source}: a prompt has no name")
    template_text = doc.get("template")
    if not isinstance(template_text, str):
        raise PromptError(f"{source}: prompt {name!r} has no template")
    declared = doc.get("variables", [])
    if not isinstance(declared, list) or not all(isinstance(v, str) for v in declared):
        raise PromptError(f"{source}: prompt {name!r}: variables must be a list of names")
    try:
        ast = _ENV.parse(template_text)
    except TemplateSyntaxError as exc:
        raise PromptError(f"{source}: prompt {name!r}: template syntax error line {exc.lineno}: {exc.message}") from exc
    used = meta.find_undeclared_variables(ast)
    undeclared = sorted(used - set(declared))
    if undeclared:
        raise PromptError(f"{source}: prompt {name!r} uses undeclared variable(s): {', '.join(undeclared)}")
    unused = sorted(set(declared) - used)
    if unused:
        raise PromptError(f"{source}: prompt {name!r} declares unused variable(s): {', '.join(unused)}")
    return Prompt(
        name=name,
        version=str(doc.get("version", defaults.get("version", "1"))),
        description=str(doc.get("description", defaults.get("description", ""))).strip(),
        variables=tuple(declared),
        source=source,
        _template=_ENV.from_string(ast),  # the tree parsed above: each template is parsed once
    )


@dataclass(frozen=True)
class PromptSet:
    prompts: dict[str, Prompt]

    def get(self, name: str) -> Prompt:
        try:
            return self.prompts[name]
        except KeyError:
            raise PromptError(f"no prompt named {name!r} (known: {', '.join(sorted(self.prompts))})") from None

    def render(self, name: str, **values: Any) -> str:
        return self.get(name).render(**values)

    def text(self, prompt: str, /, **values: Any) -> str:
        """Render `prompt`, from the packaged prompts when this set lacks it (a prompts_dir written
        before the prompt existed keeps working)."""
        return (self if prompt in self.prompts else default_prompts()).get(prompt).render(**values)

    def require(self, spec: dict[str, set[str]]) -> None:
        """Check that the prompts the code renders exist and take exactly these variables."""
        for name, variables in spec.items():
            prompt = self.get(name)
            if set(prompt.variables) != variables:
                raise PromptError(
                    f"prompt {name!r} ({prompt.source}) declares {sorted(prompt.variables)}, "
                    f"the code renders it with {sorted(variables)}"
                )


def parse_prompt_file(text: str, source: str) -> list[Prompt]:
    try:
        doc = safe_load(text)
    except yaml.YAMLError as exc:
        raise PromptError(f"{source}: invalid YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise PromptError(f"{source}: expected a mapping")
    if "prompts" in doc:
        items = doc["prompts"]
        if not isinstance(items, list):
            raise PromptError(f"{source}: `prompts` must be a list")
        return [_compile(item, source, doc) for item in items]
    return [_compile(doc, source)]


def load_prompts(directory: Path | None = None) -> PromptSet:
    """All prompts from `directory` (default: the installed `prompts` package)."""
    if directory is not None:
        files = [(p.name, p.read_text(encoding="utf-8")) for p in sorted(Path(directory).glob("*.yaml"))]
    else:
        root = importlib.resources.files("prompts")
        files = [
            (entry.name, entry.read_text(encoding="utf-8"))
            for entry in sorted(root.iterdir(), key=lambda e: e.name)
            if entry.name.endswith(".yaml")
        ]
    prompts: dict[str, Prompt] = {}
    for filename, text in files:
        for prompt in parse_prompt_file(text, filename):
            if prompt.name in prompts:
                raise PromptError(f"{filename}: prompt {prompt.name!r} already defined in {prompts[prompt.name].source}")
            prompts[prompt.name] = prompt
    found = PromptSet(prompts)
    found.require(REQUIRED)
    return found


# What the code renders: checked at load time so a prompt edit cannot break a turn later.
REQUIRED: dict[str, set[str]] = {
    "router": {"domain", "capabilities", "routes", "titles", "history", "message"},
    "agent": {"domain", "tools", "prefetched", "weak_evidence", "max_iterations"},
    "refusal": {"capabilities", "examples"},
    "greeting": {"capabilities", "examples"},
    "clarification": set(),
    "no_provider": {"reason", "env_hint"},
    "search_only_header": set(),
    "search_only_empty": set(),
    "borderline_note": set(),
    "search_only_weak": set(),
    "unanswerable_header": set(),
    "last_step": set(),
    "empty_message": set(),
    "too_long": {"limit", "length"},
    "provider_error": {"ref"},
    "store_error": {"ref"},
    "internal_error": {"ref"},
    "answer_interrupted": set(),
    "answer_interrupted_search_only": set(),
    "answer_incomplete": {"ref"},
    "not_known": set(),
    "thinking": set(),
    "rate_limited": {"seconds"},
    "channel_not_enabled": set(),
    "welcome": {"user", "commands"},
    "suggested_prompts_title": set(),
    "suggested_question": {"title"},
    "feedback_thanks": set(),
    "command_searching": {"records"},
    "command_error": {"record", "ref"},
    "delivery_error": {"ref"},
    "shutdown_interrupted": set(),
    "answer_restarted": set(),
    "sources_heading": set(),
    "feedback_helpful": set(),
    "feedback_not_helpful": set(),
    "records_heading": {"records"},
    "records_shared_by": {"user"},
    "records_none": {"records"},
    "records_none_for": {"records", "query"},
    "records_found": {"count", "records", "summary", "names"},
    "records_more": {"shown", "total"},
    "share_in_channel": set(),
    "registry_extract": {"registry", "record", "criteria", "message", "understood", "leftover"},
}


@lru_cache(maxsize=1)
def default_prompts() -> PromptSet:
    return load_prompts()
