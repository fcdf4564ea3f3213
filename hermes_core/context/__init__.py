"""What fills the context window: the system prompt's layers, the context engine and the size of
each model's window."""
