"""`askdesk chat` driven as a user drives it: the real console script in a pseudo-terminal.

The child process gets the pty as its controlling terminal, so Ctrl-D (EOF) and Ctrl-C (SIGINT)
come from the terminal's line discipline exactly as they do at a keyboard. Its data dir holds a
one-document knowledge base ingested here first (shipped embedding seed: nothing to embed),
with the Runtime closed before the spawn since embedded Qdrant locks its directory.
Every read has a deadline, so a hung chat fails the test instead of blocking the suite.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import re
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from agent.config import Settings
from agent.state.sqlite import SQLiteState
from agent.runtime import Runtime
from tests.conftest import SAMPLE_KB, seed_embeddings
from tests.knowledge_fixtures import copy_data_dir

DOC = "bcy2025-psoc-chart-twc-qa.md"
FIRST_Q = "under the BCY2025 PSOC chart, what's the weekly for a fam of 3 making $2,890/mo?"
FOLLOW_UP = "and a family of 4 at $5,161/mo?"
FIRST_ANSWER = "A family of 3 at $2,890/mo pays **$34 per week**."
REWRITTEN = "BCY2025 PSOC weekly amount for a family of 4 with monthly income $5,161"
OFFTOPIC = "write me a haiku about my cat"
PROMPT = "you>"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


class Chat:
    """`askdesk chat` on a pty: send lines and control keys, read screen text up to a marker."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        exe = Path(sys.executable).with_name("askdesk")
        command = [str(exe)] if exe.is_file() else [sys.executable, "-c", "from bot.cli import main; main()"]
        self.master, slave = pty.openpty()
        # the terminal's size, as a real one would report it (rich reads it, not only COLUMNS)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, b"\x00\x32\x00\x78\x00\x00\x00\x00")  # 50 rows, 120 cols

        def controlling_terminal() -> None:  # new session + this pty as its tty: ^C becomes SIGINT
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            # as from a login shell: a test run started in the background (`cmd &` in a script)
            # ignores SIGINT, and that would be inherited
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

        self.proc = subprocess.Popen(command + args, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     close_fds=True, preexec_fn=controlling_terminal)
        os.close(slave)
        self.pending = ""  # read but not yet returned by expect()
        self.transcript = ""  # everything the user saw
        self.closed = False

    def _read(self, deadline: float) -> bool:
        """One chunk into `pending`; False at EOF (the child closed the terminal)."""
        if self.closed:
            return False
        ready, _, _ = select.select([self.master], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError(f"no output within the deadline; screen so far:\n{self.transcript}")
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO on Linux once the child side is gone
            chunk = b""
        if not chunk:
            self.closed = True
            return False
        text = ANSI.sub("", chunk.decode("utf-8", errors="replace")).replace("\r\n", "\n")
        self.pending += text
        self.transcript += text
        return True

    def expect(self, marker: str, timeout: float = 15.0) -> str:
        """Screen text up to and including `marker` (fails on a hang or an early exit)."""
        deadline = time.monotonic() + timeout
        while marker not in self.pending:
            if not self._read(deadline):
                raise AssertionError(f"chat ended before {marker!r}; screen:\n{self.transcript}")
        end = self.pending.index(marker) + len(marker)
        seen, self.pending = self.pending[:end], self.pending[end:]
        return seen

    def ask(self, line: str, timeout: float = 15.0) -> str:
        """Type a line, return everything shown until the next prompt."""
        os.write(self.master, line.encode() + b"\r")
        return self.expect(PROMPT, timeout)

    def key(self, byte: bytes) -> None:
        os.write(self.master, byte)

    def finish(self, timeout: float = 10.0) -> tuple[int, str]:
        """Exit code and the rest of the screen once the program ends (fails on a hang)."""
        deadline = time.monotonic() + timeout
        while self._read(deadline):
            pass
        rest, self.pending = self.pending, ""
        return self.proc.wait(max(0.1, deadline - time.monotonic())), rest

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: only what it started
            self.proc.wait(5)
        os.close(self.master)


@pytest.fixture(scope="module")
def kb_data(tmp_path_factory) -> Path:
    """A data dir with DOC ingested, built once; each test works on its own copy."""
    from agent.knowledge.ingest import ingest

    data = seed_embeddings(tmp_path_factory.mktemp("chat-kb") / "data")

    async def build() -> None:
        runtime = Runtime.open(Settings(data_dir=data))
        try:
            report = await ingest(runtime, [SAMPLE_KB / DOC])
            assert report.files == 1 and report.chunks > 0
        finally:
            await runtime.close()  # embedded Qdrant: one client per directory

    asyncio.run(build())
    return data


@pytest.fixture
def data_dir(kb_data, tmp_path) -> Path:
    copy = tmp_path / "data"
    return copy_data_dir(kb_data, copy)


@pytest.fixture
def spawn(data_dir):
    """Start `askdesk chat ARGS...` over `data_dir`; provider env comes from the test's os.environ
    (conftest has cleared every key, so the default is search-only)."""
    chats: list[Chat] = []

    def start(*args: str, **extra_env: str) -> Chat:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        env.update(ASKDESK_DATA_DIR=str(data_dir), TERM="dumb", COLUMNS="120", LINES="50",
                   PYTHONIOENCODING="utf-8", **extra_env)
        env.pop("NO_COLOR", None)
        env.pop("FORCE_COLOR", None)
        chat = Chat(["chat", *args], env)
        chats.append(chat)
        return chat

    yield start
    for chat in chats:
        chat.kill()


def history(data_dir: Path, thread: str) -> list[tuple[str, str]]:
    async def load():
        store = SQLiteState(Settings(data_dir=data_dir).sqlite_path)
        try:
            return (await store.load("cli", thread)).messages
        finally:
            await store.close()

    return [(m.role, m.content) for m in asyncio.run(load())]


def assert_clean_exit(code: int, chat: Chat) -> None:
    assert code == 0, chat.transcript
    assert "Traceback" not in chat.transcript and "Error" not in chat.transcript, chat.transcript


# --------------------------------------------------------------------------- search-only


def test_search_only_session_answers_refuses_follows_up_and_exits(spawn, data_dir):
    chat = spawn("--thread", "T")
    banner = chat.expect(PROMPT, timeout=20)
    assert "No LLM configured" in banner and "ASKDESK_AGENT_MODEL" in banner  # names what to set
    assert "'exit' or Ctrl-D" in banner

    first = chat.ask(FIRST_Q)
    assert "askdesk>" in first and "$34 per week" in first
    sources = first.split("Sources", 1)[1]
    assert "1." in sources and DOC in sources
    assert "route=knowledge" in first and "llm calls=0" in first
    assert "No LLM configured" not in first  # the notice is shown once per session, not per answer

    refused = chat.ask(OFFTOPIC)
    assert "Sorry" in refused and "organisation's documents" in refused and "route=offtopic" in refused
    assert "Sources" not in refused

    follow = chat.ask(FOLLOW_UP)
    assert "$352" in follow and "route=knowledge" in follow and DOC in follow.split("Sources", 1)[1]

    assert "route=" not in chat.ask("   ")  # a blank line is skipped, the prompt comes back
    os.write(chat.master, b"exit\r")
    code, _ = chat.finish()
    assert_clean_exit(code, chat)

    turns = history(data_dir, "T")
    assert [content for role, content in turns if role == "user"] == [FIRST_Q, OFFTOPIC, FOLLOW_UP]
    assert [role for role, _ in turns] == ["user", "assistant"] * 3
    assert "$34 per week" in turns[1][1] and "$352" in turns[5][1]
    assert history(data_dir, "other") == []


def test_after_a_refusal_search_searches_the_refused_message_anyway(spawn, data_dir):
    """No off-topic check is perfect: a refusal says how to override it, and `/search` does."""
    chat = spawn("--thread", "T")
    chat.expect(PROMPT, timeout=20)
    refused = chat.ask(OFFTOPIC)
    assert "route=offtopic" in refused and "Type /search to search the documents anyway" in refused
    searched = chat.ask("/search")
    assert "route=knowledge" in searched and "llm calls=0" in searched and "Sources" in searched
    assert "/search" not in searched.split("askdesk>", 1)[1]  # an answer: no hint under it
    os.write(chat.master, b"exit\r")
    code, _ = chat.finish()
    assert_clean_exit(code, chat)
    assert [c for r, c in history(data_dir, "T") if r == "user"] == [OFFTOPIC, OFFTOPIC]


@pytest.mark.parametrize("key", [b"\x04", b"\x03"], ids=["ctrl-d", "ctrl-c"])
def test_ctrl_d_or_ctrl_c_at_the_prompt_leaves_cleanly_and_the_thread_resumes(spawn, data_dir, key):
    chat = spawn("--thread", "T")
    chat.expect(PROMPT, timeout=20)
    assert "$34 per week" in chat.ask(FIRST_Q)
    chat.key(key)
    code, _ = chat.finish()
    assert_clean_exit(code, chat)
    assert [c for r, c in history(data_dir, "T") if r == "user"] == [FIRST_Q]

    again = spawn("--thread", "T")  # same thread id, new process: the history is still there
    again.expect(PROMPT, timeout=20)
    assert "$352" in again.ask(FOLLOW_UP)
    again.key(b"\x04")
    code, _ = again.finish()
    assert_clean_exit(code, again)
    assert [c for r, c in history(data_dir, "T") if r == "user"] == [FIRST_Q, FOLLOW_UP]


# --------------------------------------------------------------------------- with a model


def final_step(answer: str, *sources: str) -> dict:
    return {"step": {"kind": "final_answer", "answer": answer,
                     "references": [{"source": s} for s in sources], "confidence": 0.9}}


def test_a_followup_sends_the_first_turn_to_the_model(spawn, data_dir):
    from tests.fakes import FakeLLMServer

    with FakeLLMServer() as srv:
        # one model for both roles: the first question is routed by the pre-filter (one call);
        # the follow-up needs the router model to rewrite it, then the agent answers
        srv.script("openai", final_step(FIRST_ANSWER, DOC),
                   {"route": "knowledge", "search_query": REWRITTEN},
                   final_step("A family of 4 at $5,161/mo pays $352 a month.", DOC))
        chat = spawn("--thread", "T", ASKDESK_AGENT_MODEL="openai/gpt-4.1-mini",
                     ASKDESK_ROUTER_MODEL="openai/gpt-4.1-mini", **srv.env())
        banner = chat.expect(PROMPT, timeout=20)
        assert "No LLM configured" not in banner

        first = chat.ask(FIRST_Q)
        assert "A family of 3 at $2,890/mo pays $34 per week." in first  # Markdown rendered, ** gone
        assert "Sources" in first and DOC in first and "llm calls=1" in first
        follow = chat.ask(FOLLOW_UP)
        assert "$352 a month" in follow and "llm calls=2" in follow
        chat.key(b"\x04")
        code, _ = chat.finish()
        assert_clean_exit(code, chat)
        srv.assert_complete()

        first_call, router_call, agent_call = srv.requests  # nothing else was sent
        assert {r.provider for r in srv.requests} == {"openai"} and {r.status for r in srv.requests} == {200}
        assert "assistant" not in [m["role"] for m in first_call.body["messages"]]  # a new thread: no history
        assert FIRST_Q in router_call.text and FOLLOW_UP.replace("$", "") in router_call.text.replace("$", "")
        texts = [(m["role"], m.get("content") or "") for m in agent_call.body["messages"]]
        assert [role for role, _ in texts] == ["system", "user", "assistant", "user", "user"]
        assert texts[1:3] == [("user", FIRST_Q), ("assistant", FIRST_ANSWER)]  # the first turn, as turns
        # then the passages it needs, as quoted tool results, and the follow-up last
        assert texts[3][1].startswith("<tool_result") and "$352" in texts[3][1]
        assert texts[4] == ("user", FOLLOW_UP)

    assert [c for r, c in history(data_dir, "T") if r == "user"] == [FIRST_Q, FOLLOW_UP]


def test_search_only_answer_numbers_its_passages_as_its_sources():
    """Issue 20: two of five passages from one section gave "1." to "5." in the text but four
    sources. Passages citing the same file and section now share one entry: entry i is source i."""
    from agent.capabilities.knowledge import KnowledgeCapability
    from agent.capabilities.base import Found
    from agent.knowledge.search import Passage
    from agent.prompts import default_prompts
    from agent.tools.formatted_context import reference_of
    from agent.tools.base import ToolResult

    def passage(n: int, source: str, section: str) -> Passage:
        return Passage(text=f"Passage number {n} about income limits.", source=source, title=source.upper(),
                       section=section, score=1 - n / 10)

    found = [passage(1, "a.md", "Limits"), passage(2, "b.md", "Pay"), passage(3, "a.md", "Limits"),
             passage(4, "c.md", ""), passage(5, "d.md", "Rates"), passage(6, "e.md", "More")]
    refs: list = []
    for p in found:
        if all((r.source, r.section) != (p.source, p.section) for r in refs):
            refs.append(reference_of(p))
    result = ToolResult(text="", references=refs, data=found)
    shown = KnowledgeCapability.__new__(KnowledgeCapability).search_only(Found("knowledge", "get_formatted_context", {}, result, "q"),
                                            default_prompts())
    numbers = [int(n) for n in re.findall(r"^\*\*\[(\d+)\]\*\* ", shown.text, flags=re.MULTILINE)]
    assert numbers == list(range(1, len(shown.references) + 1)) == [1, 2, 3, 4]
    assert [r.source for r in shown.references] == ["a.md", "b.md", "c.md", "d.md"]  # e.md: a sixth passage, not shown
    first = shown.text.split("\n**[2]** ")[0].split("\n**[1]** ", 1)[1]
    assert first.startswith("A.MD — Limits") and "Passage number 1" in first and "Passage number 3" in first
    for i, ref in enumerate(shown.references, start=1):  # each entry names its own source
        entry = shown.text.split(f"\n**[{i}]** ", 1)[1]
        assert entry.startswith(ref.title)


def test_the_rate_limit_note_does_not_contradict_itself():
    """Issue 20: "Your question wasn't lost: just send it again" — it was not answered, and it
    has to be sent again: the note says exactly that."""
    from agent.prompts import default_prompts

    note = default_prompts().render("rate_limited", seconds=12)
    assert "12 s" in note and "send it" in note and "again" in note
    assert "lost" not in note and "haven't answered" in note


def test_a_refusal_without_a_domain_file_names_a_few_titles_in_one_sentence():
    """Issue 20: with no domain file the refusal listed six document titles in parentheses, one
    run-on sentence. People now read at most three, quoted, "such as “A”, “B” and “C”", and no
    more once the titles are long; the models' prompts still get six."""
    from agent.understanding.identity import GENERIC, derive

    assert derive([]) == GENERIC
    assert derive(["Sick Leave"]) == f"{GENERIC}, such as “Sick Leave”"
    six = ["Sick Leave", "Paid Time Off", "Remote Work", "Expenses", "Travel", "Security"]
    assert derive(six) == f"{GENERIC}, such as “Sick Leave”, “Paid Time Off” and “Remote Work”"
    assert derive(six, 6).count("“") == 6
    long = ["Evaluation of the Effectiveness of Subsidized Child Care Report - 86th Texas Legislature (2019)",
            "Early Childhood System Needs Assessment in Texas - Part 2 (Methodology) Q&A", "Short"]
    assert derive(long) == f"{GENERIC}, such as “{long[0]}”"  # the first is always named
