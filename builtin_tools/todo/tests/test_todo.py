"""The todo toolset, tested through its real entry point with the hermes test kit."""

from __future__ import annotations

import importlib.util

import pytest
from hermes_toolset_todo import MAX_ITEMS, METADATA_KEY, render, todo

from hermes_core.testing import load_plugin, make_agent, text, tool_call, tool_calls
from hermes_hookspecs import ToolContext, ToolError

PLAN = [
    {"id": "1", "content": "Read the failing test", "status": "completed"},
    {"id": "2", "content": "Fix the parser", "status": "in_progress"},
    {"id": "3", "content": "Run the whole suite", "status": "pending"},
]


def run(*calls, agent_kwargs=None):
    """Run one agent turn per call (``(args)`` dicts); return the agent and the tool results."""
    script = []
    for args in calls:
        script += [tool_call("todo", args), text("ok")]
    agent = make_agent(*script, plugins=["todo"], **(agent_kwargs or {}))
    results = []
    for _ in calls:
        agent.chat("go")
        results.append(agent.messages[-2])
    return agent, results


def stored(agent):
    return agent.session_store.get_session(agent.session_id).metadata[METADATA_KEY]


def test_loads_through_its_entry_point():
    record = load_plugin("todo")
    assert record.hooks == ["hermes_register_toolsets"]
    assert make_agent(plugins=["todo"]).toolbox.names == ("todo",)


def test_write_the_whole_list():
    agent, [result] = run({"todos": PLAN})
    assert result["role"] == "tool"
    assert result["content"] == (
        "Todo list, 3 items: 1 pending [ ], 1 in progress [>], 1 completed [x]\n"
        "[x] 1: Read the failing test\n"
        "[>] 2: Fix the parser\n"
        "[ ] 3: Run the whole suite"
    )
    assert stored(agent) == PLAN


def test_read_without_arguments():
    _, [write, read] = run({"todos": PLAN}, {})
    assert read["content"] == write["content"]


def test_empty_list():
    _, [read] = run({})
    assert read["content"] == "Todo list is empty."


def test_status_defaults_to_pending_and_text_is_tidied():
    agent, _ = run({"todos": [{"id": " a ", "content": "  two\n lines "}]})
    assert stored(agent) == [{"id": "a", "content": "two lines", "status": "pending"}]


def test_replace_drops_items_not_given():
    agent, [_, result] = run(
        {"todos": PLAN}, {"todos": [{"id": "9", "content": "New plan", "status": "pending"}]}
    )
    assert result["content"] == "Todo list, 1 item: 1 pending [ ]\n[ ] 9: New plan"
    assert [item["id"] for item in stored(agent)] == ["9"]


def test_an_empty_list_clears():
    agent, [_, result] = run({"todos": PLAN}, {"todos": []})
    assert result["content"] == "Todo list is empty."
    assert stored(agent) == []


def test_merge_updates_by_id_and_appends_new_items():
    agent, [_, result] = run(
        {"todos": PLAN},
        {
            "merge": True,
            "todos": [
                {"id": "2", "status": "completed"},
                {"id": "3", "status": "in_progress", "content": "Run tox"},
                {"id": "4", "content": "Write the changelog"},
            ],
        },
    )
    assert stored(agent) == [
        {"id": "1", "content": "Read the failing test", "status": "completed"},
        {"id": "2", "content": "Fix the parser", "status": "completed"},
        {"id": "3", "content": "Run tox", "status": "in_progress"},
        {"id": "4", "content": "Write the changelog", "status": "pending"},
    ]
    assert result["content"].splitlines()[0] == (
        "Todo list, 4 items: 1 pending [ ], 1 in progress [>], 2 completed [x]"
    )


def test_cancelled_items_are_counted():
    _, [result] = run({"todos": [{"id": "x", "content": "Drop the cache", "status": "cancelled"}]})
    assert result["content"] == "Todo list, 1 item: 1 cancelled [-]\n[-] x: Drop the cache"


def error_of(result) -> str:
    assert result["content"].startswith("Error: "), result["content"]
    return result["content"].removeprefix("Error: ")


def test_two_items_in_progress_is_an_error_and_changes_nothing():
    agent, [_, result] = run(
        {"todos": PLAN}, {"merge": True, "todos": [{"id": "3", "status": "in_progress"}]}
    )
    message = error_of(result)
    assert "2 items would be in_progress ('2', '3'); at most one may be" in message
    assert "not changed" in message
    assert stored(agent) == PLAN


def test_two_in_progress_in_a_new_list_is_an_error():
    _, [result] = run(
        {
            "todos": [
                {"id": "a", "content": "A", "status": "in_progress"},
                {"id": "b", "content": "B", "status": "in_progress"},
            ]
        }
    )
    assert "at most one may be" in error_of(result)


@pytest.mark.parametrize(
    ("todos", "expected"),
    [
        ([{"id": "1", "content": "A", "status": "done"}], "status"),
        ([{"content": "A"}], "id"),
        ([{"id": "1", "content": "A", "owner": "me"}], "owner"),
    ],
)
def test_schema_problems_are_reported(todos, expected):
    _, [result] = run({"todos": todos})
    assert expected in error_of(result)


def test_a_new_item_without_content_is_an_error():
    agent, [_, result] = run({"todos": PLAN}, {"merge": True, "todos": [{"id": "7"}]})
    assert error_of(result) == "todos[0]: new item '7' needs content"
    assert stored(agent) == PLAN
    _, [result] = run({"todos": [{"id": "1", "status": "pending"}]})
    assert error_of(result) == "todos[0]: new item '1' needs content"


def test_repeated_ids_are_an_error():
    _, [result] = run({"todos": [{"id": "1", "content": "A"}, {"id": "1", "content": "B"}]})
    assert error_of(result) == "todos[1]: id '1' appears more than once"


def test_blank_content_is_an_error():
    _, [result] = run({"todos": [{"id": "1", "content": "   "}]})
    assert error_of(result) == "todos[0]: content is empty"


def test_too_many_items_is_an_error():
    items = [{"id": str(i), "content": f"step {i}"} for i in range(MAX_ITEMS + 1)]
    _, [result] = run({"todos": items})
    assert error_of(result) == f"the list would have {MAX_ITEMS + 1} items; the limit is 100"


def test_calls_in_one_batch_apply_in_order():
    agent = make_agent(
        tool_calls(
            ("todo", {"todos": [{"id": "1", "content": "A", "status": "in_progress"}]}),
            ("todo", {"merge": True, "todos": [{"id": "1", "status": "completed"}]}),
            ("todo", {"merge": True, "todos": [{"id": "2", "content": "B"}]}),
        ),
        text("ok"),
        plugins=["todo"],
    )
    agent.chat("go")
    assert [m["role"] for m in agent.messages[2:5]] == ["tool"] * 3
    assert not any(m["content"].startswith("Error") for m in agent.messages[2:5])
    assert stored(agent) == [
        {"id": "1", "content": "A", "status": "completed"},
        {"id": "2", "content": "B", "status": "pending"},
    ]


def test_the_list_survives_resume_with_the_same_store():
    first, _ = run({"todos": PLAN})
    store, session_id = first.session_store, first.session_id
    first.close()
    second = make_agent(
        tool_call("todo", {}),
        text("ok"),
        plugins=["todo"],
        session_store=store,
        session_id=session_id,
    )
    second.chat("where were we?")
    assert second.messages[-2]["content"] == render(PLAN)
    other = make_agent(tool_call("todo", {}), text("ok"), plugins=["todo"], session_store=store)
    other.chat("new session")
    assert other.messages[-2]["content"] == "Todo list is empty."  # lists are per session


@pytest.mark.skipif(
    importlib.util.find_spec("hermes_core.session_store.sqlite_store") is None,
    reason="no SQLite session store",
)
def test_the_list_survives_resume_with_the_sqlite_store(hermes_home):
    first = make_agent(
        tool_call("todo", {"todos": PLAN}), text("ok"), plugins=["todo"], home=hermes_home
    )
    first.chat("plan it")
    session_id = first.session_id
    first.close()
    second = make_agent(
        tool_call("todo", {"merge": True, "todos": [{"id": "2", "status": "completed"}]}),
        text("ok"),
        plugins=["todo"],
        home=hermes_home,
        session_id=session_id,
    )
    second.chat("next")
    assert second.messages[-2]["content"].startswith(
        "Todo list, 3 items: 1 pending [ ], 2 completed [x]"
    )
    second.close()


# --- the handler on its own ----------------------------------------------------------------


def test_handler_validates_what_the_schema_cannot():
    ctx = ToolContext(task_id="t", session_id="handler-1")
    with pytest.raises(ToolError, match=r"todos must be a list of items, got str"):
        todo({"todos": "buy milk"}, ctx)
    with pytest.raises(ToolError, match=r"todos\[0\]: each item must be an object"):
        todo({"todos": ["buy milk"]}, ctx)
    with pytest.raises(ToolError, match=r"status 'done' is not one of pending, in_progress"):
        todo({"todos": [{"id": "1", "content": "A", "status": "done"}]}, ctx)
    with pytest.raises(ToolError, match=r"content is 1,001 characters long; the limit is 1,000"):
        todo({"todos": [{"id": "1", "content": "x" * 1001}]}, ctx)
    with pytest.raises(ToolError, match=r"id must be a string, got list"):
        todo({"todos": [{"id": ["1"], "content": "A"}]}, ctx)


def test_without_a_session_store_the_list_is_kept_in_the_process():
    ctx = ToolContext(task_id="t", session_id="handler-2")
    todo({"todos": [{"id": 1, "content": "A"}]}, ctx)  # an integer id is accepted as text
    assert todo({}, ToolContext(task_id="t", session_id="handler-2")) == (
        "Todo list, 1 item: 1 pending [ ]\n[ ] 1: A"
    )
    assert todo({}, ToolContext(task_id="t", session_id="handler-3")) == "Todo list is empty."


def test_a_store_that_fails_to_save_is_reported():
    class BrokenStore:
        def get_session(self, session_id):
            from hermes_hookspecs import SessionInfo

            return SessionInfo(id=session_id)

        def update_session(self, session_id, **fields):
            raise OSError("disk full")

    ctx = ToolContext(task_id="t", session_id="s", session_store=BrokenStore())
    with pytest.raises(ToolError, match="the todo list could not be saved: disk full"):
        todo({"todos": [{"id": "1", "content": "A"}]}, ctx)


def test_malformed_stored_items_are_ignored():
    from hermes_hookspecs import SessionInfo

    class Store:
        def get_session(self, session_id):
            junk = [{"id": "1", "content": "ok", "status": "pending"}, {"id": 2}, "x"]
            return SessionInfo(id=session_id, metadata={METADATA_KEY: junk})

    ctx = ToolContext(task_id="t", session_id="s", session_store=Store())
    assert todo({}, ctx) == "Todo list, 1 item: 1 pending [ ]\n[ ] 1: ok"
