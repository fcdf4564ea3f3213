"""The PostgreSQL store beyond the shared suite: opening it through store.url, errors in one
line without the password, migrations (versioned, idempotent, one process at a time), the
``hermes store migrate`` command, several processes and a forked one, big and odd messages,
and start-up without the driver."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hermes_store_postgres import open_store
from hermes_store_postgres.connections import describe, redact
from hermes_store_postgres.schema import MIGRATION_LOCK, SCHEMA_VERSION, VERSIONS_TABLE
from hermes_store_postgres.store import PostgresSessionStore

from hermes_core.testing import make_agent, make_host, plugin_manager, text
from hermes_hookspecs import HermesError, PersonalSessionStore, SessionInfo


def _password(url: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    return str(conninfo_to_dict(url)["password"])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _versions(url: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(f"SELECT version, description FROM {VERSIONS_TABLE} ORDER BY 1")
        return [(int(v), str(d)) for v, d in rows]


# --- opening through store.url ----------------------------------------------------------------


def test_the_plugin_serves_both_schemes_through_its_entry_point(
    database: str, tmp_path: Path
) -> None:
    manager = plugin_manager(["store_postgres"])
    for url in (database, "postgres" + database.removeprefix("postgresql")):
        host = make_host(plugin_manager=manager, home=tmp_path, config={"store": {"url": url}})
        try:
            store = host.session_store
            assert isinstance(store, PostgresSessionStore)
            assert isinstance(store, PersonalSessionStore)
        finally:
            host.close()
    assert not (tmp_path / "sessions.db").exists()


def test_an_agent_keeps_its_session_in_postgres_and_resumes_it(
    database: str, tmp_path: Path, wipe: Callable[[str], None]
) -> None:
    config = {"store": {"url": database}}
    first = make_agent(text("Hello from PostgreSQL"), plugins=["store_postgres"], config=config)
    try:
        assert first.chat("hi there, remember the word kumquat") == "Hello from PostgreSQL"
        session_id = first.session_id
    finally:
        first.close()
    again = make_agent(
        text("Still here"), plugins=["store_postgres"], config=config, session_id=session_id
    )
    try:
        assert again.chat("and now?") == "Still here"
        store = again.session_store
        assert isinstance(store, PostgresSessionStore)
        messages = store.get_messages(session_id)
        assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
        session = store.get_session(session_id)
        assert session is not None and session.title == "hi there, remember the word kumquat"
        assert [h.session_id for h in store.search("kumquat")] == [session_id]
    finally:
        again.close()
        wipe(database)


# --- errors -------------------------------------------------------------------------------------


def test_an_unreachable_server_is_named_without_the_password() -> None:
    url = f"postgresql://hermes:pw-Secret-0815@127.0.0.1:{_free_port()}/hermes"
    with pytest.raises(HermesError) as info:
        open_store(url)
    message = str(info.value)
    assert "\n" not in message and "pw-Secret-0815" not in message
    assert "cannot reach the PostgreSQL session store at postgresql://hermes@127.0.0.1:" in message
    assert "Connection refused" in message


def test_the_host_refuses_to_run_without_its_store(tmp_path: Path) -> None:
    url = f"postgresql://hermes:pw-Secret-0815@127.0.0.1:{_free_port()}/hermes"
    host = make_host(plugins=["store_postgres"], home=tmp_path, config={"store": {"url": url}})
    with pytest.raises(HermesError) as info:
        host.session_store  # noqa: B018
    assert "pw-Secret-0815" not in str(info.value) and "127.0.0.1" in str(info.value)
    assert not (tmp_path / "sessions.db").exists()  # never a fall back


def test_a_wrong_password_and_a_missing_database_say_so(postgres_url: str) -> None:
    password = _password(postgres_url)
    wrong = postgres_url.replace(f":{password}@", ":not-the-Password-42@")
    with pytest.raises(HermesError, match="password authentication failed") as info:
        open_store(wrong)
    assert "not-the-Password-42" not in str(info.value)
    missing = postgres_url.rsplit("/", 1)[0] + "/no_such_database_here"
    with pytest.raises(HermesError, match="does not exist; create it first") as info:
        open_store(missing)
    assert password not in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://hermes:se%zzcret-Pw@127.0.0.1/db",
        "postgresql://hermes:secret-Pw@127.0.0.1/db?nonsense=1",
    ],
)
def test_a_malformed_url_is_refused_without_its_password(url: str) -> None:
    with pytest.raises(HermesError) as info:
        open_store(url)
    assert "cret-Pw" not in str(info.value) and "\n" not in str(info.value)


def test_descriptions_and_redaction() -> None:
    assert describe("postgresql://u:p@h:5/db") == "postgresql://u@h:5/db"
    assert describe("postgresql:///db?host=/run/pg") == "postgresql:///run/pg/db"
    assert redact("at postgresql://u:hunter2@h/db: hunter2", "postgresql://u:hunter2@h/db") == (
        "at postgresql://u:***@h/db: ***"
    )
    assert redact("password=abc host=h", "") == "password=*** host=h"


def test_stats_name_the_database_without_the_password(pg_store: PostgresSessionStore) -> None:
    stats = pg_store.stats()
    assert stats["url"].startswith("postgresql://hermes@127.0.0.1:")
    assert ":" + "@" not in stats["url"] and stats["schema_version"] == SCHEMA_VERSION


# --- migrations -----------------------------------------------------------------------------


def test_migrations_are_recorded_and_run_once(make_database: Callable[[], str]) -> None:
    url = make_database()
    first = PostgresSessionStore(url)
    first.close()
    assert first.migration.applied == list(range(1, SCHEMA_VERSION + 1))
    assert [v for v, _ in _versions(url)] == list(range(1, SCHEMA_VERSION + 1))
    second = PostgresSessionStore(url)
    second.close()
    assert second.migration.applied == [] and second.migration.current == SCHEMA_VERSION
    with psycopg.connect(url) as conn:
        extensions = [row[0] for row in conn.execute("SELECT extname FROM pg_extension")]
    assert "pg_trgm" in extensions


def test_stores_opening_at_once_migrate_once(make_database: Callable[[], str]) -> None:
    url = make_database()
    opened: list[PostgresSessionStore] = []
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def open_one() -> None:
        start.wait()
        try:
            opened.append(PostgresSessionStore(url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for store in opened:
        store.close()
    assert errors == [] and len(opened) == 6
    assert sum(len(store.migration.applied) for store in opened) == SCHEMA_VERSION
    assert [v for v, _ in _versions(url)] == list(range(1, SCHEMA_VERSION + 1))


def test_a_migration_waits_for_the_lock(make_database: Callable[[], str]) -> None:
    url = make_database()
    finished = threading.Event()
    with psycopg.connect(url) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))

        def open_one() -> None:
            PostgresSessionStore(url).close()
            finished.set()

        thread = threading.Thread(target=open_one)
        thread.start()
        assert not finished.wait(1.0), "the migration ran while another process held the lock"
        holder.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
        thread.join(30)
    assert finished.is_set()


def test_a_newer_schema_is_refused(make_database: Callable[[], str]) -> None:
    url = make_database()
    PostgresSessionStore(url).close()
    with psycopg.connect(url) as conn:
        conn.execute(f"INSERT INTO {VERSIONS_TABLE} (version, description) VALUES (999, 'x')")
    with pytest.raises(HermesError, match="schema version 999, written by a newer"):
        open_store(url)


def test_another_programs_tables_are_refused(make_database: Callable[[], str]) -> None:
    url = make_database()
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE sessions (id int)")
    with pytest.raises(HermesError, match="already has a table 'sessions' that hermes did not"):
        open_store(url)
    with psycopg.connect(url) as conn:
        assert conn.execute(f"SELECT to_regclass('{VERSIONS_TABLE}')").fetchone() == (None,)


def test_the_migrate_command_prints_the_versions(
    make_database: Callable[[], str], hermes_cli: Callable[..., Any]
) -> None:
    url = make_database()
    first = hermes_cli("store", "migrate", "--url", url)
    assert first.exit_code == 0, first.stderr
    assert "applied now" in first.stdout and f"schema version {SCHEMA_VERSION} of" in first.stdout
    assert _password(url) not in first.stdout
    again = hermes_cli("store", "migrate", env={"HERMES_STORE_URL": url})
    assert again.exit_code == 0, again.stderr
    assert "up to date" in again.stdout and "applied now" not in again.stdout
    assert f"  {1:>3}  " in again.stdout


def test_the_migrate_command_needs_a_postgres_url(hermes_cli: Callable[..., Any]) -> None:
    nothing = hermes_cli("store", "migrate")
    assert nothing.exit_code != 0 and "pass --url" in nothing.stderr
    sqlite = hermes_cli("store", "migrate", "--url", "sqlite:/tmp/x")
    assert sqlite.exit_code != 0 and "PostgreSQL URLs" in sqlite.stderr


# --- several processes -----------------------------------------------------------------------


def test_two_processes_write_one_session_in_order(
    open_stores: Callable[..., PostgresSessionStore],
) -> None:
    stores = [open_stores(), open_stores()]
    stores[0].create_session(SessionInfo(id="shared"))

    def write(store: PostgresSessionStore, name: str) -> None:
        for index in range(40):
            with store.batch():
                store.append_message("shared", {"role": "user", "content": f"{name} {index}"})
                store.add_usage("shared", {"input_tokens": 1})

    threads = [threading.Thread(target=write, args=(s, f"w{i}")) for i, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    messages = [m["content"] for m in stores[1].get_messages("shared")]
    for name in ("w0", "w1"):
        assert [m for m in messages if m.startswith(name)] == [f"{name} {i}" for i in range(40)]
    session = stores[0].get_session("shared")
    assert session is not None and session.metadata["message_count"] == 80
    assert session.metadata["input_tokens"] == 80


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_uses_connections_of_its_own(pg_store: PostgresSessionStore) -> None:
    pg_store.create_session(SessionInfo(id="forked"))
    pg_store.append_message("forked", {"role": "user", "content": "parent before"})
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            pg_store.append_message("forked", {"role": "assistant", "content": "child"})
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    pg_store.append_message("forked", {"role": "user", "content": "parent after"})
    contents = [m["content"] for m in pg_store.get_messages("forked")]
    assert contents == ["parent before", "child", "parent after"]


# --- messages PostgreSQL could not hold as they are -------------------------------------------


def test_a_huge_message_is_kept_exactly_and_found(pg_store: PostgresSessionStore) -> None:
    words = " ".join(f"w{i}x{i * 7919 % 100003}" for i in range(150_000))
    big = {"role": "tool", "tool_call_id": "c", "content": "needle-start " + words + " tailword"}
    pg_store.create_session(SessionInfo(id="huge"))
    pg_store.append_message("huge", big)
    assert pg_store.get_messages("huge") == [big]
    assert [h.session_id for h in pg_store.search("needle-start")] == ["huge"]


def test_nul_and_surrogates_in_session_fields_do_not_crash(
    pg_store: PostgresSessionStore,
) -> None:
    pg_store.create_session(
        SessionInfo(id="odd", system_prompt="a\x00b\ud800c", metadata={"k": "v\x00\udfff"})
    )
    pg_store.set_title("odd", "title \x00 here")
    got = pg_store.get_session("odd")
    assert got is not None
    assert got.system_prompt == "a\ufffdb\ufffdc" and got.title == "title \ufffd here"
    assert got.metadata["k"] == "v\x00\udfff"  # JSON keeps every character


# --- start-up ---------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["--help"], ["plugins", "list"]], ids=["help", "plugins-list"])
def test_start_up_does_not_import_the_driver(tmp_path: Path, argv: list[str]) -> None:
    probe = (
        "import json, sys\n"
        "import hermes_core.cli\n"
        f"code = hermes_core.cli.main({argv!r})\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('psycopg', 'psycopg_pool', 'psycopg_binary', 'hermes_store_postgres'))\n"
        "sys.stdout.write('@@' + json.dumps([code, loaded]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    code, loaded = json.loads(done.stdout.rsplit("@@", 1)[1])
    assert code == 0
    assert [m for m in loaded if not m.startswith("hermes_store_postgres")] == []
    assert "hermes_store_postgres" in loaded  # the plugin itself was loaded, its driver not


def test_registering_opens_nothing() -> None:
    started = time.monotonic()
    record = plugin_manager(["store_postgres"]).records["store_postgres"]
    assert record.status == "loaded"
    assert time.monotonic() - started < 5
