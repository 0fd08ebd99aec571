"""Which languages the knowledge base holds, and which of them askdesk has no fixed sentences for.

Ingest counts each chunk's language (agent/knowledge/statistics.py); askdesk speaks English and
each language of prompts/i18n/. An asker writing in a language the documents hold but askdesk
does not speak reads its notes and buttons in English: `askdesk ingest` and `askdesk sources`
say so in one line (not an error: answers still quote the documents).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from types import SimpleNamespace

from agent.knowledge import statistics

UNDETERMINED = "und"  # a chunk without words (a table of figures)


def held(settings, collection: str | None = None) -> dict[str, int]:
    """Language -> chunks written in it, from the collection's saved statistics ({} before an ingest)."""
    path = statistics.path_of(SimpleNamespace(settings=settings), collection or settings.collection)  # type: ignore[arg-type]
    if not path.exists():
        return {}
    db = sqlite3.connect(path)
    try:
        langs = statistics.Stored(db).langs
    except (sqlite3.Error, ValueError):
        return {}
    finally:
        db.close()
    return {lang: n for lang, n in sorted(langs.items(), key=lambda kv: -kv[1]) if lang != UNDETERMINED}


def untranslated(languages: Iterable[str], spoken: Iterable[str]) -> list[str]:
    """The documents' languages askdesk has no fixed sentences in."""
    return sorted(set(languages) - set(spoken))


def note(languages: Mapping[str, int], spoken: Iterable[str]) -> str | None:
    """The one line saying which documents' languages askers read English notes in, or None."""
    missing = untranslated(languages, spoken)
    if not missing:
        return None
    return (f"note: documents in {', '.join(missing)} have no askdesk translations (prompts/i18n/); askers writing "
            f"in {'it' if len(missing) == 1 else 'them'} get askdesk's notes and buttons in English")


def spoken(settings) -> tuple[str, ...]:
    """The languages askdesk says its fixed sentences in, with these settings' prompts."""
    from agent.prompts import default_prompts, load_prompts

    return (load_prompts(settings.prompts_dir) if settings.prompts_dir else default_prompts()).languages
