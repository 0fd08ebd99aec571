"""The replica deployment we document holds together: the compose file runs two askdesk
replicas on one PostgreSQL and one Qdrant, with settings askdesk knows, a shutdown grace
longer than the bot's own, and /healthz probes (no Docker engine here to start it)."""

from __future__ import annotations

import re


from agent.config import Settings
from agent.yamlio import safe_load
from tests.conftest import REPO

COMPOSE = REPO / "examples" / "compose" / "compose.yaml"


def test_compose_runs_two_replicas_on_shared_postgres_and_qdrant():
    compose = safe_load(COMPOSE.read_text(encoding="utf-8"))
    services = compose["services"]
    replicas = [s for name, s in services.items() if name.startswith("askdesk")]
    assert len(replicas) == 2 and {"postgres", "qdrant"} <= set(services)
    for replica in replicas:
        env = replica["environment"]
        assert env["ASKDESK_DATABASE_URL"].startswith("postgresql://") and "@postgres:5432/" in env["ASKDESK_DATABASE_URL"]
        assert env["ASKDESK_QDRANT_URL"] == "http://qdrant:6333"
        unknown = [k for k in env if k.startswith("ASKDESK_") and k[len("ASKDESK_"):].lower() not in Settings.model_fields]
        assert unknown == []
        assert int(re.match(r"(\d+)s", replica["stop_grace_period"]).group(1)) > 30  # the bot's own grace is 30 s
        assert "/healthz" in " ".join(replica["healthcheck"]["test"])
        assert replica["command"][:2] == ["askdesk", "serve"]
        assert replica["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert len({tuple(r["ports"]) for r in replicas}) == 2  # each replica on its own host ports
    dockerfile = (COMPOSE.parent / replicas[0]["build"]["dockerfile"].split("/")[-1]).read_text(encoding="utf-8")
    assert "pip install" in dockerfile and "FROM python:3.11" in dockerfile
