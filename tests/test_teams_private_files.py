"""Teams: answers only the asker sees and files attached to a question (issue 20). The real
Teams SDK app (dev mode) receives Bot Framework activity JSON; the recording fake Bot Connector
keeps targeted messages visible to their recipient only, creates personal chats and hosts
files at pre-authorised download URLs; the real Askdesk and the fake LLM server."""

from __future__ import annotations

from tests.fakes.pdf import make_pdf, report_pages
from tests.fakes.teams_connector import (
    CHANNEL_ID,
    channel_conversation,
    group_conversation,
    personal_conversation,
)
from tests.test_teams_bot import AGENT, KB_DOC, connector, final, llm, make_bot  # noqa: F401  (fixtures)

NEEDLE = "The travel reimbursement deadline for field staff is 30 June 2026."
ADA = "29:user-ada"


def memory(teams):
    askdesk = teams.bot.askdesk
    return askdesk.state


def file_attachment(url: str, name: str, file_type: str) -> dict:
    """A file sent in a personal chat, as Teams delivers it (the manifest's supportsFiles)."""
    return {"contentType": "application/vnd.microsoft.teams.file.download.info",
            "contentUrl": f"https://contoso-my.sharepoint.com/personal/ada/Documents/Microsoft Teams Chat Files/{name}",
            "name": name, "content": {"downloadUrl": url, "uniqueId": "1a2b3c4d", "fileType": file_type}}


# --- private answers ----------------------------------------------------------------------------

async def test_private_channel_answers_the_asker_with_a_targeted_message_and_remembers_nothing(
        make_bot, connector, llm):
    llm.script(AGENT, final("You have 12 days of leave left [1].", KB_DOC))
    teams = await make_bot(channel_answer_modes={CHANNEL_ID: "private"})
    conversation = channel_conversation("1700000000100")
    await teams.say("how much leave do I have?", conversation=conversation, mention=True)
    await teams.bot.drain()

    [answer] = [c for c in connector.calls_in(conversation["id"]) if c.type == "message"]
    assert answer.targeted and answer.body["recipient"]["id"] == ADA and "12 days of leave" in answer.text
    assert connector.visible_to_everyone(conversation["id"]) == []  # no one else sees it
    assert (await memory(teams).load("teams", conversation["id"])).messages == []
    # the asker's unmentioned follow-up is not answered: nothing public to follow up on
    await teams.say("and next year?", conversation=conversation)
    await teams.bot.drain()
    assert len(llm.requests_for(AGENT)) == 1


async def test_privately_in_a_group_chat_falls_back_to_a_personal_chat_where_targeting_is_refused(
        make_bot, connector, llm):
    llm.script(AGENT, final("Your family of 3 pays $45 a week [1].", KB_DOC), final("And $50 next year [1].", KB_DOC))
    connector.script(lambda call: call.targeted, 400, "Targeted messages are not supported")
    teams = await make_bot()
    chat = group_conversation()
    await teams.say("privately what does a family of 3 pay?", conversation=chat, mention=True)
    await teams.bot.drain()

    [created] = connector.created
    assert [m["id"] for m in created["members"]] == [ADA]
    [answer] = connector.sent_messages(created["id"])
    assert "$45 a week" in answer["text"]
    assert connector.visible_to_everyone(chat["id"]) == []
    sent = llm.requests_for(AGENT)[0].text
    assert "what does a family of 3 pay?" in sent and "privately" not in sent
    # the tenant refused targeting once: the next private answer goes to a personal chat directly
    await teams.say("privately: and next year?", conversation=chat, mention=True)
    await teams.bot.drain()
    assert len([c for c in connector.calls if c.targeted]) == 1 and len(connector.created) == 2
    assert (await memory(teams).load("teams", chat["id"])).messages == []


# --- attached files ---------------------------------------------------------------------------------

async def test_a_pdf_sent_in_a_personal_chat_is_downloaded_and_answers(make_bot, connector, llm):
    llm.script(AGENT, final("The deadline is 30 June 2026.", "ops-report.pdf"))
    teams = await make_bot(teams_streaming=False)
    url = connector.add_file("ops-report.pdf", make_pdf(report_pages(20, needle_page=14, needle=NEEDLE)),
                             "application/pdf")
    conversation = personal_conversation()
    await teams.say("when is the travel reimbursement deadline?", conversation=conversation,
                    attachments=[file_attachment(url, "ops-report.pdf", "pdf")])
    await teams.bot.drain()
    assert [c.method for c in connector.calls if c.method == "GET"] == ["GET"]
    assert NEEDLE in llm.requests_for(AGENT)[0].text
    [answer] = connector.sent_messages(conversation["id"])
    assert "30 June 2026" in answer["text"]


async def test_an_image_only_message_gets_one_line_about_it_and_the_image_is_not_fetched(make_bot, connector, llm):
    teams = await make_bot(teams_streaming=False)
    conversation = personal_conversation()
    image_url = connector.add_file("whiteboard.png", b"\x89PNG\r\n", "image/png")
    await teams.say("", conversation=conversation, attachments=[
        {"contentType": "image/*", "contentUrl": image_url},
        {"contentType": "text/html", "content": f'<div><img src="{image_url}" itemtype="http://schema.skype.com/AMSImage"></div>'},
    ])
    await teams.bot.drain()
    [answer] = connector.sent_messages(conversation["id"])
    assert "can't read images" in answer["text"] and "empty" not in answer["text"].lower()
    assert [c for c in connector.calls if c.method == "GET"] == [] and llm.requests_for(AGENT) == []


async def test_a_file_shared_in_a_channel_gets_a_pointer_to_the_personal_chat(make_bot, connector, llm):
    llm.script(AGENT, final("Families of 4 qualify [1].", KB_DOC))
    teams = await make_bot()
    conversation = channel_conversation("1700000000200")
    await teams.say("who is eligible?", conversation=conversation, mention=True, attachments=[
        {"contentType": "reference", "name": "budget.xlsx",
         "contentUrl": "https://contoso.sharepoint.com/sites/team/Shared Documents/budget.xlsx"}])
    await teams.bot.drain()
    [answer] = connector.sent_messages(conversation["id"])
    first, rest = answer["text"].split("\n\n", 1)
    assert "budget.xlsx" in first and "personal chat" in first and rest.startswith("Families of 4 qualify")


def test_the_app_package_lets_teams_send_files_and_offers_privately_where_others_read_along():
    import json

    from tests.conftest import REPO

    [bot] = json.loads((REPO / "teams" / "manifest.json").read_text())["bots"]
    assert bot["supportsFiles"] is True  # personal chats deliver files as file.download.info
    shared = [lst for lst in bot["commandLists"] if "team" in lst["scopes"]]
    assert [c["title"] for lst in shared for c in lst["commands"]] == ["privately"]
    assert all(c["title"] != "privately" for lst in bot["commandLists"] if "personal" in lst["scopes"]
               for c in lst["commands"])
