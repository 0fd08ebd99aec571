"""The demo's registry for benchmarks: declared in the data dir and loaded from its CSV, as
`askdesk demo` does."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "texas-childcare"
DECLARATION = DEMO / "registries" / "facility.yaml"
ROWS = DEMO / "facilities.csv"


async def load_demo_registry(runtime, rows: Path = ROWS):
    from agent.registry.registry import Registry
    from bot.commands.registry import install_declaration

    declaration = install_declaration(runtime.settings, "facility", DECLARATION)
    return await Registry(declaration, runtime).ingest(rows)
