"""The turn result: a TypedDict whose keys and exit reasons the contract names."""

from __future__ import annotations

from typing import get_args, get_type_hints

import hermes_hookspecs as hs


def test_turn_result_keys_are_its_keys_and_all_required():
    keys = set(get_type_hints(hs.TurnResult))
    assert hs.TURN_RESULT_KEYS == keys
    assert hs.TurnResult.__required_keys__ == keys
    assert {"final_response", "messages", "session_id", "exit_reason", "error"} <= keys


def test_exit_reasons_are_the_literal_of_the_exit_reason_key():
    assert hs.EXIT_REASONS == get_args(hs.ExitReason)
    assert get_type_hints(hs.TurnResult)["exit_reason"] == hs.ExitReason
    assert {"completed", "max_turns", "interrupted", "error"} <= set(hs.EXIT_REASONS)


def test_a_turn_result_is_a_plain_dict():
    result: hs.TurnResult = {
        "final_response": "hi",
        "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
        "session_id": "s1",
        "task_id": "t1",
        "api_calls": 1,
        "usage": hs.Usage(input_tokens=3, output_tokens=1).as_dict(),
        "estimated_cost_usd": None,
        "completed": True,
        "interrupted": False,
        "exit_reason": "completed",
        "error": None,
        "model": "m",
        "provider": "p",
    }
    assert type(result) is dict
    assert set(result) == hs.TURN_RESULT_KEYS
