"""Files attached to a question, at the service (issue 20): read with the ingestion loaders,
the passages that match the question given to the model for that thread only (never ingested),
one line for each file that cannot be used (images, unknown types, too large, damaged), and an
image-only message never told "your message is empty". Real Askdesk over the small KB subset,
a scripted model; the surfaces' downloads are in test_slack_private_files.py and
test_teams_private_files.py."""

from __future__ import annotations

import re

import pytest

from agent.answers import Attachment
from agent.config import Settings
from agent.knowledge.loaders import load_bytes, load_document
from agent.knowledge.search import search
from agent.prompts import PromptSet, default_prompts
from agent.providers.function import FunctionModel, ScriptedModel
from agent.providers.models import ServiceModels
from agent.turn.service import AskRequest
from tests.fakes.pdf import make_pdf, report_pages
from tests.fakes.steps import final
from tests.knowledge_fixtures import service_on

NEEDLE = "The travel reimbursement deadline for field staff is 30 June 2026."
PDF = make_pdf(report_pages(20, needle_page=14, needle=NEEDLE))
QUESTION = "when is the travel reimbursement deadline for field staff?"


def pdf(name: str = "ops-report.pdf", data: bytes = PDF) -> Attachment:
    return Attachment(name=name, mimetype="application/pdf", size=len(data), data=data)


def sent_to_model(model: ScriptedModel, call: int = -1) -> str:
    return "\n".join(m.content for m in model.calls[call].messages)


def agent(*replies) -> ServiceModels:
    return ServiceModels(router=None, agent=ScriptedModel(*replies), notice=None)


def cites_the_needle(messages, response_model) -> dict:
    """A model that answers from the document holding the deadline, citing its index."""
    text = "\n".join(m.content for m in messages)
    blocks = re.findall(r'<document index="(\d+)"[^>]*>(.*?)</document>', text, re.DOTALL)
    index = next((n for n, body in blocks if "30 June 2026" in body), None)
    return final(f"The deadline is 30 June 2026 [{index}]." if index else "I don't know.", confidence=0.9)


# --- the loaders --------------------------------------------------------------------------------

def test_attached_bytes_go_through_the_ingestion_loaders_and_csv_becomes_a_table(tmp_path):
    path = tmp_path / "ops-report.pdf"
    path.write_bytes(PDF)
    assert load_bytes("ops-report.pdf", PDF).text == load_document(path).text  # the same loader
    doc = load_bytes("offices.csv", b"office,city,phone\nNorth,Austin,512-555-0100\nSouth,Dallas,214-555-0199\n")
    assert doc.format == "csv"
    assert doc.text.splitlines()[:3] == ["| office | city | phone |", "|---|---|---|", "| North | Austin | 512-555-0100 |"]


def test_packaged_texts_fill_in_for_a_prompts_dir_without_them():
    old = PromptSet({k: v for k, v in default_prompts().prompts.items() if not k.startswith("file_")})
    assert "scan.png" in old.text("file_image", name="scan.png")


# --- the turn -----------------------------------------------------------------------------------

async def test_a_pdf_answers_its_question_for_that_thread_and_is_never_ingested(kb_runtime):
    models = ServiceModels(router=None, agent=FunctionModel(cites_the_needle), notice=None)
    async with service_on(kb_runtime, models=models) as service:
        result = await service.answer(AskRequest(text=QUESTION, thread_id="t1", attachments=[pdf()]))
        seen = sent_to_model(models.agent, 0)
        assert NEEDLE in seen and "attached to this conversation" in seen
        assert len(seen) < 30_000  # the passages that match, not the whole 20 pages (62,000 characters)
        assert result.answer == "The deadline is 30 June 2026 [1]."  # renumbered as the sources list
        assert [(r.source, r.section) for r in result.references] == [("ops-report.pdf", "Page 14")]
        # a follow-up in the same thread still has the file, without attaching it again
        again = await service.answer(AskRequest(text="and the reimbursement deadline again?", thread_id="t1"))
        assert NEEDLE in sent_to_model(models.agent, 1) and again.references[0].source == "ops-report.pdf"
        # another thread does not
        other = await service.answer(AskRequest(text=QUESTION, thread_id="t2"))
        assert NEEDLE not in sent_to_model(models.agent, 2) and other.answer == "I don't know."
    # nothing of the file reached the knowledge base
    assert all("reimbursement deadline" not in p.text for p in await search(kb_runtime, NEEDLE, top_k=5))


async def test_an_image_only_message_gets_one_line_about_the_image_not_an_empty_message_note(kb_runtime):
    async with service_on(kb_runtime, models=agent()) as service:
        image = Attachment(name="scan.png", mimetype="image/png", size=2048, data=b"\x89PNG\r\n")
        assert service.input_problem("", files=True) is None and service.input_problem("") is not None
        result = await service.answer(AskRequest(text="", thread_id="img", attachments=[image]))
        assert result.route == "clarify" and "scan.png" in result.answer and "image" in result.answer
        assert "empty" not in result.answer.lower() and "\n" not in result.answer
        assert (await service.state.load("cli", "img")).messages == []  # nothing to remember


async def test_a_file_without_a_question_is_summarised(kb_runtime):
    models = agent(final("A quarterly operations report [1].", "ops-report.pdf"))
    async with service_on(kb_runtime, models=models) as service:
        result = await service.answer(AskRequest(text="   ", thread_id="sum", attachments=[pdf()]))
    assert result.answer.startswith("A quarterly operations report")
    assert "Summarise the attached file." in sent_to_model(models.agent)
    assert "Quarterly operations report - page 1" in sent_to_model(models.agent)  # from its start


@pytest.mark.parametrize("bad, line", [
    (Attachment(name="broken.pdf", mimetype="application/pdf", data=b"%PDF-1.4\n1 0 obj <</Type /Catalog"), "couldn't read broken.pdf"),
    (Attachment(name="big.pdf", mimetype="application/pdf", size=50_000_000, problem="too_large"), "big.pdf is larger than the 10 MB"),
    (Attachment(name="big2.txt", mimetype="text/plain", data=b"x" * 10_000_001), "big2.txt is larger than the 10 MB"),
    (Attachment(name="notes.odt", mimetype="application/vnd.oasis.opendocument.text", size=1200),
     "only read text, Markdown, HTML, PDF, Word, PowerPoint, Excel and CSV files, so I skipped notes.odt"),
    (Attachment(name="lost.pdf", mimetype="application/pdf", problem="download_failed"), "couldn't download lost.pdf"),
])
async def test_a_bad_file_is_one_line_before_the_answer_and_the_question_is_still_answered(kb_runtime, bad, line):
    models = agent(final("Families of 4 qualify up to the income limit.", confidence=0.8))
    async with service_on(kb_runtime, models=models) as service:
        shown: list[str] = []

        async def sink(text: str) -> None:
            shown.append(text)

        result = await service.answer(AskRequest(text="who is eligible by income?", attachments=[bad]), on_text=sink)
    first, rest = result.answer.split("\n\n", 1)
    assert line in first and rest == "Families of 4 qualify up to the income limit."
    assert "".join(shown) == result.answer  # streamed in the order the answer reads
    assert bad.name not in sent_to_model(models.agent)  # nothing of it reached the model


async def test_search_only_shows_the_files_best_passage_with_its_page(kb_runtime):
    async with service_on(kb_runtime) as service:  # no model configured
        result = await service.answer(AskRequest(text=QUESTION, thread_id="so", attachments=[pdf()]))
    assert result.search_only and "30 June 2026" in result.answer
    assert ("ops-report.pdf", "Page 14") == (result.references[0].source, result.references[0].section)


async def test_a_private_question_is_not_remembered_and_its_files_stay_out_of_the_thread(kb_runtime):
    models = agent(final("The deadline is 30 June 2026 [1].", "ops-report.pdf"), final("I don't know.", confidence=0.1))
    async with service_on(kb_runtime, models=models) as service:
        await service.answer(AskRequest(text=QUESTION, surface="teams", thread_id="chan", private=True,
                                        attachments=[pdf()]))
        assert (await service.state.load("teams", "chan")).messages == []
        await service.answer(AskRequest(text=QUESTION, surface="teams", thread_id="chan"))
        assert NEEDLE not in sent_to_model(models.agent, 1)
        assert len((await service.state.load("teams", "chan")).messages) == 2  # a shared question is kept


def test_file_problems_are_known_before_downloading(tmp_path):
    from agent.turn.files import file_problem

    settings = Settings(data_dir=tmp_path, file_max_mb=10)
    assert file_problem("a.pdf", "application/pdf", 50_000_000, settings) == "too_large"
    assert file_problem("photo.jpg", "image/jpeg", 10, settings) == "image"
    assert file_problem("archive.zip", "application/zip", 10, settings) == "unsupported"
    assert file_problem("sheet.xlsx", "", 10, settings) is None  # Office files are read (tests/test_office_loaders.py)
    assert file_problem("report", "application/pdf", None, settings) is None  # the type stands in for a suffix
    assert file_problem("notes.md", "", None, settings) is None


def test_thread_files_are_bounded_by_their_text_and_replace_a_file_of_the_same_name():
    from agent.knowledge.loaders import Document
    from agent.turn.context import ThreadFiles

    files = ThreadFiles(max_chars=1000)
    doc = lambda name, size: Document(source=name, title=name, text="x" * size, format="text")  # noqa: E731
    files.keep("slack", "t1", [doc("a.txt", 400)])
    files.keep("slack", "t1", [doc("a.txt", 300)])  # sent again: replaces, not adds
    assert [len(d.text) for d in files.get("slack", "t1")] == [300]
    files.keep("slack", "t2", [doc("b.txt", 600)])
    files.keep("slack", "t3", [doc("c.txt", 600)])  # over 1,000 characters: the oldest thread goes
    assert files.get("slack", "t1") == [] and files.get("slack", "t2") == [] and files.get("slack", "t3")
