"""The agent loop: one turn of the conversation, its tool calls, approvals, transcript and
compaction, and the runner of agents that plugins start."""
