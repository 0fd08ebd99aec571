"""A surface is a plug-in: one registered by an entry point is served by `askdesk serve <name>`
(run_serve) over the shared service and turn runner with no edit to agent/ or bot/, a broken
surface plug-in is one log line while the others start, and the settings Slack and Teams moved
out of the core keep the environment variable and askdesk.yaml names deployments use.

This module is itself the plug-in: `register(r)` below is what its entry point names."""

from __future__ import annotations

import asyncio
import logging

import pytest
from pydantic import Field

from agent.config import PluginSettings, Settings, settings_page
from agent.plugins import load_plugins
from bot.commands.serve import Served, StartupError, run_serve
from bot.escalation import Target
from bot.surface import Desk, Stop, Surface
from bot.turn import Delivery, Incoming
from tests.test_sources_sync import _EntryPoint

HERE = __name__


class EchoSettings(PluginSettings):
    """The echo surface (a test's)."""

    section = "echo"

    greeting: str = Field("hi", description="What the echo surface asks.")


class EchoReply:
    """Keeps what the turn runner delivers."""

    streams = False

    def __init__(self) -> None:
        self.delivered: list[Delivery] = []

    async def progress(self, step: str) -> None:
        pass

    async def text(self, delta: str) -> None:
        pass

    async def finish(self, delivery: Delivery) -> str | None:
        self.delivered.append(delivery)
        return "m1"

    async def note(self, text: str) -> None:
        pass

    async def apologise(self, text: str) -> None:
        pass


class EchoSurface(Surface):
    """Asks one question through the shared runner when it starts."""

    name = "echo"
    settings = EchoSettings
    stopped: list[str] = []

    async def start(self, desk: Desk) -> Stop:
        self.app = {"desk": desk, "reply": EchoReply()}
        await desk.runner.run(Incoming(surface=self.name, text=self.config().greeting, thread_id="echo:1",
                                       user_id="someone"), self.app["reply"])
        self.port = 4242

        async def stop() -> None:
            EchoSurface.stopped.append(self.name)

        return stop

    @classmethod
    def target(cls, ref: str) -> Target | None:
        return Target(cls.name, ref) if ref.startswith("echo-") else None


class BuggySurface(Surface):
    name = "buggy"

    async def start(self, desk: Desk) -> Stop:
        raise RuntimeError("boom")


def register(r) -> None:
    r.surface(EchoSurface)


async def _serve(settings: Settings, names: list[str], plugins) -> Served:
    stop, ready = asyncio.Event(), []
    task = asyncio.create_task(run_serve(settings, names, host="127.0.0.1", stop=stop, on_ready=ready.append,
                                         plugins=plugins))
    try:
        for _ in range(1500):
            if ready or task.done():
                break
            await asyncio.sleep(0.02)
        if task.done():
            task.result()
        assert ready, "serve did not start"
        return ready[0]
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def test_a_plugin_surface_is_served_and_a_broken_one_is_one_line(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="askdesk.plugins")
    plugins = load_plugins([_EntryPoint("broken", "tests.no_such_surface"), _EntryPoint("echo", HERE)])
    assert list(plugins.surfaces) == ["echo"] and [f[0] for f in plugins.failed] == ["broken"]
    assert [r.getMessage() for r in caplog.records if r.name == "askdesk.plugins"] == [
        "plug-in broken (?) was not loaded: ModuleNotFoundError: No module named 'tests.no_such_surface'"]
    EchoSurface.stopped.clear()

    settings = Settings(data_dir=tmp_path / "data", echo_greeting="who is eligible?", escalation_channel="echo-desk")
    served = await _serve(settings, ["echo"], plugins)

    # started through the base class over the shared service and runner, its own settings read
    assert served.echo["desk"].askdesk is served.askdesk and served.echo_port == 4242
    [delivery] = served.echo["reply"].delivered
    assert delivery.result.answer  # answered through the shared runner (search-only: no model key)
    runner = served.echo["desk"].runner
    assert runner.escalation_target("echo") == Target("echo", "echo-desk")  # the plug-in's target() knew the id
    assert EchoSurface.stopped == ["echo"]  # stopped when serve stopped

    # a surface whose start fails is one line, and what had started is stopped again
    plugins.surfaces["buggy"] = BuggySurface
    EchoSurface.stopped.clear()
    with pytest.raises(StartupError, match=r"^the buggy surface did not start: RuntimeError: boom$"):
        await run_serve(settings, ["echo", "buggy"], host="127.0.0.1", plugins=plugins)
    assert EchoSurface.stopped == ["echo"]

    # naming the broken one says why, in one line, before anything opens
    with pytest.raises(StartupError, match=r"unknown surface 'broken' \(its plug-in failed to load: "
                                           r"ModuleNotFoundError.*\): choose buggy, echo"):
        await run_serve(Settings(data_dir=tmp_path / "other"), ["broken"], host="127.0.0.1", plugins=plugins)
    assert not (tmp_path / "other").exists()


def test_slack_and_teams_are_registered_surfaces_and_the_core_names_neither():
    from agent.plugins import plugins

    installed = plugins()
    assert {"slack", "teams", "mcp"} <= set(installed.surfaces)
    assert [n for n in Settings.model_fields if n.startswith(("slack_", "teams_")) or n.endswith("_teams")] == []
    page = settings_page()
    for name in ("slack", "teams"):
        config = installed.surfaces[name].settings
        for field in config.model_fields:
            assert f"`{config.env_names(field)[0]}`" in page, (name, field)


def test_surface_settings_keep_their_environment_and_yaml_names(monkeypatch, tmp_path):
    from bot.slack.settings import SlackSettings
    from bot.teams.settings import TeamsSettings

    yaml = tmp_path / "askdesk.yaml"
    yaml.write_text("collection: handbook\nslack_channels: [CYAML]\nslack_streaming: false\n"
                    "teams:\n  port: 4000\n  streaming: false\nescalation_channel_teams: '19:yaml'\n")
    monkeypatch.setenv("ASKDESK_CONFIG", str(yaml))
    slack, teams = SlackSettings.of(Settings()), TeamsSettings.of(Settings())
    assert (slack.channels, slack.streaming, teams.port, teams.streaming) == (["CYAML"], False, 4000, False)
    assert teams.escalation_channel == "19:yaml" and Settings().collection == "handbook"
    assert Settings().model_extra == {}  # the plug-ins' keys are theirs, not the core's

    env = {"SLACK_BOT_TOKEN": "xoxb-env", "SLACK_APP_TOKEN": "xapp-env", "SLACK_SIGNING_SECRET": "shh",
           "ASKDESK_SLACK_API_URL": "http://127.0.0.1:9/api/", "ASKDESK_SLACK_CHANNELS": '["CENV"]',
           "ASKDESK_SLACK_CHANNEL_COLLECTIONS": '{"CENV": "hr"}', "ASKDESK_SLACK_FOLLOW_UPS": "false",
           "ASKDESK_SLACK_THREAD_REQUIRES_MENTION": "false", "ASKDESK_SLACK_STREAMING": "true",
           "ASKDESK_SLACK_PRIVATE_COMMAND": "/ask", "ASKDESK_SLACK_SUGGESTED_PROMPTS": '["Who?"]',
           "CLIENT_ID": "app", "CLIENT_SECRET": "secret", "TENANT_ID": "tenant", "ASKDESK_TEAMS_PORT": "3999",
           "ASKDESK_TEAMS_DEV_MODE": "true", "ASKDESK_TEAMS_STREAMING": "true",
           "ASKDESK_TEAMS_SUGGESTED_PROMPTS": '["Hi?"]', "ASKDESK_ESCALATION_CHANNEL_TEAMS": "19:env"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    slack, teams = SlackSettings.of(Settings()), TeamsSettings.of(Settings())  # the environment wins over the file
    assert (slack.secret("bot_token"), slack.secret("app_token"), slack.secret("signing_secret")) == (
        "xoxb-env", "xapp-env", "shh")
    assert (slack.api_url, slack.channels, slack.channel_collections) == ("http://127.0.0.1:9/api/", ["CENV"],
                                                                         {"CENV": "hr"})
    assert (slack.follow_ups, slack.thread_requires_mention, slack.streaming) == (False, False, True)
    assert (slack.private_command, slack.suggested_prompts) == ("/ask", ["Who?"])
    assert (teams.client_id, teams.client_secret.get_secret_value(), teams.tenant_id) == ("app", "secret", "tenant")
    assert (teams.port, teams.dev_mode, teams.streaming, teams.suggested_prompts) == (3999, True, True, ["Hi?"])
    assert teams.escalation_channel == "19:env"

    # keywords given to Settings (tests, `--teams-port`) win over both, by their old names
    given = Settings(slack_api_url="http://127.0.0.1:8/", teams_port=0, escalation_channel_teams="19:kw")
    assert SlackSettings.of(given).api_url == "http://127.0.0.1:8/"
    assert (TeamsSettings.of(given).port, TeamsSettings.of(given).escalation_channel) == (0, "19:kw")
    assert TeamsSettings.of(given.model_copy(update={"teams_port": 7})).port == 7


def test_a_surface_setting_that_does_not_parse_is_one_line_with_its_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("ASKDESK_TEAMS_DEV_MODE", "true")
    monkeypatch.setenv("ASKDESK_TEAMS_PORT", "not-a-port")
    monkeypatch.setenv("ASKDESK_SLACK_CHANNELS", "C1,C2")  # a list is JSON
    plugins = load_plugins([_EntryPoint("slack", "bot.slack.plugin"), _EntryPoint("teams", "bot.teams.plugin")])
    assert plugins.failed == [] and set(plugins.surfaces) == {"slack", "teams"}  # registered all the same
    settings = Settings(data_dir=tmp_path / "data")
    with pytest.raises(StartupError, match="invalid setting ASKDESK_TEAMS_PORT: "):
        asyncio.run(run_serve(settings, ["teams"], host="127.0.0.1", plugins=plugins))
    with pytest.raises(StartupError, match='invalid setting of the slack surface: .*"channels"'):
        asyncio.run(run_serve(settings, ["slack"], host="127.0.0.1", plugins=plugins))
    assert not (tmp_path / "data").exists()
