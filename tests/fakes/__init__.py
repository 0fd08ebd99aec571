"""Local fake servers that speak real wire protocols, for the real SDK clients to call."""

from tests.fakes.llm_server import FakeLLMServer, RecordedRequest

__all__ = ["FakeLLMServer", "RecordedRequest"]
