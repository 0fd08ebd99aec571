"""Prompts from `prompts/*.yaml`, loaded and validated once at start-up.

Each YAML file holds one prompt (name, version, description, variables, template) or a
`prompts:` list of them (messages.yaml). Templates are Jinja2 with StrictUndefined, and the
declared `variables` must match what the template uses exactly, so a typo is a start-up
error naming the prompt and the variable instead of a surprise in the middle of a turn.

Fixed sentences people read are also written per language in `prompts/i18n/<lang>.yaml` (a
mapping name -> template with exactly the English prompt's variables, checked at load). The
language of what is being said is a ContextVar (`LANGUAGE`, set with `speaking(lang)` around a
turn and around a surface's rendering of its result), so `render` picks it without every caller
passing it; a message with no translation in that language is said in English.
"""

from __future__ import annotations

import importlib.resources
import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import yaml
from jinja2 import Environment, StrictUndefined, Template, TemplateSyntaxError, UndefinedError, meta

from agent.yamlio import safe_load

_ENV = Environment(undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False)
# Plain JSON for prompts (Jinja's `tojson` HTML-escapes <, > and & for web pages).
_ENV.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False)


ENGLISH = "en"  # the language of prompts/*.yaml, and what any message without a translation is said in
I18N_DIR = "i18n"  # prompts/i18n/<lang>.yaml

# The language the current turn (or a surface rendering its result) speaks: `render` picks it.
LANGUAGE: ContextVar[str] = ContextVar("askdesk_language", default=ENGLISH)


@contextmanager
def speaking(lang: str | None) -> Iterator[str]:
    """Render fixed sentences in `lang` inside the block (None or "": English)."""
    token = LANGUAGE.set(lang or ENGLISH)
    try:
        yield LANGUAGE.get()
    finally:
        LANGUAGE.reset(token)


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
    text: str = field(default="", repr=False, compare=False)  # the template as written
    # read by people (translated in prompts/i18n/) rather than by a model; a file's list of
    # prompts is, a single-prompt file (router.yaml, agent.yaml) is not, unless it says `translate:`
    translate: bool = False

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
    listed = defaults is not None
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
        text=template_text,
        translate=bool(doc.get("translate", defaults.get("translate", listed))),
    )


def _translation(english: Prompt, template_text: Any, source: str) -> Prompt:
    """`english` said in another language: the same name and exactly the same variables."""
    if not isinstance(template_text, str):
        raise PromptError(f"{source}: translation of {english.name!r} must be a template string")
    if not english.translate:
        raise PromptError(f"{source}: {english.name!r} ({english.source}) is read by a model, not translated")
    try:
        ast = _ENV.parse(template_text)
    except TemplateSyntaxError as exc:
        raise PromptError(f"{source}: translation of {english.name!r}: template syntax error line "
                          f"{exc.lineno}: {exc.message}") from exc
    used, declared = meta.find_undeclared_variables(ast), set(english.variables)
    if used != declared:
        parts = []
        if used - declared:
            parts.append(f"uses {', '.join(sorted(used - declared))}")
        if declared - used:
            parts.append(f"lacks {', '.join(sorted(declared - used))}")
        raise PromptError(f"{source}: translation of {english.name!r} {' and '.join(parts)}; the English "
                          f"prompt in {english.source} takes {sorted(declared) or 'no variables'}")
    return Prompt(name=english.name, version=english.version, description=english.description,
                  variables=english.variables, source=source, _template=_ENV.from_string(ast),
                  text=template_text, translate=True)


def parse_translations(text: str, source: str, english: dict[str, Prompt]) -> dict[str, Prompt]:
    """One language's file: every name must be an English prompt people read."""
    try:
        doc = safe_load(text)
    except yaml.YAMLError as exc:
        raise PromptError(f"{source}: invalid YAML: {exc}") from exc
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise PromptError(f"{source}: expected a mapping of prompt name -> template")
    found: dict[str, Prompt] = {}
    for name, template_text in doc.items():
        if name not in english:
            raise PromptError(f"{source}: {name!r} is not a prompt (see prompts/*.yaml)")
        found[name] = _translation(english[name], template_text, source)
    return found


@dataclass(frozen=True)
class PromptSet:
    prompts: dict[str, Prompt]
    # language -> name -> the prompt said in that language (prompts/i18n/<lang>.yaml)
    translations: dict[str, dict[str, Prompt]] = field(default_factory=dict)

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages askdesk speaks with these prompts: English, then each translated one."""
        return (ENGLISH, *sorted(lang for lang in self.translations if lang != ENGLISH))

    def get(self, name: str, lang: str | None = None) -> Prompt:
        """The prompt `name` in `lang` (default: the language being spoken), else in English."""
        try:
            english = self.prompts[name]
        except KeyError:
            raise PromptError(f"no prompt named {name!r} (known: {', '.join(sorted(self.prompts))})") from None
        return self.translations.get(lang or LANGUAGE.get(), {}).get(name, english)

    def render(self, name: str, **values: Any) -> str:
        return self.get(name).render(**values)

    @cached_property
    def _fixed_lines(self) -> dict[str, str]:
        """English text -> name of each fixed line people read (no variables)."""
        return {p.render(): name for name, p in self.prompts.items() if p.translate and not p.variables}

    def said(self, line: str) -> str:
        """A fixed English line handed over as text (a tool's progress line) in the language being
        spoken: the message whose English text it is, translated; any other line as it is."""
        name = self._fixed_lines.get(line)
        return self.render(name) if name is not None else line

    def text(self, prompt: str, /, **values: Any) -> str:
        """Render `prompt`, from the packaged prompts when this set lacks it (a prompts_dir written
        before the prompt existed keeps working)."""
        return (self if prompt in self.prompts else default_prompts()).get(prompt).render(**values)

    def untranslated(self, lang: str) -> list[str]:
        """The prompts people read that have no `lang` text (they are said in English)."""
        if lang == ENGLISH:
            return []
        have = self.translations.get(lang, {})
        return sorted(n for n, p in self.prompts.items() if p.translate and n not in have)

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


def _yaml_files(directory: Path | None, under: str = "") -> list[tuple[str, str]]:
    """(name, text) of the *.yaml files in `directory`/`under` (default: the installed `prompts`)."""
    if directory is not None:
        folder = Path(directory) / under
        return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.yaml"))] if folder.is_dir() else []
    root = importlib.resources.files("prompts")
    if under:
        root = root.joinpath(under)
        if not root.is_dir():
            return []
    return [(entry.name, entry.read_text(encoding="utf-8"))
            for entry in sorted(root.iterdir(), key=lambda e: e.name) if entry.name.endswith(".yaml")]


def load_translations(english: dict[str, Prompt], directory: Path | None = None) -> dict[str, dict[str, Prompt]]:
    """prompts/i18n/<lang>.yaml of `directory` (default: the installed package), checked against
    `english`. A prompts_dir without an i18n folder uses the packaged translations of the prompts
    whose English it did not change (a translation says the packaged English text)."""
    files = _yaml_files(directory, I18N_DIR)
    if directory is not None and not files:
        packaged = default_prompts()
        return {lang: {name: p for name, p in texts.items()
                       if name in english and english[name].text == packaged.prompts[name].text}
                for lang, texts in packaged.translations.items()}
    return {filename.removesuffix(".yaml"): parse_translations(text, f"{I18N_DIR}/{filename}", english)
            for filename, text in files}


def load_prompts(directory: Path | None = None) -> PromptSet:
    """All prompts from `directory` (default: the installed `prompts` package), with their translations."""
    prompts: dict[str, Prompt] = {}
    for filename, text in _yaml_files(directory):
        for prompt in parse_prompt_file(text, filename):
            if prompt.name in prompts:
                raise PromptError(f"{filename}: prompt {prompt.name!r} already defined in {prompts[prompt.name].source}")
            prompts[prompt.name] = prompt
    found = PromptSet(prompts, load_translations(prompts, directory))
    found.require(REQUIRED)
    return found


# What the code renders: checked at load time so a prompt edit cannot break a turn later.
REQUIRED: dict[str, set[str]] = {
    "router": {"domain", "capabilities", "routes", "titles", "history", "message"},
    "query_translation": {"query", "languages"},
    "agent": {"domain", "tools", "prefetched", "weak_evidence", "max_iterations"},
    "refusal": {"capabilities", "examples"},
    "greeting": {"capabilities", "examples"},
    "capabilities_documents": {"titles"},
    "clarification": set(),
    "no_provider": {"model", "env_hint"},
    "search_only_header": set(),
    "searching_knowledge": set(),
    "revisit_note": {"document"},
    "revisit_note_ask_again": {"document"},
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
    "learned_review_due": {"question", "date", "cited"},
    "learned_review_expired": {"question", "date", "cited"},
    "learned_confirm_button": set(),
    "learned_edit_button": set(),
    "learned_retire_button": set(),
    "learned_confirmed": {"date"},
    "learned_edited": {"date"},
    "learned_retired": set(),
    "learned_gone": set(),
    "button_owner_only": set(),
    "learned_edit_title": set(),
    "learned_edit_label": set(),
    "learned_edit_submit": set(),
    "registry_closest": {"record", "query"},
    "registry_no_match": {"record", "criteria"},
    "registry_name_matching_unavailable": {"error"},
    "registry_not_loaded": {"record", "collection", "name"},
    "registry_place_not_listed_around": {"record", "place", "noun", "miles"},
    "registry_place_not_listed": {"record", "place", "noun"},
    "registry_not_in_place": {"record", "place"},
    "registry_bad_code": {"value", "noun"},
    "registry_code_not_listed_around": {"record", "noun", "code", "miles"},
    "registry_unknown_code": {"noun", "code"},
    "registry_unknown_place": {"place", "suggestions", "hint"},
    "registry_place_hint": {"codes", "names", "geo"},
    "registry_criteria_any": {"place", "tags", "feature"},
    "registry_criteria_all": {"place", "tags", "features"},
    "registry_too_long": {"length", "record", "limit", "criteria"},
    "registry_nothing_to_search": {"criteria", "text"},
    "registry_unavailable": {"record", "error"},
    "registry_matches": {"total", "shown"},
    "registry_search_summary": {"record", "summary", "total", "shown"},
    "registry_more_rows": {"count"},
    "registry_read_as": {"text", "value"},
    "registry_read_by_model": {"text"},
    "registry_without": {"label"},
    "registry_at_least": {"label", "value"},
    "registry_at_most": {"label", "value"},
    "registry_open_by": {"time"},
    "registry_open_until": {"time"},
    "registry_open_on": {"days"},
    "registry_in": {"place"},
    "registry_within": {"miles", "place"},
    "registry_near": {"place"},
    "registry_matching": {"query"},
    "registry_all_results": set(),
    "registry_all_records": {"records"},
    "registry_unnamed": {"record"},
    "report_title": set(),
    "report_charts_hint": set(),
    "report_per_day": set(),
    "report_top_documents": set(),
    "report_gaps": set(),
    "report_none": set(),
    "report_unavailable": set(),
    "report_cluster": {"size", "unanswered", "down_voted"},
    "report_questions": set(),
    "report_outcome": {"outcome"},
    "report_overridden": set(),
    "report_escalations": set(),
    "report_median_reply": set(),
    "report_minutes": {"minutes"},
    "report_without_text": {"without", "total"},
    "report_no_embedder": set(),
    "report_most_asked": {"kept", "distinct"},
}


@lru_cache(maxsize=1)
def default_prompts() -> PromptSet:
    return load_prompts()
