"""Run by the side environment's python (``scripts/hermes_agent_env.py``), never imported by
hermes: the real Hermes agent's own session store (``hermes_state.SessionDB``) writes a
``state.db`` the way the agent does, and the ids and facts the tests check are printed as JSON.

    python write_state_db.py PATH [BIG_MESSAGES]

Sessions written: one with tool calls, reasoning and a title; a conversation split by context
compression (a parent ended with ``compression`` and its child, titled ``... #2``); a gateway
session with CJK text and a multimodal message, one of whose turns was rewound; and, when
BIG_MESSAGES is given, one session of that many messages.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hermes_state import SessionDB  # the real Hermes agent's module


def _call(call_id: str, name: str, arguments: dict) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def main() -> None:
    path = Path(sys.argv[1])
    big = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    db = SessionDB(db_path=path)
    t0 = 1_767_000_000.0
    facts: dict = {}

    # 1. a CLI session with a tool batch, reasoning and a title
    sid = "20260101_090000_a1b2c3"
    db.create_session(
        sid,
        "cli",
        model="anthropic/claude-sonnet-4",
        model_config={"max_iterations": 90},
        system_prompt="You are Hermes, a helpful agent.\n\nMEMORY: prefers tabs",
        cwd="/home/user/project",
    )
    db.append_message(sid, "user", "Find the bug in parser.py", timestamp=t0)
    calls = [
        _call("call_read_1", "read_file", {"path": "parser.py"}),
        _call("call_grep_2", "search_files", {"pattern": "range(len"}),
    ]
    db.append_message(
        sid, "assistant", "", tool_calls=calls, reasoning="Read the file first.",
        finish_reason="tool_calls", timestamp=t0 + 1,
    )  # fmt: skip
    db.append_message(
        sid, "tool", "def parse(xs):\n    for i in range(len(xs) + 1): ...",
        tool_name="read_file", tool_call_id="call_read_1", timestamp=t0 + 2,
    )  # fmt: skip
    db.append_message(
        sid, "tool", "parser.py:42: for i in range(len(xs) + 1)",
        tool_name="search_files", tool_call_id="call_grep_2", timestamp=t0 + 3,
    )  # fmt: skip
    db.append_message(
        sid, "assistant", "The bug is an off-by-one at parser.py line 42.",
        finish_reason="stop", timestamp=t0 + 4,
    )  # fmt: skip
    db.set_session_title(sid, "Parser bug hunt")
    db.update_token_counts(sid, input_tokens=1200, output_tokens=80, api_call_count=2)
    db.end_session(sid, "user_exit")
    facts["tools"] = sid

    # 2. a conversation split by compression: the parent ends, a child continues it
    parent, child = "20260102_100000_d4e5f6", "20260102_103000_0a1b2c"
    db.create_session(parent, "cli", model="gpt-5", system_prompt="You are Hermes (v1).")
    db.append_message(parent, "user", "Plan the deploy of service zeta", timestamp=t0 + 100)
    db.append_message(parent, "assistant", "Step one: build the image.", timestamp=t0 + 101)
    db.set_session_title(parent, "Deploy plan")
    db.end_session(parent, "compression")
    db.create_session(
        child, "cli", model="gpt-5", system_prompt="You are Hermes (v1).", parent_session_id=parent
    )
    db.append_message(
        child, "user", "[CONTEXT SUMMARY] We planned the deploy of service zeta.",
        timestamp=t0 + 200,
    )  # fmt: skip
    db.append_message(child, "assistant", "Continuing: step two, push it.", timestamp=t0 + 201)
    db.set_session_title(child, db.get_next_title_in_lineage("Deploy plan"))
    facts["parent"], facts["child"] = parent, child
    facts["child_title"] = db.get_session_title(child)

    # 3. a gateway session: CJK text, a multimodal message, a rewound turn
    gw = "20260103_110000_9f8e7d"
    db.create_session(gw, "telegram", model="deepseek-v4-pro", user_id="42", chat_id="7")
    db.append_message(gw, "user", "数据库连接失败怎么办？", timestamp=t0 + 300)
    db.append_message(gw, "assistant", "检查 config.yaml 里的 E4021 设置。", timestamp=t0 + 301)
    db.append_message(
        gw, "user",
        [{"type": "text", "text": "what is in this picture"},
         {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}],
        timestamp=t0 + 302,
    )  # fmt: skip
    db.append_message(gw, "assistant", "A cat on a keyboard.", timestamp=t0 + 303)
    rewound = db.append_message(gw, "user", "forget that, rewound", timestamp=t0 + 304)
    db.append_message(gw, "assistant", "ok (rewound)", timestamp=t0 + 305)
    db.rewind_to_message(gw, rewound)
    facts["gateway"] = gw

    # 4. a big session, written in one transaction as the agent rewrites a transcript
    if big:
        bs = "20260104_120000_b16b16"
        db.create_session(bs, "cli", model="m", system_prompt="big")
        rows: list[dict] = []
        n = 0
        while len(rows) < big:
            n += 1
            rows.append({"role": "user", "content": f"question {n} about topic{n % 97}"})
            if n % 5 == 0:
                cid = f"call_{n}"
                rows.append({"role": "assistant", "content": "", "tool_calls": [
                    _call(cid, "terminal", {"command": f"echo {n}"})]})  # fmt: skip
                rows.append({"role": "tool", "content": f"{n}\n", "tool_call_id": cid,
                             "tool_name": "terminal"})  # fmt: skip
            rows.append({"role": "assistant", "content": f"answer {n}: see file{n}.txt"})
        db.replace_messages(bs, rows)  # a whole exchange more than ``big`` at most
        facts["big"] = bs

    db.close()
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
