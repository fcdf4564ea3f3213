"""The data contract behaves as documented, without the core."""

from __future__ import annotations

import pluggy
import pytest

import hermes_hookspecs as hs
from hermes_hookspecs import specs


def test_markers_belong_to_the_hermes_project():
    assert hs.PROJECT_NAME == "hermes"
    pm = pluggy.PluginManager("hermes")
    pm.add_hookspecs(specs)

    class Plugin:
        @hs.hookimpl
        def hermes_session_start(self, session):
            return session.id

    pm.register(Plugin())
    assert pm.hook.hermes_session_start(session=hs.SessionInfo(id="s1")) == ["s1"]


def test_every_hook_has_a_docstring_with_its_return_contract():
    hooks = [getattr(specs, n) for n in dir(specs) if n.startswith("hermes_")]
    assert len(hooks) >= 13
    for hook in hooks:
        assert hook.__doc__ and ":return:" in hook.__doc__, hook.__name__


def test_only_the_who_decides_hooks_are_firstresult():
    firstresult = [
        n
        for n in dir(specs)
        if n.startswith("hermes_") and getattr(specs, n).hermes_spec.get("firstresult")
    ]
    assert firstresult == ["hermes_approve", "hermes_person_scope", "hermes_refresh_credentials"]


def test_tool_schema_is_openai_function_format():
    tool = hs.Tool("t", "does t", {"type": "object", "properties": {}}, handler=lambda a, c: "")
    assert tool.schema() == {
        "type": "function",
        "function": {
            "name": "t",
            "description": "does t",
            "parameters": {"type": "object", "properties": {}},
        },
    }


def test_tool_context_fails_closed_without_host():
    ctx = hs.ToolContext(task_id="t")
    assert ctx.approve("rm -rf /", "recursive delete") is False
    with pytest.raises(hs.HermesError):
        ctx.clarify("which?")
    with pytest.raises(hs.HermesError):
        ctx.environment  # noqa: B018
    assert ctx.hermes_home is None and ctx.session_store is None


def test_tool_context_cancellation():
    ctx = hs.ToolContext(task_id="t")
    ctx.check_cancelled()
    ctx.cancel_event.set()
    assert ctx.cancelled
    with pytest.raises(hs.Cancelled) as info:
        ctx.check_cancelled()
    assert isinstance(info.value, hs.ToolCancelled)


def test_one_cancellation_type_passes_through_except_exception():
    assert issubclass(hs.ToolCancelled, hs.Cancelled)
    assert issubclass(hs.ToolCancelled, hs.HermesError)  # as it always was
    assert not issubclass(hs.Cancelled, Exception)
    assert not issubclass(hs.Cancelled, hs.ProviderError)
    with pytest.raises(hs.Cancelled):
        try:
            raise hs.Cancelled("interrupted by the user")
        except Exception:  # an engine's or a tool's own failure handling
            pytest.fail("Cancelled was caught as an ordinary failure")


def test_context_summaries_are_recognised_by_flag_or_marker():
    marker = hs.CONTEXT_SUMMARY_MARKER
    assert hs.is_context_summary({"role": "user", "content": "x", hs.CONTEXT_SUMMARY_FLAG: True})
    assert hs.is_context_summary({"role": "user", "content": f"{marker}\nthe summary"})
    assert hs.is_context_summary({"role": "user", "content": [{"type": "text", "text": marker}]})
    assert not hs.is_context_summary({"role": "user", "content": "a question"})
    assert not hs.is_context_summary({"role": "user", "content": [{"type": "image_url"}]})
    assert not hs.is_context_summary({"role": "assistant", "content": None})


def test_search_hits_and_the_searchable_protocol():
    hit = hs.SearchHit(session_id="s", title=None, started_at=0.0, role="user", snippet="[x]")
    assert hit.message_id == 0 and hit.score == 0.0

    class Plain:
        def create_session(self, session): ...
        def get_session(self, session_id): ...
        def update_session(self, session_id, **fields): ...
        def append_message(self, session_id, message): ...
        def get_messages(self, session_id): ...

    class Searchable(Plain):
        def search(self, query, *, limit=20, snippet_chars=160, exclude_session=None):
            return [hit]

    assert isinstance(Plain(), hs.SessionStore)
    assert not isinstance(Plain(), hs.SearchableSessionStore)
    assert isinstance(Searchable(), hs.SearchableSessionStore)


def test_tool_context_routes_to_host_callables():
    seen = []
    ctx = hs.ToolContext(
        task_id="t",
        tool_name="terminal",
        approver=lambda r: seen.append(r) or True,
        emitter=lambda e, d: seen.append((e, d)),
    )
    assert ctx.approve("ls", "listing", key="ls")
    ctx.emit("status", text="hi")
    assert seen[0].tool == "terminal" and seen[0].cache_key == "ls"
    assert seen[1] == ("status", {"text": "hi"})


def test_usage_adds_up():
    total = hs.Usage(1, 2, 3, 4, 5)
    total.add(hs.Usage(1, 1, 1, 1, 1))
    assert total.as_dict() == {
        "input_tokens": 2,
        "output_tokens": 3,
        "cache_read_tokens": 4,
        "cache_write_tokens": 5,
        "reasoning_tokens": 6,
    }


def test_rate_limit_errors_are_retryable_by_default():
    assert hs.RateLimitError("slow").retryable
    assert not hs.ProviderError("bad").retryable
    assert hs.ProviderError("x", status=500, retryable=True).status == 500


def test_request_helpers():
    request = hs.ModelRequest(
        model="m",
        messages=[{"role": "system", "content": "S"}],
        tools=[{"type": "function", "function": {"name": "a"}}],
    )
    assert request.system_prompt == "S"
    assert request.tool_names == ["a"]
    request.emit("text_delta", text="x")  # no sink: nothing happens


class _Echo(hs.Environment):
    def __init__(self):
        self.commands = []

    def run(self, command, **kwargs):
        self.commands.append(command)
        return hs.CommandResult(output="a.py\nb.py\n", exit_code=0)

    def read_file(self, path):
        return b""

    def write_file(self, path, data):
        pass


def test_environment_list_files_rejects_shell_injection():
    env = _Echo()
    assert env.list_files("*.py") == ["a.py", "b.py"]
    with pytest.raises(ValueError):
        env.list_files("*.py; rm -rf ~")
    with pytest.raises(ValueError):
        env.list_files("$(id)")
    assert len(env.commands) == 1


def test_context_engine_defaults():
    class Engine(hs.ContextEngine):
        name = "mine"

        def should_compress(self, prompt_tokens):
            return prompt_tokens > 10

        def compress(self, messages, current_tokens=None, focus=None):
            return messages[-1:]

    engine = Engine({"threshold": 0.5})
    engine.set_context_window(1000)
    assert engine.status() == {"engine": "mine", "context_window": 1000}
    assert engine.tools() == [] and not engine.should_compress_preflight([])


def test_config_declarations_check_themselves() -> None:
    from hermes_hookspecs import CONFIG_TYPES, NO_DEFAULT, ConfigKey, ConfigSection

    key = ConfigKey("retries", ("integer", "null"), 2, "times a lookup is retried", minimum=0)
    assert key.type == ("integer", "null") and key.has_default and key.minimum == 0
    assert ConfigKey("x").type == ("any",) and ConfigKey("x").default is NO_DEFAULT
    assert not NO_DEFAULT and repr(NO_DEFAULT) == "NO_DEFAULT"
    assert set(CONFIG_TYPES) >= {"string", "integer", "array", "object", "any"}
    assert key == ConfigKey(
        "retries", ("integer", "null"), 2, "times a lookup is retried", minimum=0
    )
    for bad in (
        lambda: ConfigKey("x", "int"),
        lambda: ConfigKey(""),
        lambda: ConfigKey("a", items="list"),
    ):
        with pytest.raises(ValueError):
            bad()
    section = ConfigSection("acme.deep", [key], "doc", open=True)
    assert section.path(key) == "acme.deep.retries" and section.open
    with pytest.raises(ValueError):
        ConfigSection("acme..deep")


def test_the_package_exports_each_name_once_and_as_its_module_declares_it():
    import importlib

    assert len(hs.__all__) == len(set(hs.__all__))
    for module, names in hs._LAZY.items():
        declared = importlib.import_module(f"hermes_hookspecs.{module}").__all__
        assert tuple(declared) == names, module
    for name in hs.__all__:
        assert getattr(hs, name) is not None, name
