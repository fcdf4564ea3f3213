"""An example third-party context engine: past 1,000 prompt tokens, keep the last six messages.

The engine is the one from the context-engine issue, word for word (the formatter only added
blank lines). Its cut may separate tool calls from their results; the host repairs that.
"""

from hermes_hookspecs import ContextEngine, hookimpl


class KeepLast(ContextEngine):
    name = "keep-last"

    def should_compress(self, prompt_tokens=None):
        return prompt_tokens is not None and prompt_tokens > 1000

    def compress(self, messages, current_tokens=None, focus=None):
        system = [m for m in messages if m["role"] == "system"]
        rest = [m for m in messages if m["role"] != "system"]
        return system + rest[-6:]


@hookimpl
def hermes_register_context_engines(register):
    register(KeepLast)
