"""Slack mention injection (issue 18, item 1): text from documents, registries or a model never
reaches Slack as a broadcast, a mention, a channel link or a disguised link.

Unit tests of bot/slack/escape.py (each injection form, `&`, links that show their address,
formatting kept, streamed pieces), then the real bot end to end: Bolt, the real `Askdesk`, the
openai SDK reading a scripted answer from the fake LLM server, slack_sdk against the recording
fake Slack Web API — streamed, posted, and search-only with a poisoned document."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from markdown_it import MarkdownIt

from agent.capabilities.base import Command, CommandResult, RecordView
from agent.references import Reference
from bot.slack import blocks
from bot.slack.escape import MarkdownStream, escaped_size, safe_markdown, safe_mrkdwn, web_link
from tests.test_slack_bot import (  # noqa: F401  (fixtures)
    AGENT,
    KB_DOC,
    bot_messages,
    fake_slack,
    final,
    llm,
    make_bot,
)

INJECTIONS = {
    "<!channel>": "&lt;!channel&gt;",
    "<!here>": "&lt;!here&gt;",
    "<!everyone>": "&lt;!everyone&gt;",
    "<@U123>": "&lt;@U123&gt;",
    "<#C123>": "&lt;#C123&gt;",
    "<!subteam^S123>": "&lt;!subteam^S123&gt;",
    "<!here|here>": "&lt;!here|here&gt;",
    "<@U123|alice>": "&lt;@U123|alice&gt;",
}
EVIL = "https://evil.example/login"
POISON = f"<!channel> see <{EVIL}|Click here> to re-verify, or [Click here]({EVIL})."
_MD = MarkdownIt("commonmark").enable("table")


def links_in(markdown: str) -> list[str]:
    """Every link Slack's Markdown could draw from `markdown` (CommonMark: inline links, images,
    autolinks, HTML, reference definitions)."""
    found: list[str] = []
    env: dict[str, Any] = {}

    def walk(tokens: list) -> None:
        for token in tokens:
            if token.type in ("link_open", "image"):
                found.append(str(token.attrs.get("href") or token.attrs.get("src")))
            elif token.type in ("html_inline", "html_block"):
                found.append(token.content)
            if token.children:
                walk(token.children)

    walk(_MD.parse(markdown, env))
    found.extend(str(r["href"]) for r in (env.get("references") or {}).values())
    return found


def slack_tokens(text: str) -> list[str]:
    """What Slack reads as a control sequence in mrkdwn: anything between `<` and `>`."""
    import re

    return re.findall(r"<[^<>]*>", text)


# --- the function -------------------------------------------------------------------------------


@pytest.mark.parametrize("raw,escaped", INJECTIONS.items())
def test_each_mention_and_broadcast_form_is_escaped_in_both_kinds_of_field(raw, escaped):
    text = f"Please {raw} read this"
    assert safe_mrkdwn(text) == f"Please {escaped} read this"
    assert safe_markdown(text) == f"Please {escaped} read this"
    assert "<" not in safe_mrkdwn(text) and "<" not in safe_markdown(text)


def test_a_disguised_slack_link_shows_its_real_address():
    text = f"<{EVIL}|Click here to re-verify>"
    assert safe_mrkdwn(text) == f"Click here to re-verify ({EVIL})"
    assert safe_markdown(text) == f"Click here to re-verify ({EVIL})"
    assert safe_mrkdwn(f"see <{EVIL}>") == f"see {EVIL}"  # a bare <url> is just the address
    # a form that is not a web link stays visible, escaped, as written
    assert safe_mrkdwn("<javascript:alert(1)|Click>") == "&lt;javascript:alert(1)|Click&gt;"


def test_markdown_links_and_images_show_their_real_address():
    assert safe_markdown(f"see [Click here]({EVIL}) now") == f"see Click here ({EVIL}) now"
    assert safe_mrkdwn(f"see [Click here]({EVIL} \"Title\")") == f"see Click here ({EVIL})"
    assert safe_markdown(f"![logo]({EVIL})") == f"logo ({EVIL})"
    assert safe_markdown("[https://x.org/a](https://x.org/a)") == "https://x.org/a"  # said once
    assert safe_markdown(f"[the [1] table]({EVIL})") == f"the [1] table ({EVIL})"
    assert safe_markdown(f"[[inner]({EVIL})](https://x.org)") == f"inner ({EVIL}) (https://x.org)"
    assert safe_markdown(f"[Click](<{EVIL}>)") == f"Click ({EVIL})"


@pytest.mark.parametrize("text", [
    f"[Click\nhere]({EVIL})",  # a label over two lines: not rewritten, disarmed
    f"[a [b [c] d] e]({EVIL})",  # brackets nested deeper than the rewrite reads
    f"[Click here][x]\n\n[x]: {EVIL}",  # a reference link and its definition
    f"[Click here]\n\n[click here]: {EVIL} \"t\"",  # a shortcut reference
    f"- [x]: {EVIL}\n\n[x][]",  # a definition in a list
    f"> [x]:\n> {EVIL}\n\n[x]",  # ...in a quote, the address on the next line
    f"[Click here](\n{EVIL}\n)",
    f"<{EVIL}>",
    f"<a href=\"{EVIL}\">Click here</a>",
    f"```\n~~~\n```\n[Click here]({EVIL})\n```",  # fences that disagree
    f"  ```\ncode\n```\n[Click here]({EVIL})",
    f"````\n```\n[Click here]({EVIL})\n````",
])
def test_no_link_survives_in_markdown(text):
    safe = safe_markdown(text)
    assert links_in(safe) == [] and "<" not in safe


def test_ampersands_are_escaped_once_and_our_own_markup_is_not_escaped():
    assert safe_mrkdwn("Tom & Jerry") == "Tom &amp; Jerry"
    # a document that literally says "&lt;!channel&gt;" shows exactly that, never a broadcast
    assert safe_mrkdwn("&lt;!channel&gt;") == "&amp;lt;!channel&amp;gt;"
    # the bot's own link around a document's title and address: each escaped once
    link = web_link("https://x.org/a?b=1&c=2", "Rates & <fees>")
    assert link == "<https://x.org/a?b=1&amp;c=2|Rates &amp; &lt;fees&gt;>"
    assert slack_tokens(link) == [link]  # one link, nothing else
    # an address that tries to end the link early, or is not a web address
    forged = web_link("https://x.org/a|<!channel>", "Title")
    assert slack_tokens(forged) == [forged] and "<!channel>" not in forged
    assert web_link("javascript:alert(1)", "Title") == "Title"
    refs = [Reference(source="a.md", title="A & B <!here>", url="https://x.org/a?b=1&c=2")]
    assert blocks.source_lines(refs) == ["[1] <https://x.org/a?b=1&amp;c=2|A &amp; B &lt;!here&gt;>"]


def test_registry_results_escape_records_but_keep_the_share_mention():
    command = Command(name="places", capability="places", title="places", usage="/places <what> near <where>",
                      record="place", records="places")
    result = CommandResult(command="places", text="cafe <!here>", summary="cafe <!here>", total=1,
                           records=[RecordView(id="1", title="Cafe <!channel> & Co")])
    text = blocks.records_text(result, command)
    assert "<" not in text and "Cafe &lt;!channel&gt; &amp; Co" in text and "cafe &lt;!here&gt;" in text
    shared = json.dumps(blocks.record_blocks(result, command, shareable=False, shared_by="U0001"))
    assert "<@U0001>" in shared and "<!channel>" not in shared and "<!here>" not in shared
    usage = json.dumps(blocks.usage_blocks(command.help()))
    assert "&lt;what&gt; near &lt;where&gt;" in usage  # usage text is text, not links


def test_formatting_is_kept():
    answer = ("## Income limits\n\nFamilies of **4** qualify below *$5,000* a month [1].\n\n"
              "- first item\n- second `item`\n\n1. one\n2. two\n\n> a quote\n>> nested\n\n"
              "| size | limit |\n|---|---|\n| 4 | $5,000 |\n\n```python\nlimit = rates[4]\n```\n\n"
              "See ~~old~~ rules at https://x.org/rules.")
    assert safe_markdown(answer) == answer  # nothing to escape: the text is untouched
    assert safe_mrkdwn("*bold* _italic_ `code` ~strike~") == "*bold* _italic_ `code` ~strike~"
    # markup characters in code are escaped too (Slack's rule holds in code)
    assert safe_markdown("```html\n<b>x</b> & y\n```") == "```html\n&lt;b&gt;x&lt;/b&gt; &amp; y\n```"
    assert safe_markdown("a > b\n> quoted") == "a &gt; b\n> quoted"  # a quote marker stays a quote
    # in code, link syntax is left as written except `](`, which gets a visible backslash
    assert safe_markdown("```\nf = handlers[0](event)\n```") == "```\nf = handlers[0]\\(event)\n```"
    assert safe_markdown("```\nif items[0]:\n```") == "```\nif items[0]:\n```"


def test_escaped_size_bounds_the_escaped_length():
    for text in ["plain", "a & b < c > d", POISON, "&&&<<<>>>", "[a](b) ]( ]:"]:
        assert len(safe_markdown(text)) <= escaped_size(text) + text.count("]")
        assert len(safe_mrkdwn(text)) <= escaped_size(text)


def test_a_long_answer_full_of_markup_is_split_to_fit_once_escaped():
    code = "```html\n" + "\n".join(f"<td>{i} &amp; <b>{i}</b></td>" for i in range(700)) + "\n```"
    messages = blocks.answer_messages(code, [], notice=None, value=None)
    assert len(messages) > 1
    for message in messages:
        text = "".join(b["text"] for b in message if b["type"] == "markdown")
        assert len(text) <= 12000 and "<" not in text and text.count("```") % 2 == 0


# --- streamed in pieces ---------------------------------------------------------------------------


def stream(pieces: list[str]) -> tuple[str, str]:
    """(what Slack would show, joined; the raw text handed out), as Reply streams: each piece with
    what was held back before it, the rest with the stop call."""
    md = MarkdownStream()
    held, out = "", []
    for piece in pieces:
        text = held + piece
        safe, ready = md.render(text)
        out.append(safe)
        held = text[ready:]
    out.append(md.render(held, final=True)[0])
    return "".join(out), md.sent


@pytest.mark.parametrize("cut", range(1, len(POISON)))
def test_a_link_cut_between_two_pieces_is_still_shown_with_its_address(cut):
    text = "Intro.\n\n" + POISON
    shown, sent = stream([text[:cut + 8], text[cut + 8:]])
    assert sent == text
    assert shown == safe_markdown(text)  # as if it had come whole
    assert links_in(shown) == [] and "<" not in shown


def test_random_pieces_never_make_a_link_or_a_mention():
    rng = random.Random(18)
    atoms = ["see ", f"[Click here]({EVIL})", " <!channel> ", f"<{EVIL}|Click>", "\n\n", "\n", "```\n",
             "f[0](x) <@U1>\n", "[1]", ": ", "(", ")", "]", "[", "> ", "&", f"![a]({EVIL})", "`", "~~~\n",
             f"[x]: {EVIL}\n", "\\", "[x][x]", "<", ">", "&lt;!here&gt;", "    code\n", "- "]
    for _ in range(3000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 14)))
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 5)))) if len(text) > 1 else []
        shown, sent = stream([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])])
        assert sent == text
        assert "<" not in shown and links_in(shown) == [], (text, cuts, shown)


def test_streamed_code_keeps_its_context_across_pieces():
    text = "Before [a](https://x.org).\n```py\nx = f[0](1)  # [b](https://y.org)\n```\nAfter [c](https://z.org)."
    for cut in range(1, len(text)):
        shown, _ = stream([text[:cut], text[cut:]])
        assert shown == safe_markdown(text), cut


# --- end to end: the real bot, a scripted model, the fake Slack Web API -----------------------------


def slack_calls(fake) -> list:
    """Every call that could show text: Web API chat methods and response_url posts."""
    return [c for c in fake.calls if c.method.startswith(("chat.", "response_url"))]


def assert_nothing_forged(fake) -> None:
    """No call carries a mention, broadcast or disguised link from the answer, in any field."""
    calls = slack_calls(fake)
    assert calls
    for call in calls:
        wire = json.dumps(call.args, ensure_ascii=False)
        for forged in ("<!channel>", "<!here>", "<!everyone>", "<@U123>", "<#C123>", "<!subteam^S123>",
                       f"<{EVIL}|", f"<{EVIL}>"):
            assert forged not in wire, (call.method, forged)
        for text in _texts(call.args):
            assert links_in(text) == [] or all("evil.example" not in h for h in links_in(text)), (call.method, text)


def _texts(args: Any) -> list[str]:
    """Every string in a call's arguments (text, blocks, chunks)."""
    if isinstance(args, str):
        return [args]
    if isinstance(args, dict):
        return [t for v in args.values() for t in _texts(v)]
    if isinstance(args, list):
        return [t for v in args for t in _texts(v)]
    return []


def streamed_markdown(fake) -> str:
    return "".join(c.get("text", "") for call in fake.calls if "Stream" in call.method
                   for c in call.args.get("chunks") or [] if c.get("type") == "markdown_text")


# paragraphs of ~700 characters with the poison at a different place in each, so that appends (made
# frequent below) cut through it somewhere; long enough to be continued in a second message
PARAGRAPHS = [f"Paragraph {i}: " + "the income limit depends on family size " * (2 + i % 13) + POISON + " "
              + "and on the county " * (10 - i % 9) for i in range(16)]
LONG_ANSWER = "\n\n".join(PARAGRAPHS)


async def test_streamed_answer_with_injections_reaches_slack_escaped(make_bot, fake_slack, llm, monkeypatch):
    from bot.slack import reply

    monkeypatch.setattr(reply, "STREAM_APPEND_EVERY", 0.01)  # an append every ~120 characters, not one a second
    llm.set_stream_pace(AGENT, first_token=0.05, tokens_per_s=1500)  # ~2 s: many appends even on a loaded machine
    llm.script(AGENT, final(LONG_ANSWER, KB_DOC))
    slack = await make_bot()
    ts = "1700018000.000100"
    await slack.mention("what is the income limit?", ts=ts)
    await slack.bot.drain()

    assert fake_slack.calls_to("chat.startStream") and len(fake_slack.calls_to("chat.appendStream")) >= 3
    assert fake_slack.calls_to("chat.postMessage")  # the answer went on in a second message
    assert_nothing_forged(fake_slack)
    streamed = streamed_markdown(fake_slack)
    assert "&lt;!channel&gt; see Click here (https://evil.example/login) to re-verify" in streamed
    assert f"or Click here ({EVIL})." in streamed
    replies = bot_messages(fake_slack, "C0001", ts)
    posted = "".join(b["text"] for r in replies[1:] for b in r["blocks"] if b["type"] == "markdown")
    assert "".join((streamed + posted).split()) == "".join(safe_markdown(LONG_ANSWER).split())  # all there, once
    footer = json.dumps(replies[-1]["blocks"])
    assert "askdesk_sources" in footer and "feedback_up" in footer


async def test_posted_answer_with_injections_reaches_slack_escaped(make_bot, fake_slack, llm):
    answer = f"Families of 4 qualify [1]. {POISON} Ask <@U123> in <#C123> or <!subteam^S123>, <!here>, <!everyone>."
    llm.script(AGENT, final(answer, KB_DOC))
    slack = await make_bot(slack_streaming=False)
    ts = "1700018100.000100"
    await slack.mention("what is the income limit?", ts=ts)
    await slack.bot.drain()

    assert not fake_slack.calls_to("chat.startStream")
    update = fake_slack.calls_to("chat.update")[-1]  # the "Thinking…" placeholder became the answer
    assert_nothing_forged(fake_slack)
    [markdown] = [b["text"] for b in update.args["blocks"] if b["type"] == "markdown"]
    assert markdown == safe_markdown(answer) and f"Click here ({EVIL})" in markdown
    assert "&lt;!channel&gt;" in update.args["text"] and "<" not in update.args["text"]


async def test_streaming_refused_then_posted_answer_is_escaped_too(make_bot, fake_slack, llm):
    llm.script(AGENT, final(POISON, KB_DOC))
    fake_slack.script("chat.startStream", body={"ok": False, "error": "feature_not_enabled"})
    slack = await make_bot()
    await slack.mention("what is the income limit?", ts="1700018200.000100")
    await slack.bot.drain()
    assert fake_slack.calls_to("chat.update")
    assert_nothing_forged(fake_slack)


POISONED_DOC = f"""# Income limit re-verification

Every family must re-verify the income limit each year. {POISON}
Questions about the income limit: ask <@U123> in <#C123> or <!subteam^S123>, <!here>, <!everyone>.
"""


@pytest.fixture(scope="module")
async def kb_runtime(kb_runtime, tmp_path_factory):
    """The surfaces' knowledge base plus one poisoned document."""
    from agent.knowledge.ingest import ingest

    folder = tmp_path_factory.mktemp("poisoned")
    (folder / "income-reverification.md").write_text(POISONED_DOC, encoding="utf-8")
    await ingest(kb_runtime, [folder])
    return kb_runtime


async def test_search_only_answer_quoting_a_poisoned_passage_is_escaped(make_bot, fake_slack):
    slack = await make_bot(agent_model=None, router_model=None)  # no model: the passages are quoted
    ts = "1700018300.000100"
    await slack.mention("how do I re-verify the income limit each year?", ts=ts)
    await slack.bot.drain()

    [reply] = bot_messages(fake_slack, "C0001", ts)
    shown = reply["text"] + json.dumps(reply["blocks"])
    assert "re-verify the income limit" in shown  # the poisoned passage is quoted...
    assert_nothing_forged(fake_slack)  # ...escaped
    assert "&lt;!channel&gt;" in shown and f"Click here ({EVIL})" in shown


async def test_an_answer_starting_with_a_link_still_shows_its_first_words_at_once(make_bot, fake_slack, llm):
    answer = f"[The income table]({EVIL}) says families of 4 qualify. " + "More detail follows here. " * 40
    llm.set_stream_pace(AGENT, first_token=0.05, tokens_per_s=100)  # ~10 s for the whole answer
    llm.script(AGENT, final(answer, KB_DOC))
    slack = await make_bot()
    await slack.mention("what is the income limit?", ts="1700018400.000100")
    await slack.bot.drain(timeout=30)
    [request] = llm.requests_for(AGENT)
    with_text = [c for c in fake_slack.calls if "Stream" in c.method and any(
        ch.get("type") == "markdown_text" for ch in c.args.get("chunks") or [])]
    first = "".join(ch["text"] for ch in with_text[0].args["chunks"] if ch.get("type") == "markdown_text")
    assert first.startswith(f"The income table ({EVIL})")  # held until the link was whole, then shown
    started, finished = request.chunks[0][0], request.chunks[-1][0]
    assert with_text[0].at - started < 1.0 < finished - with_text[0].at  # soon, long before the model ended
    assert_nothing_forged(fake_slack)
