"""Benchmarks: run each from the repository root as `python -m bench.<name>` (so `tests.fakes` and
`bench.*` import without editing sys.path)."""
