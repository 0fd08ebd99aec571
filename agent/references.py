"""Citations: what an answer points back to."""

from __future__ import annotations

from pydantic import BaseModel


class Reference(BaseModel):
    """One cited source. `source` is the file (or registry) name, `section` the heading path."""

    source: str
    title: str = ""
    section: str = ""
    url: str | None = None
    score: float | None = None

    def label(self) -> str:
        parts = [self.title or self.source]
        if self.section:
            parts.append(self.section)
        return " — ".join(parts)
