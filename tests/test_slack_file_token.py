"""The Slack bot token goes to Slack's exact origins only (issue 31): the configured Web API's
and https://files.slack.com, compared by scheme, host AND port. A file URL in an event is text
someone else wrote; anything else gets no request with the token — not another port of the same
host, not plain http, not a look-alike host — and a redirect never carries the token on.
Through the real Bolt app, the fake Slack Web API (which serves files to a bot token only) and a
second fake on another port of the same host."""

from __future__ import annotations

import pytest

from bot.slack.files import remote_files
from tests.fakes.slack_api import FakeSlackAPI, message_event
from tests.test_slack_bot import (  # noqa: F401  (fixtures)
    AGENT,
    BOT_USER_ID,
    bot_messages,
    fake_slack,
    final,
    llm,
    make_bot,
)

SLACK_API = "https://slack.com/api/"
PATH = "/files-pri/T0001-F0001/download/report.pdf"


@pytest.mark.parametrize("url,sent", [
    (f"https://files.slack.com{PATH}", True),
    (f"https://files.slack.com:443{PATH}", True),
    (f"https://FILES.Slack.com{PATH}", True),
    (f"https://slack.com{PATH}", True),  # the Web API's own origin
    (f"http://files.slack.com{PATH}", False),  # plain http: the token would travel in clear
    (f"https://files.slack.com:8443{PATH}", False),
    (f"https://files.slack.com.:443{PATH}", False),
    (f"https://files.slack.com.evil.example{PATH}", False),
    (f"https://files.slack.com@evil.example{PATH}", False),  # user info: the host is evil.example
    (f"https://someone@files.slack.com{PATH}", False),
    (f"https://evil.example{PATH}?files.slack.com", False),
    (f"https://other.slack.com{PATH}", False),  # any other Slack host, as the old rule allowed
    (f"https://a.slack-edge.com{PATH}", False),
    ("files.slack.com/files-pri/x", False),
    ("ftp://files.slack.com/x", False),
])
def test_the_token_is_attached_only_for_slacks_exact_origins(url, sent):
    [remote] = remote_files([{"name": "report.pdf", "url_private_download": url}], token="xoxb-1", api_url=SLACK_API)
    if sent:
        assert remote.url == url and remote.headers == {"Authorization": "Bearer xoxb-1"}
    else:
        assert remote.url is None and remote.headers == {}  # not fetched at all


def test_a_configured_api_origin_is_matched_exactly_too():
    api = "http://127.0.0.1:4001/api/"
    urls = {"http://127.0.0.1:4001/f": True, "http://127.0.0.1:4002/f": False, "https://127.0.0.1:4001/f": False,
            "http://localhost:4001/f": False}
    found = remote_files([{"name": "f.txt", "url_private": u} for u in urls], token="xoxb-1", api_url=api)
    assert [bool(r.headers) for r in found] == list(urls.values())


@pytest.fixture
async def elsewhere():
    """Another server on the same host, another port: it records any token it is sent."""
    fake = await FakeSlackAPI().start()
    yield fake
    await fake.stop()


async def test_a_file_on_another_port_or_scheme_or_behind_a_redirect_gets_no_token(
        make_bot, fake_slack, llm, elsewhere):
    llm.script(AGENT, final("The deadline is 30 June [1].", "notes.txt"))
    slack = await make_bot()
    good = fake_slack.add_file("notes.txt", b"The travel deadline is 30 June.", "text/plain")
    port = fake_slack.add_file("port.txt", b"other port", "text/plain")
    port["url_private_download"] = elsewhere.add_file("port.txt", b"x", "text/plain")["url_private_download"]
    scheme = fake_slack.add_file("scheme.txt", b"https", "text/plain")
    scheme["url_private_download"] = scheme["url_private_download"].replace("http://", "https://")
    hop = fake_slack.add_file("hop.txt", b"redirected", "text/plain")
    hop["url_private_download"] = fake_slack.redirect(elsewhere.add_file("hop.txt", b"y", "text/plain")
                                                      ["url_private_download"])
    ts = "1700100700.000100"
    await slack.send_event(message_event(f"<@{BOT_USER_ID}> when is the travel deadline?", ts=ts, type="app_mention",
                                         files=[good, port, scheme, hop]))
    await slack.bot.drain()

    assert [c.args["_token"] for c in fake_slack.calls_to("files:download")] == ["xoxb-test"]  # the good file
    assert [c.args["_token"] for c in fake_slack.calls_to("files:redirect")] == ["xoxb-test"]  # Slack's origin
    assert [c.args["_token"] for c in elsewhere.calls_to("files:download")] == [""]  # the hop, without it
    assert "The travel deadline is 30 June." in llm.requests_for(AGENT)[0].text
    [reply] = bot_messages(fake_slack, "C0001", ts)
    notes = reply["text"].split("\n\n", 1)[0].splitlines()
    assert notes == [f"I couldn't download {name}, so I answered without it — try attaching it again."
                     for name in ("port.txt", "scheme.txt", "hop.txt")]
