"""`safe_load` with libyaml's parser when PyYAML was built with it (its wheels are): the same
safe constructors build the same values, about 10x faster than the pure-Python parser. The
files read at start-up (prompts, the off-topic examples, the registry words, domain and
registry files) cost about 0.1 s of every `askdesk ask` when parsed in Python."""

from __future__ import annotations

from typing import Any

import yaml

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)`; errors are PyYAML's own (`yaml.YAMLError`)."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader
