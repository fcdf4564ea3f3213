"""hermes: a plugin-first agent framework."""

__version__ = "0.1.0"
