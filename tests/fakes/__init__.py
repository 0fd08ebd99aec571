"""Local fake servers that speak real wire protocols, for the real SDK clients to call."""

from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Wire
from tests.fakes.llm_stream import Pace, Stream, WireReply

__all__ = ["FakeLLMServer", "Pace", "RecordedRequest", "Stream", "Wire", "WireReply"]
