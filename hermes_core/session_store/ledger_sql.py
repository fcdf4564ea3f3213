"""The tables of the spend ledger and of the credential pools' shared state (schema version 5),
and the statements that read and change them."""

from __future__ import annotations

LEDGER_TABLES = """
CREATE TABLE usage_records (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    session_id TEXT NOT NULL,
    person TEXT,
    source TEXT NOT NULL DEFAULT '',
    job TEXT,
    model TEXT NOT NULL DEFAULT '',
    provider TEXT NOT NULL DEFAULT '',
    key_id TEXT NOT NULL DEFAULT '',
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL
);
CREATE INDEX usage_by_at ON usage_records (at);
CREATE INDEX usage_by_session ON usage_records (session_id, at);
CREATE INDEX usage_by_person ON usage_records (person, at);
CREATE INDEX usage_by_job ON usage_records (job, at) WHERE job IS NOT NULL;

CREATE TABLE key_state (
    provider TEXT NOT NULL,
    key_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL DEFAULT '',
    version INTEGER NOT NULL,
    cooldown_until REAL NOT NULL DEFAULT 0,
    reason TEXT NOT NULL DEFAULT '',
    uses INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    last_used REAL NOT NULL DEFAULT 0,
    extra TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (provider, key_id)
);
"""
"""Schema version 5: ``usage_records`` and ``key_state``."""

INSERT_USAGE = (
    "INSERT INTO usage_records (at, session_id, person, source, job, model, provider, key_id, "
    "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

SPENT = (
    "SELECT COALESCE(SUM(cost_usd), 0), "
    "COALESCE(SUM(CASE WHEN cost_usd IS NULL THEN input_tokens + output_tokens END), 0) "
    "FROM usage_records WHERE at >= ?"
)

LAST_CALL = (
    "SELECT input_tokens + output_tokens FROM usage_records WHERE session_id = ? "
    "ORDER BY at DESC, id DESC LIMIT 1"
)

GROUPS = {
    "day": "date(at, 'unixepoch', 'localtime')",
    "model": "model",
    "user": "COALESCE(person, '(owner)')",
    "job": "COALESCE(job, '(none)')",
    "key": "provider || ':' || CASE key_id WHEN '' THEN '(unpooled)' ELSE key_id END",
}
"""``hermes usage --by`` groups, as SQL expressions."""

USAGE_ROWS = (
    "SELECT {group} AS grp, COUNT(*), SUM(input_tokens), SUM(output_tokens), "
    "SUM(cache_read_tokens), SUM(cache_write_tokens), COALESCE(SUM(cost_usd), 0), "
    "SUM(cost_usd IS NULL) FROM usage_records WHERE at >= ? GROUP BY grp ORDER BY {order}"
)

KEY_STATES = (
    "SELECT key_id, fingerprint, version, cooldown_until, reason, uses, errors, last_used, "
    "extra FROM key_state WHERE provider = ?"
)

INSERT_KEY_STATE = (
    "INSERT INTO key_state (provider, key_id, fingerprint, version, cooldown_until, reason, "
    "uses, errors, last_used, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (provider, key_id) DO NOTHING"
)

UPDATE_KEY_STATE = (
    "UPDATE key_state SET fingerprint = ?, version = ?, cooldown_until = ?, reason = ?, "
    "uses = ?, errors = ?, last_used = ?, extra = ? "
    "WHERE provider = ? AND key_id = ? AND version = ?"
)
