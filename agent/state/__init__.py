"""Shared state: conversation memory and feedback records (SQLite, embedded)."""
