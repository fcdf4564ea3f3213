"""hermes-compat-agent-plugins: run plugins written for the Hermes agent, unchanged.

Pip plugins of the ``hermes_agent.plugins`` entry point group and folder plugins in
``$HERMES_HOME/plugins/<name>/`` (``plugin.yaml`` and ``register(ctx)``) load when
``plugins.enabled`` names them; their tools, hooks and commands are served through hermes hooks
(:mod:`.plugin`). What a plugin uses that has no meaning here is listed, per plugin, by
``hermes plugins list``.
"""

__version__ = "0.1.0"
