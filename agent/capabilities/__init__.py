"""Capabilities: the knowledge base and each declared registry, as plug-ins (base.py)."""
