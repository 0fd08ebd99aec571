"""The knowledge base as a capability: the `get_formatted_context` tool over one collection,
its search before the first model call, and its search-only answer: one lead-in line chosen
from the evidence, the lines of the best passages that answer the question (a table row with its
header, a list item, the sentence with the asked figure: agent/knowledge/answer_lines.py) quoted
with where they stand (weighed by words and by meaning: agent/knowledge/line_meaning.py), then
the passages with their sources, tables whole (agent/tables.py).

Bound to one knowledge collection (a Slack channel may use another: `slack_channel_collections`).
It claims no message by its wording: whether a message is for the documents is decided by
meaning (agent/understanding/gate.py), and everything no registry claims is theirs.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent.capabilities.base import Capability, EvalSection, Found, SearchOnly
from agent.knowledge.answer_lines import AnswerLine, answer_lines
from agent.knowledge.language import query_language
from agent.knowledge.line_meaning import line_closeness
from agent.knowledge.search import Passage, as_searched
from agent.tables import Table, blocks
from agent.references import Reference
from agent.tools.base import Tool, ToolResult
from agent.tools import formatted_context
from agent.tools.formatted_context import MAX_TOP_K, make_tool

if TYPE_CHECKING:
    from agent.knowledge.vocabulary import Vocabulary
    from agent.prompts import PromptSet
    from agent.plugins import Registrar
    from agent.providers.base import Model
    from agent.runtime import Runtime

TOOL = "get_formatted_context"
MAX_PASSAGES = 5
PASSAGE_CHARS = 700  # of each passage's prose in a search-only answer (its tables are shown whole)
TABLE_CHARS = 3000  # a longer table is shown up to here, cut between rows
ANSWER_CHARS = 6000  # the whole answer: later sources are left out (never one an answer line cites)
WHERE_CHARS = 80  # of a section's name after an answer line
# the one line heading a search-only answer, by what the evidence says (`lead_in`)
ANSWERED, WEAK, BORDERLINE, UNANSWERABLE = "search_only_header", "search_only_weak", "borderline_note", "unanswerable_header"
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def passages(found: Found | None) -> list[Passage]:
    """The passages a knowledge search found (none in another tool's result, such as an action's)."""
    data = found.result.data if found is not None else None
    return [p for p in data if isinstance(p, Passage)] if isinstance(data, list) else []


def best_score(found: Found | None) -> float | None:
    """The best dense similarity of what was found to its query (None: nothing to judge by)."""
    scores = [p.dense_score for p in passages(found) if p.dense_score is not None]
    return max(scores) if scores else None


def best_centered(found: Found | None) -> float | None:
    """The best centered similarity of what was found (the off-topic gate's evidence;
    agent/knowledge/calibration.py), None before the collection is calibrated."""
    scores = [score for p in passages(found) for score in (p.centered_score, p.best_centered) if score is not None]
    return max(scores) if scores else None


def whole(p: Passage) -> str:
    """The passage's text as a reader needs it: the section around the match when the search
    gave it (`context`), else the matched text."""
    return getattr(p, "context", None) or p.text


def from_section(text: str, section: str) -> str:
    """`text` from the heading of its `section` on (a chunk can start in the section before the
    one it is filed under: the reader starts where it is), else `text` as it is."""
    name = section.rsplit(" > ", 1)[-1].strip().strip("*#").strip()
    if not name:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines[1:], start=1):
        heading = line.strip().strip("#").strip().strip("*").strip()
        if heading == name and (line.lstrip().startswith("#") or line.strip().startswith("**")):
            return "\n".join(lines[i:])
    return text


def shown(result: ToolResult | None) -> list[tuple[Reference, list[Passage]]]:
    """The passages a search-only answer shows, grouped by the source they cite (file and
    section) in order of first appearance: entry i is source i of the answer's references."""
    groups: dict[tuple[str, str], tuple[Reference, list[Passage]]] = {}
    data = result.data if result is not None and isinstance(result.data, list) else []
    for p in [p for p in data if isinstance(p, Passage)][:MAX_PASSAGES]:
        groups.setdefault((p.source, p.section), (formatted_context.reference_of(p), []))[1].append(p)
    return list(groups.values())


def lead_in(result: ToolResult | None, *, borderline: bool = False, unanswerable: bool = False) -> str:
    """The name of the one line heading a search-only answer, chosen from the evidence: the
    documents do not support an answer (the calibrated judgement), the search flagged its best
    match as weak, the message may be outside the documents (the gate could not place it, or
    the asker overrode a refusal), or the passages answer it."""
    if unanswerable:
        return UNANSWERABLE
    if result is not None and result.weak_evidence:
        return WEAK
    return BORDERLINE if borderline else ANSWERED


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + "…"


def _cite(ref: Reference, number: int, heading: str | None = None, asks: str | None = None) -> str:
    """`*section* [n]` after an answer line: where it stands, linked when the source has an address.
    `heading`: the heading the line stands under in its passage's text (a passage is shown with
    the sections around its own); None: the passage's own section. `asks`: the page's question the
    line answers, named in the section's place (its answer rarely repeats it). The link's fragment
    is the passage's section's: under another heading the link opens the page itself."""
    own = ref.section.rsplit(" > ", 1)[-1] if ref.section else ""
    url = ref.url or ""
    if heading and heading != own:
        url = url.split("#", 1)[0]
    named = " ".join(asks.replace("*", "").split()) if asks else ""
    where = _clip(named or heading or own or ref.title or ref.source, WHERE_CHARS)
    where = where.replace("[", "(").replace("]", ")").replace("*", "")
    label = f"[{where}]({url})" if url.startswith(("http://", "https://")) else where
    return f"*{label}* [{number}]"


def _prose(text: str, room: int) -> tuple[list[str], int]:
    """Markdown lines of `text` within `room` characters, cut between lines, else after a
    sentence, else between words; headings as bold lines. (lines, room left; < 0: cut short)."""
    out: list[str] = []
    for line in text.split("\n"):
        if line.lstrip().startswith("#"):
            title = line.strip().lstrip("#").strip()
            line = f"**{title}**" if title else ""
        if len(line) + 1 <= room:
            out.append(line)
            room -= len(line) + 1
            continue
        head = line[:room]
        ends = [m.start() for m in _SENTENCE.finditer(head)]
        cut = _closed(head[:ends[-1]] if ends and ends[-1] > room // 3 else head.rsplit(" ", 1)[0])
        out.append(cut.rstrip() + " …" if cut.strip() else "…")
        return out, -1
    return out, room


def _closed(cut: str) -> str:
    """`cut` without a bold or code span it opens and does not close (a cut "**Ans" is shown as
    raw asterisks on every surface): cut before the span, or the span closed when no words stand
    before it. "" when no word would be shown."""
    for marker in ("**", "`"):
        if cut.count(marker) % 2:
            start = cut.rfind(marker)
            before = cut[:start].rstrip()
            cut = before if re.search(r"\w", before) else cut.rstrip() + marker
    return cut if re.search(r"\w", cut) else ""


def excerpt(text: str, limit: int = PASSAGE_CHARS) -> str:
    """A passage as shown in a search-only answer: its Markdown as written (paragraphs, lists,
    bold), its prose up to `limit` characters, its tables whole up to TABLE_CHARS and then cut
    between rows — never inside one."""
    parts: list[str] = []
    room = limit
    for block in blocks(text):
        if isinstance(block, Table):
            piece = block.pieces(TABLE_CHARS)[0]
            parts.append(piece.markdown() + ("\n\n…" if len(piece.rows) < len(block.rows) else ""))
            continue
        if room <= 0:
            parts.append("…")
            break
        lines, room = _prose(block, room)
        if any(line.strip() for line in lines):
            parts.append("\n".join(lines).strip("\n"))
    return "\n\n".join(p for p in parts if p)


def _together(group: list[AnswerLine], line: AnswerLine) -> bool:
    """Whether `line` is shown in `group`'s block: a row of the same table, or a sentence next to
    one of its sentences under the same heading and question (three sentences of one answer are
    one quote with one citation, not three)."""
    first, unit = group[0].unit, line.unit
    if group[0].passage != line.passage:
        return False
    if unit.table is not None or first.table is not None:
        return unit.table is not None and first.table is not None and first.table.header == unit.table.header
    return (unit.kind == first.kind == "sentence" and not unit.then and not first.then
            and (unit.heading, unit.asks) == (first.heading, first.asks)
            and any(abs(g.order - line.order) == 1 for g in group))


def _answer_block(lines: list[AnswerLine], number: int, ref: Reference, note: str = "") -> str:
    """Answer lines of one passage: sentences and items quoted (an introduction with its list),
    rows of one table as one table; `note`: the passage's language when it is not the asker's."""
    unit = lines[0].unit
    if unit.table is not None:  # the rows in the table's order
        ordered = sorted(lines, key=lambda line: line.order)
        rows = [line.unit for line in ordered if line.unit.table is not None]
        if all(r.whole is unit.whole for r in rows) and unit.shown is unit.whole:
            table = unit.whole  # a short table, whole
        else:
            table = unit.table.with_rows([r.table.rows[0] for r in rows])
        return f"{table.markdown()}\n\n— {_cite(ref, number, unit.heading)}{note}"
    text = " ".join(line.unit.text for line in sorted(lines, key=lambda line: line.order))  # neighbouring sentences
    quoted = f"> {text} — {_cite(ref, number, unit.heading, unit.asks)}{note}"
    if unit.then:  # an introduction ("Boards must:") with the list it introduces
        quoted += "\n" + "\n".join(f"> {line}" for line in unit.then.splitlines())
    return quoted


def _language_note(prompts: "PromptSet", asked_in: str, written_in: str) -> str:
    """" (in English)" after a source written in another language than the question, else ""."""
    if asked_in and written_in and written_in not in (asked_in, "und"):
        return f" {prompts.render('source_language', lang=written_in)}"
    return ""


def compose(result: ToolResult | None, prompts: "PromptSet", *, query: str = "", lead: str | None = None,
            closeness: dict[str, float] | None = None) -> SearchOnly:
    """The search-only answer: one lead-in line (`lead`, a message name; else chosen from the
    evidence), the lines that answer `query` quoted with where they stand (by words, and by
    meaning where `closeness` weighs them: agent/knowledge/line_meaning.py), then the best
    passages with their tables whole, numbered as their sources are: passages from the same
    source and section share one entry, and entry i is reference i."""
    entries = shown(result)
    if not entries:
        return SearchOnly(text=prompts.render("search_only_empty"))
    number = {id(p): i for i, (_, found) in enumerate(entries, start=1) for p in found}
    ranked = [p for p in (result.data if result is not None else []) if isinstance(p, Passage) and id(p) in number]
    parts = [prompts.render(lead or lead_in(result))]
    cited = 0
    asked_in = query_language(query) if query.strip() else ""
    answers = answer_lines(query, ranked, closeness=closeness) if query.strip() else []
    groups: list[list[AnswerLine]] = []
    for line in answers:  # rows of one table, or neighbouring sentences, of one passage go together
        same = next((g for g in groups if _together(g, line)), None)
        if same is None:
            groups.append([line])
            continue
        same.append(line)
        for other in [g for g in groups if g is not same and all(_together(same, o) for o in g)]:
            same.extend(other)  # the sentence between two quoted ones joins them
            groups.remove(other)
    for group in groups:
        n = number[id(ranked[group[0].passage])]
        cited = max(cited, n)
        parts.append(_answer_block(group, n, entries[n - 1][0],
                                   _language_note(prompts, asked_in, ranked[group[0].passage].lang)))
    size = sum(len(p) + 2 for p in parts)
    kept = 0
    for i, (ref, found) in enumerate(entries, start=1):
        bodies = list(dict.fromkeys(excerpt(from_section(whole(p), p.section)) for p in found))
        other = _language_note(prompts, asked_in, found[0].lang)
        entry = f"**[{i}]** {ref.label()}{other}\n\n" + "\n\n".join(bodies)
        if i > max(cited, 1) and size + len(entry) > ANSWER_CHARS:
            break
        parts.append(entry)
        size += len(entry) + 2
        kept = i
    return SearchOnly(text="\n\n".join(parts), references=[ref for ref, _ in entries[:kept]])


def knowledge_answer(result: ToolResult | None, prompts: "PromptSet", *, query: str = "",
                     lead: str | None = None) -> str:
    """The search-only answer's text (`compose`)."""
    return compose(result, prompts, query=query, lead=lead).text


class KnowledgeCapability(Capability):
    name = "knowledge"
    kind = "knowledge"
    description = ("a question the organisation's documents could answer (policies, eligibility, rates, payments, "
                   "reports, plans, programs, procedures), in any language, even when terse or full of the "
                   "documents' own abbreviations and codes.")

    def __init__(self, runtime: "Runtime", collection: str | None = None) -> None:
        super().__init__(runtime)
        self.collection = collection  # None: the default collection (settings.collection)
        self._tool = make_tool(runtime, collection=collection)

    def tools(self) -> list[Tool]:
        return [self._tool]

    def bound(self, collection: str | None) -> "KnowledgeCapability":
        return self if collection == self.collection else KnowledgeCapability(self.runtime, collection)

    async def unplaced(self, text: str) -> str:
        return text

    async def warm(self) -> None:
        from agent.knowledge import language_centers
        from agent.knowledge.search import search

        await self.vocabulary()
        # an older build's collection: its language means measured before the first question
        await language_centers.ready(self.runtime, self.collection or self.runtime.settings.collection)
        # the embedder loaded and the index read from disk: the first question pays neither
        await search(self.runtime, "warm up", top_k=1, collection=self.collection)

    def arguments(self, query: str) -> dict[str, Any]:
        return {"query": query, "top_k": min(self.runtime.settings.top_k, MAX_TOP_K)}

    async def search(self, query: str, also: tuple[tuple[str, float], ...] = (), *,
                     model: "Model | None" = None) -> Found:
        """The tool's search for `query` (fused with `also`: a message in its thread's context;
        with `model`, also in the knowledge base's other languages: agent/knowledge/translation.py);
        raises KnowledgeBaseUnavailable when the store is down."""
        arguments = self.arguments(query)
        result = await formatted_context.get_formatted_context(self.runtime, query, arguments["top_k"], collection=self.collection,
                                             also=list(also), model=model)
        return Found(self.name, TOOL, arguments, result, query)

    async def prefetch(self, query: str, *, model: "Model | None" = None) -> Found:
        return await self.search(query)

    async def read_closely(self, found: Found) -> Found:
        passages = [p for p in (found.result.data or []) if isinstance(p, Passage)] \
            if isinstance(found.result.data, list) else []
        if not found.query.strip() or not passages:
            return found
        read = await as_searched(self.runtime, found.query, collection=self.collection)
        return replace(found, closeness=await line_closeness(self.runtime, read, passages), read_as=read)

    def search_only(self, found: Found | None, prompts: "PromptSet") -> SearchOnly:
        return self.answer(found, prompts)

    def answer(self, found: Found | None, prompts: "PromptSet", *, borderline: bool = False,
               unanswerable: bool = False) -> SearchOnly:
        """The search-only answer to what `found` was searched for, headed by the one lead-in
        the evidence calls for (`lead_in`); its references are its entries' sources, in the
        same order: "[3]" in the text is source 3."""
        result = found.result if found is not None else None
        lead = lead_in(result, borderline=borderline, unanswerable=unanswerable)
        return compose(result, prompts, query=(found.read_as or found.query) if found is not None else "", lead=lead,
                       closeness=found.closeness if found is not None else None)

    async def vocabulary(self) -> "Vocabulary":
        from agent.knowledge.vocabulary import vocabulary

        return await vocabulary(self.runtime, self.collection)

    def eval_sections(self) -> dict[str, EvalSection]:
        from agent.evaluation import conversations, retrieval

        return {"retrieval": retrieval.Section(), "conversations": conversations.Section()}


def register(r: "Registrar") -> None:
    """askdesk's own knowledge base, registered as any capability plug-in is (pyproject.toml)."""
    r.capability(KnowledgeCapability)
