"""The Hermes agent's own sessions, in a ``state.db`` written by the real Hermes agent 0.19
(installed from the package registry into a side environment, ``scripts/hermes_agent_env.py``):
hermes lists, searches, shows and resumes them, copies them read-only and idempotently, fast,
and never changes, moves or deletes the agent's file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hermes_agent_env
import pytest

from hermes_core.session_store import SessionStoreError, SQLiteSessionStore, repair
from hermes_core.session_store.hermes_agent import import_hermes_agent, is_hermes_agent_db
from hermes_core.testing import ScriptedModel, text

ROOT = Path(__file__).resolve().parents[1]
WRITER = ROOT / "tests" / "hermes_agent_data" / "write_state_db.py"
BIG = 10_000


@pytest.fixture(scope="session")
def agent_python() -> Path:
    """The python of the side environment holding the real Hermes agent."""
    try:
        return Path(hermes_agent_env.ensure())
    except hermes_agent_env.InstallError as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(f"the Hermes agent could not be installed from the registry: {exc}")


def _run_agent(agent_python: Path, home: Path, *argv: str, code: str | None = None) -> str:
    """Run the writer (or ``code``) with the real Hermes agent's python; its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(home)
    args = ["-c", code, *argv] if code is not None else [str(WRITER), *argv]
    done = subprocess.run(
        [str(agent_python), *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="session")
def agent_db(agent_python: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A ``state.db`` the real Hermes agent wrote, and the facts its writer printed."""
    folder = tmp_path_factory.mktemp("hermes-agent-db")
    path = folder / "state.db"
    out = _run_agent(agent_python, folder / "agent-home", str(path), str(BIG))
    return path, json.loads(out.strip().splitlines()[-1])


@pytest.fixture
def home_with_agent_db(hermes_home: Path, agent_db: tuple[Path, dict]) -> tuple[Path, dict]:
    """The test's home holding a copy of the agent's ``state.db`` (mode 644, as it wrote it)."""
    source, facts = agent_db
    target = hermes_home / "state.db"
    shutil.copyfile(source, target)
    os.chmod(target, 0o644)
    return target, facts


def _fingerprint(path: Path) -> tuple[str, int, int, list[str]]:
    """Bytes, mode and modification time of ``path``, and what lies beside it with its name."""
    st = path.stat()
    siblings = sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name))
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mode, st.st_mtime_ns, siblings


def test_sessions_list_shows_the_agents_sessions_and_leaves_its_file_as_it_is(
    hermes_cli: Callable[..., Any], home_with_agent_db: tuple[Path, dict]
) -> None:
    db, facts = home_with_agent_db
    before = _fingerprint(db)
    run = hermes_cli("sessions", "list", "-n", "50")
    assert run.exit_code == 0, run.stderr
    notice = [line for line in run.stderr.splitlines() if "imported" in line]
    assert len(notice) == 1 and "read-only" in notice[0] and str(db) in notice[0], run.stderr
    for key in ("tools", "parent", "child", "gateway", "big"):
        [row] = [line for line in run.stdout.splitlines() if line.startswith(facts[key])]
        assert row.endswith("[Hermes agent]"), row
    assert "Parser bug hunt" in run.stdout and facts["child_title"] in run.stdout
    again = hermes_cli("sessions", "list")
    assert again.exit_code == 0 and "imported" not in again.stderr  # said once
    assert _fingerprint(db) == before  # bytes, mode, time; no -wal or -shm left beside it
    assert (db.parent / "sessions.db").exists()


def test_search_and_show_find_the_agents_messages(
    hermes_cli: Callable[..., Any], home_with_agent_db: tuple[Path, dict]
) -> None:
    _, facts = home_with_agent_db
    found = hermes_cli("sessions", "search", "数据库连接", "--json")
    assert found.exit_code == 0, found.stderr
    assert facts["gateway"] in {hit["session_id"] for hit in json.loads(found.stdout)}
    found = hermes_cli("sessions", "search", "range(len", "--json")
    assert facts["tools"] in {hit["session_id"] for hit in json.loads(found.stdout)}
    rewound = hermes_cli("sessions", "search", "rewound", "--json")
    assert json.loads(rewound.stdout) == []  # the agent's rewound turn stays rewound

    shown = hermes_cli("sessions", "show", facts["tools"], "--json")
    assert shown.exit_code == 0, shown.stderr
    record = json.loads(shown.stdout)
    session, messages = record["session"], record["messages"]
    assert session["title"] == "Parser bug hunt" and session["source"] == "cli"
    assert session["system_prompt"].startswith("You are Hermes, a helpful agent.")
    assert session["metadata"]["imported_from"] == "hermes-agent"
    assert session["metadata"]["input_tokens"] == 1200
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
    calls = messages[1]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["read_file", "search_files"]
    assert messages[1]["reasoning"] == "Read the file first."
    assert [m["tool_call_id"] for m in messages[2:4]] == [c["id"] for c in calls]
    assert messages[3]["tool_name"] == "search_files"
    text_view = hermes_cli("sessions", "show", facts["tools"])
    assert "-> read_file(" in text_view.stdout and "[Hermes agent]" in text_view.stdout

    gateway = json.loads(hermes_cli("sessions", "show", facts["gateway"], "--json").stdout)
    assert gateway["session"]["source"] == "telegram"
    contents = [m["content"] for m in gateway["messages"]]
    assert len(contents) == 4 and contents[2][1]["type"] == "image_url"  # multimodal, as a list
    child = json.loads(hermes_cli("sessions", "show", facts["child"], "--json").stdout)
    assert child["session"]["parent_session_id"] == facts["parent"]
    assert child["session"]["title"] == facts["child_title"]


def test_resume_continues_an_agent_session_with_its_prompt_calls_and_results(
    hermes_cli: Callable[..., Any], home_with_agent_db: tuple[Path, dict]
) -> None:
    db, facts = home_with_agent_db
    before = _fingerprint(db)
    model = ScriptedModel(text("Fixed: range(len(xs))."))
    run = hermes_cli(
        "--plugins", "", "chat", "--provider", "scripted", "--resume", facts["tools"],
        "-q", "Now fix it", "--json", model=model,
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout)["session_id"] == facts["tools"]
    sent = model.last_request.messages
    assert sent[0] == {"role": "system", "content": sent[0]["content"]}
    assert sent[0]["content"].startswith("You are Hermes, a helpful agent.")
    roles = [m["role"] for m in sent[1:]]
    assert roles == ["user", "assistant", "tool", "tool", "assistant", "user"]
    assert [c["id"] for c in sent[2]["tool_calls"]] == ["call_read_1", "call_grep_2"]
    assert "reasoning" not in sent[2] and "tool_name" not in sent[3]  # internal fields stay home
    assert sent[-1]["content"].endswith("Now fix it")
    shown = json.loads(hermes_cli("sessions", "show", facts["tools"], "--json").stdout)
    assert [m["role"] for m in shown["messages"]][-2:] == ["user", "assistant"]
    assert _fingerprint(db) == before


def test_resuming_a_compressed_parent_continues_in_its_child(
    hermes_cli: Callable[..., Any], home_with_agent_db: tuple[Path, dict]
) -> None:
    _, facts = home_with_agent_db
    model = ScriptedModel(text("Step three: watch it."))
    run = hermes_cli(
        "--plugins", "", "chat", "--provider", "scripted", "--resume", facts["parent"],
        "-q", "next?", "--json", model=model,
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout)["session_id"] == facts["child"]
    sent = [m.get("content") for m in model.last_request.messages]
    assert "[CONTEXT SUMMARY] We planned the deploy of service zeta." in sent
    assert "Plan the deploy of service zeta" not in sent  # the parent's turns were summarised


def test_import_is_idempotent_incremental_and_fast(
    agent_python: Path, home_with_agent_db: tuple[Path, dict], tmp_path: Path
) -> None:
    db, facts = home_with_agent_db
    before = _fingerprint(db)
    with SQLiteSessionStore(tmp_path / "sessions.db") as store:
        first = import_hermes_agent(store, db)
        assert first.sessions_added == 5 and first.messages >= BIG
        assert first.seconds <= 5.0, first.line()  # 10,000 messages and more within 5 s
        big = store.get_session(facts["big"])
        assert big is not None and big.metadata["message_count"] >= BIG
        again = import_hermes_agent(store, db)
        assert not again.changed and "nothing new" in again.line()
        assert _fingerprint(db) == before

        # the real agent goes on: a message in an old session, a new session, a new title
        _run_agent(agent_python, tmp_path / "agent-home", str(db), code=(
            "import sys; from pathlib import Path; from hermes_state import SessionDB\n"
            "db = SessionDB(db_path=Path(sys.argv[1]))\n"
            f"db.append_message({facts['tools']!r}, 'user', 'one more question')\n"
            "db.create_session('20260105_130000_c0ffee', 'cli', model='m')\n"
            "db.append_message('20260105_130000_c0ffee', 'user', 'a new day')\n"
            f"db.set_session_title({facts['gateway']!r}, 'Database help')\n"
            "db.close()\n"
        ))  # fmt: skip
        more = import_hermes_agent(store, db)
        assert (more.sessions_added, more.messages) == (1, 2), more.line()
        assert store.get_messages(facts["tools"])[-1]["content"] == "one more question"
        gateway = store.get_session(facts["gateway"])
        assert gateway is not None and gateway.title == "Database help"
        assert not import_hermes_agent(store, db).changed


def test_the_agents_file_is_never_opened_as_hermess_store_nor_repaired(
    home_with_agent_db: tuple[Path, dict],
) -> None:
    db, _ = home_with_agent_db
    before = _fingerprint(db)
    assert is_hermes_agent_db(db)
    with pytest.raises(SessionStoreError, match="the Hermes agent's session database"):
        SQLiteSessionStore(db)
    report = repair(db)
    assert "left as it is" in report and "import-hermes" in report
    assert _fingerprint(db) == before


def test_import_hermes_command_and_its_errors(
    hermes_cli: Callable[..., Any], home_with_agent_db: tuple[Path, dict], tmp_path: Path
) -> None:
    db, _ = home_with_agent_db
    elsewhere = tmp_path / "elsewhere" / "state.db"
    elsewhere.parent.mkdir()
    shutil.move(str(db), str(elsewhere))  # the test's own copy: no automatic import now
    run = hermes_cli("sessions", "import-hermes", str(elsewhere), "--json")
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout)["sessions_added"] == 5
    assert "nothing new" in hermes_cli("sessions", "import-hermes", str(elsewhere)).stdout
    missing = hermes_cli("sessions", "import-hermes", str(tmp_path / "nope.db"))
    assert missing.exit_code != 0 and "does not exist" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    ours = hermes_cli("sessions", "import-hermes", str(tmp_path.parent / "x" / "sessions.db"))
    assert ours.exit_code != 0
    not_agent = tmp_path / "other.db"
    not_agent.write_bytes(b"")
    refused = hermes_cli("sessions", "import-hermes", str(not_agent))
    assert refused.exit_code != 0 and "is not a Hermes agent session database" in refused.stderr


def test_a_state_db_hermes_wrote_itself_is_still_used(
    hermes_cli: Callable[..., Any], hermes_home: Path
) -> None:
    with SQLiteSessionStore(hermes_home / "state.db") as store:  # an older hermes's store
        from hermes_hookspecs import SessionInfo

        store.create_session(SessionInfo(id="old-1", title="from before"))
    run = hermes_cli("sessions", "list")
    assert run.exit_code == 0 and "from before" in run.stdout, run.stderr
    assert not (hermes_home / "sessions.db").exists()
