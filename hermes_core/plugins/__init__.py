"""Plugins: scanning entry points, loading each plugin in its guard, calling hooks, and the
registry of what they registered."""
