"""The knowledge-gap report (issue 22): figures over the state store's turns, feedback and
escalations, gap questions grouped by meaning, and an HTML page with charts. Surfaces may
import it: it reads the state store and takes an embedding function, nothing else."""

from agent.report.build import Report, build_report, parse_since, query_embed

__all__ = ["Report", "build_report", "parse_since", "query_embed"]
