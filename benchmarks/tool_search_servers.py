"""MCP-like tools with realistic schemas for ``benchmarks/tool_search.py``: the kind of tool
lists a GitHub, Slack, Sentry, PostgreSQL, Linear and file-storage server publish (names,
descriptions of a sentence or two, typed and described parameters, enums, arrays, required
lists), generated deterministically; and, run as ``python tool_search_servers.py SERVER``,
a real MCP server over stdio that serves the tools of SERVER (each call answers with its
name and arguments).
"""

from __future__ import annotations

import json
import sys
from typing import Any

_P = dict[str, Any]

PARAMS: dict[str, _P] = {
    "owner": {"type": "string", "description": "Repository owner (user or organisation)"},
    "repo": {"type": "string", "description": "Repository name"},
    "title": {"type": "string", "description": "Title of the item"},
    "body": {"type": "string", "description": "Body text, in Markdown"},
    "state": {
        "type": "string",
        "enum": ["open", "closed", "all"],
        "description": "Filter by state",
    },
    "labels": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Labels to apply or filter by",
    },
    "per_page": {
        "type": "number",
        "minimum": 1,
        "maximum": 100,
        "description": "Results per page for pagination (max 100)",
    },
    "page": {"type": "number", "minimum": 1, "description": "Page number for pagination"},
    "channel_id": {"type": "string", "description": "The ID of the channel (e.g. C0123456)"},
    "text": {"type": "string", "description": "The message text; supports mrkdwn formatting"},
    "thread_ts": {"type": "string", "description": "Timestamp of the parent message to reply in"},
    "organization_slug": {"type": "string", "description": "The slug of the organisation"},
    "project_slug": {"type": "string", "description": "The slug of the project"},
    "issue_id": {"type": "string", "description": "The ID of the issue or event"},
    "query": {"type": "string", "description": "Search query, in the service's query syntax"},
    "sql": {"type": "string", "description": "The SQL statement to run (read-only)"},
    "schema": {"type": "string", "description": "Database schema name (default: public)"},
    "table": {"type": "string", "description": "Table name"},
    "team_id": {"type": "string", "description": "The team's identifier"},
    "assignee": {"type": "string", "description": "User ID or email of the assignee"},
    "priority": {
        "type": "number",
        "enum": [0, 1, 2, 3, 4],
        "description": "Priority: 0 none, 1 urgent, 2 high, 3 medium, 4 low",
    },
    "path": {"type": "string", "description": "Path of the file or folder, from the root"},
    "content": {"type": "string", "description": "Content to write, as UTF-8 text"},
    "ref": {"type": "string", "description": "Branch, tag or commit SHA (default branch if unset)"},
    "since": {"type": "string", "description": "Only results after this ISO 8601 date"},
    "sort": {
        "type": "string",
        "enum": ["created", "updated", "comments"],
        "description": "What to sort results by",
    },
    "direction": {"type": "string", "enum": ["asc", "desc"], "description": "Sort direction"},
    "calendar_id": {"type": "string", "description": "Calendar ID ('primary' for the user's)"},
    "event_id": {"type": "string", "description": "The event's ID"},
    "start": {"type": "string", "description": "Start time, RFC 3339 with offset"},
    "end": {"type": "string", "description": "End time, RFC 3339 with offset"},
    "attendees": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "email": {"type": "string", "description": "Attendee's email address"},
                "optional": {"type": "boolean", "description": "Whether attendance is optional"},
            },
            "required": ["email"],
        },
        "description": "People to invite",
    },
    "response": {
        "type": "string",
        "enum": ["accepted", "declined", "tentative"],
        "description": "The answer to the invitation",
    },
}

NOTES: dict[str, str] = {
    "github": "Uses the token the server was started with; GitHub's rate limits apply. Errors "
    "come back with the API's message and status.",
    "slack": "Acts as the bot user the server was installed as; the bot must be a member of "
    "private channels.",
    "sentry": "Reads the organisation the auth token belongs to; times are UTC.",
    "postgres": "Statements run in a read-only transaction with a 30 s statement timeout.",
    "linear": "Acts as the API key's user; identifiers look like ENG-123.",
    "storage": "Paths are relative to the storage root; '..' is refused.",
    "calendar": "Times are RFC 3339; without an offset the calendar's time zone applies.",
}

SERVERS: dict[str, list[tuple[str, str, list[str], list[str]]]] = {
    # server: [(tool, description, parameters, required)]
    "github": [
        (f"{verb}_{thing}", f"{text} {what}. {extra}", params, required)
        for thing, what, params, required in [
            (
                "issue",
                "an issue in a GitHub repository",
                ["owner", "repo", "title", "body", "labels"],
                ["owner", "repo"],
            ),
            (
                "pull_request",
                "a pull request in a GitHub repository",
                ["owner", "repo", "title", "body", "ref"],
                ["owner", "repo"],
            ),
            (
                "branch",
                "a branch of a GitHub repository",
                ["owner", "repo", "ref"],
                ["owner", "repo"],
            ),
            (
                "release",
                "a release of a GitHub repository",
                ["owner", "repo", "title", "body"],
                ["owner", "repo"],
            ),
            (
                "workflow_run",
                "a GitHub Actions workflow run",
                ["owner", "repo", "ref", "state"],
                ["owner", "repo"],
            ),
            (
                "issue_comment",
                "a comment on an issue or pull request",
                ["owner", "repo", "body"],
                ["owner", "repo"],
            ),
        ]
        for verb, text, extra in [
            ("create", "Create", "Requires push access to the repository."),
            ("get", "Get the details of", "Returns the full object as JSON."),
            ("list", "List", "Supports filtering and pagination with page and per_page."),
            ("update", "Update", "Only the fields given are changed."),
        ]
    ]
    + [
        (
            "search_code",
            "Search for code across GitHub repositories with the code search syntax.",
            ["query", "per_page", "page"],
            ["query"],
        ),
        (
            "search_repositories",
            "Search for GitHub repositories by name, topic or language.",
            ["query", "sort", "direction", "per_page"],
            ["query"],
        ),
        (
            "get_file_contents",
            "Get the contents of a file or directory from a GitHub repository.",
            ["owner", "repo", "path", "ref"],
            ["owner", "repo", "path"],
        ),
        (
            "merge_pull_request",
            "Merge a pull request into its base branch.",
            ["owner", "repo", "title", "body"],
            ["owner", "repo"],
        ),
    ],
    "slack": [
        (
            "post_message",
            "Post a new message to a Slack channel.",
            ["channel_id", "text"],
            ["channel_id", "text"],
        ),
        (
            "reply_to_thread",
            "Reply to a specific message thread in Slack.",
            ["channel_id", "thread_ts", "text"],
            ["channel_id", "thread_ts", "text"],
        ),
        (
            "add_reaction",
            "Add a reaction emoji to a message.",
            ["channel_id", "thread_ts", "text"],
            ["channel_id", "thread_ts"],
        ),
        (
            "list_channels",
            "List public or pre-defined channels in the workspace with pagination.",
            ["per_page", "page"],
            [],
        ),
        (
            "get_channel_history",
            "Get recent messages from a channel.",
            ["channel_id", "per_page"],
            ["channel_id"],
        ),
        (
            "get_thread_replies",
            "Get all replies in a message thread.",
            ["channel_id", "thread_ts"],
            ["channel_id", "thread_ts"],
        ),
        (
            "get_users",
            "Get a list of all users in the workspace with their basic profile information.",
            ["per_page", "page"],
            [],
        ),
        (
            "get_user_profile",
            "Get detailed profile information for a specific user.",
            ["assignee"],
            ["assignee"],
        ),
        (
            "search_messages",
            "Search messages across channels with Slack's search syntax.",
            ["query", "sort", "direction", "per_page"],
            ["query"],
        ),
        (
            "set_channel_topic",
            "Set the topic of a channel.",
            ["channel_id", "text"],
            ["channel_id", "text"],
        ),
    ],
    "sentry": [
        (f"{verb}_{thing}", f"{text} {what}. {extra}", params, required)
        for thing, what, params, required in [
            (
                "issue",
                "a Sentry issue (a group of similar error events)",
                ["organization_slug", "issue_id"],
                ["organization_slug", "issue_id"],
            ),
            (
                "event",
                "an error event with its stack trace, tags and breadcrumbs",
                ["organization_slug", "project_slug", "issue_id"],
                ["organization_slug"],
            ),
            (
                "project",
                "a Sentry project",
                ["organization_slug", "project_slug"],
                ["organization_slug"],
            ),
            (
                "release",
                "a release and the commits it contains",
                ["organization_slug", "project_slug", "ref"],
                ["organization_slug"],
            ),
        ]
        for verb, text, extra in [
            ("get", "Get", "Use the organisation slug from the Sentry URL."),
            ("list", "List the recent", "Newest first; use since to narrow the period."),
            ("resolve", "Mark as resolved", "Resolved items reopen when they happen again."),
        ]
    ]
    + [
        (
            "search_issues",
            "Search Sentry issues with Sentry's query syntax (is:unresolved, level:error ...).",
            ["organization_slug", "query", "sort", "since"],
            ["organization_slug", "query"],
        ),
        (
            "get_trace",
            "Get a distributed trace by its trace ID with every span.",
            ["organization_slug", "issue_id"],
            ["organization_slug", "issue_id"],
        ),
    ],
    "postgres": [
        (
            "query",
            "Run a read-only SQL query against the database and return the rows as JSON.",
            ["sql"],
            ["sql"],
        ),
        ("list_schemas", "List the schemas of the database.", [], []),
        ("list_tables", "List the tables of a schema with their row estimates.", ["schema"], []),
        (
            "describe_table",
            "Describe a table: its columns, types, defaults and constraints.",
            ["schema", "table"],
            ["table"],
        ),
        (
            "list_indexes",
            "List the indexes of a table with their definitions.",
            ["schema", "table"],
            ["table"],
        ),
        (
            "explain_query",
            "Show the execution plan of a query (EXPLAIN, without running it).",
            ["sql"],
            ["sql"],
        ),
        (
            "get_table_stats",
            "Get size, bloat and vacuum statistics of a table.",
            ["schema", "table"],
            ["table"],
        ),
        (
            "list_slow_queries",
            "List the slowest queries recorded by pg_stat_statements.",
            ["per_page"],
            [],
        ),
        ("list_locks", "List the locks currently held or awaited.", [], []),
        (
            "get_connection_info",
            "Get the server version, database size and connection counts.",
            [],
            [],
        ),
    ],
    "linear": [
        (f"{verb}_{thing}", f"{text} {what}. {extra}", params, required)
        for thing, what, params, required in [
            (
                "ticket",
                "a Linear issue (ticket)",
                ["team_id", "title", "body", "assignee", "priority", "labels"],
                ["team_id"],
            ),
            ("project", "a Linear project", ["team_id", "title", "body"], ["team_id"]),
            ("cycle", "a cycle (sprint) of a team", ["team_id", "since"], ["team_id"]),
        ]
        for verb, text, extra in [
            ("create", "Create", "Returns the new item's identifier and URL."),
            ("get", "Get", "Includes the item's state, assignee and history."),
            ("list", "List", "Filter by team; paginate with page and per_page."),
            ("update", "Update", "Only the fields given are changed."),
        ]
    ]
    + [
        (
            "search_tickets",
            "Search Linear issues by text, state or assignee.",
            ["query", "team_id", "state"],
            ["query"],
        ),
        (
            "add_ticket_comment",
            "Add a comment to a Linear issue.",
            ["issue_id", "body"],
            ["issue_id", "body"],
        ),
    ],
    "storage": [
        (
            "read_file",
            "Read the complete contents of a file from the shared storage.",
            ["path"],
            ["path"],
        ),
        (
            "write_file",
            "Create a new file or completely overwrite an existing file.",
            ["path", "content"],
            ["path", "content"],
        ),
        (
            "list_directory",
            "Get a detailed listing of all files and directories in a path.",
            ["path"],
            ["path"],
        ),
        ("move_file", "Move or rename files and directories.", ["path", "content"], ["path"]),
        (
            "search_files",
            "Recursively search for files and directories matching a pattern.",
            ["path", "query"],
            ["path", "query"],
        ),
        (
            "get_file_info",
            "Retrieve metadata about a file: size, times and permissions.",
            ["path"],
            ["path"],
        ),
        ("create_directory", "Create a new directory, or make sure it exists.", ["path"], ["path"]),
        ("delete_file", "Delete a file from the shared storage.", ["path"], ["path"]),
        (
            "share_file",
            "Create a link that shares a file with others until a date.",
            ["path", "since"],
            ["path"],
        ),
        ("list_shared", "List the files shared with links and their expiry.", ["per_page"], []),
    ],
    "calendar": [
        ("list_calendars", "List the calendars the user can see.", ["per_page"], []),
        (
            "list_events",
            "List events of a calendar between two times.",
            ["calendar_id", "start", "end", "per_page"],
            ["calendar_id"],
        ),
        (
            "get_event",
            "Get an event with its attendees and their responses.",
            ["calendar_id", "event_id"],
            ["calendar_id", "event_id"],
        ),
        (
            "create_event",
            "Create an event and send invitations.",
            ["calendar_id", "title", "start", "end", "attendees", "body"],
            ["calendar_id", "title", "start", "end"],
        ),
        (
            "update_event",
            "Update an event; attendees are notified.",
            ["calendar_id", "event_id", "title", "start", "end", "body"],
            ["calendar_id", "event_id"],
        ),
        (
            "delete_event",
            "Delete an event and notify its attendees.",
            ["calendar_id", "event_id"],
            ["calendar_id", "event_id"],
        ),
        (
            "find_free_slots",
            "Find times when all the given people are free.",
            ["attendees", "start", "end"],
            ["attendees", "start", "end"],
        ),
        (
            "respond_to_event",
            "Accept, decline or tentatively accept an invitation.",
            ["calendar_id", "event_id", "response"],
            ["calendar_id", "event_id", "response"],
        ),
        (
            "add_attendee",
            "Invite more people to an event.",
            ["calendar_id", "event_id", "attendees"],
            ["calendar_id", "event_id", "attendees"],
        ),
        (
            "remove_attendee",
            "Remove people from an event's guest list.",
            ["calendar_id", "event_id", "attendees"],
            ["calendar_id", "event_id", "attendees"],
        ),
        (
            "search_events",
            "Search events by text in their title, description or location.",
            ["calendar_id", "query", "since"],
            ["query"],
        ),
        (
            "set_reminder",
            "Set a reminder before an event.",
            ["calendar_id", "event_id", "start"],
            ["calendar_id", "event_id"],
        ),
        ("get_timezone", "Get the time zone of a calendar.", ["calendar_id"], ["calendar_id"]),
        ("list_upcoming", "List the user's next events across calendars.", ["per_page"], []),
    ],
}


def tools(server: str) -> list[dict[str, Any]]:
    """The MCP tool definitions (``name``, ``description``, ``inputSchema``) of ``server``."""
    out = []
    for name, description, params, required in SERVERS[server]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {p: PARAMS[p] for p in params},
        }
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        text = f"{description} {NOTES[server]}"
        out.append({"name": name, "description": text, "inputSchema": schema})
    return out


def count() -> int:
    """How many tools the servers have in all."""
    return sum(len(specs) for specs in SERVERS.values())


def serve(server: str) -> None:
    """Serve the tools of ``server`` over stdio with the MCP SDK."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server

    listed = [types.Tool(**t) for t in tools(server)]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: Any) -> Any:
        text = json.dumps({"tool": params.name, "arguments": params.arguments or {}})
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    app = Server(server, on_list_tools=list_tools, on_call_tool=call_tool)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await app.run(read, write, app.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    serve(sys.argv[1])
