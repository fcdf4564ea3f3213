"""``hermes prompt``: see the system prompt a new session would start with, layer by layer."""

from __future__ import annotations

import datetime as _dt
import json
import os
import uuid
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import click

from hermes_hookspecs import HermesError

from .state import CliState

if TYPE_CHECKING:
    from hermes_hookspecs import PromptContext

    from ..context.prompt import BuiltLayer

CHARS_PER_TOKEN = 4
"""The rough size of a token, for the ``~tokens`` column."""


def approx_tokens(chars: int) -> int:
    """A rough token count for ``chars`` characters (4 characters a token, rounded up)."""
    return -(-chars // CHARS_PER_TOKEN)


def _model_and_provider(state: CliState) -> tuple[str, str, str | None]:
    """The model and provider a new session would use, and a note when they could not be
    resolved (the configured names are used then). No client is created and no key is needed:
    the prompt does not depend on the key."""
    from ..models.providers import resolve_provider

    model_cfg = dict(state.config.data.get("model") or {})
    try:
        _, settings = resolve_provider(state.registry, {**model_cfg, "api_key": "unused"})
    except HermesError as exc:
        return str(model_cfg.get("default") or ""), str(model_cfg.get("provider") or ""), str(exc)
    return settings.model, settings.provider, None


def _engine_tools(state: CliState) -> list[Any]:
    """The tools of the context engine a new session would start, as ``Agent`` does."""
    from ..context.engines import make_engine

    engine = make_engine(state.registry, state.config.data)
    return list(engine.tools()) if engine is not None else []


def build_prompt(
    state: CliState, platform: str | None = None
) -> tuple[PromptContext, list[BuiltLayer], str, list[str]]:
    """Build the prompt a new session would get: its context, its layers, the joined text, and
    notes about anything that had to be assumed."""
    from hermes_hookspecs import PromptContext, PromptLayer

    from ..context.prompt import BuiltLayer, collect_layers, join_layers
    from ..context.windows import context_window
    from ..tools.bridge import install_bridge
    from ..tools.toolsets import build_toolbox

    cfg = state.config.data
    notes: list[str] = []
    model, provider, problem = _model_and_provider(state)
    if problem:
        notes.append(f"model and provider taken from the configuration: {problem}")
    toolbox = build_toolbox(state.registry, cfg, extra_tools=_engine_tools(state))
    bridge = install_bridge(toolbox, cfg, context_window(model, cfg, model))  # as Agent does
    context = PromptContext(
        model=model,
        provider=provider,
        platform=platform or str((cfg.get("agent") or {}).get("platform") or "cli"),
        system_message=None,
        tool_names=toolbox.names,
        toolsets=toolbox.toolsets,
        hermes_home=str(state.config.home),
        cwd=os.getcwd(),
        session_id=f"session_{uuid.uuid4().hex[:16]}",
        date=_dt.date.today().isoformat(),
        config=MappingProxyType(cfg),
    )
    layers = collect_layers(state.plugins, context)
    if bridge is not None:  # the catalogue of deferred tools ends the prompt (tools.defer)
        catalogue = PromptLayer(name="tool_catalogue", text=bridge.prompt_text(), order=999)
        layers.append(BuiltLayer(catalogue, "tools.defer"))
    return context, layers, join_layers(layers), notes


def _layer_rows(layers: list[BuiltLayer]) -> list[dict[str, Any]]:
    rows = []
    for built in layers:
        text = built.layer.text.strip()  # as joined into the prompt
        rows.append(
            {
                "name": built.layer.name,
                "tier": built.layer.tier,
                "order": built.layer.order,
                "plugin": built.plugin,
                "chars": len(text),
                "tokens": approx_tokens(len(text)),
                "text": text,
            }
        )
    return rows


def _table(rows: list[dict[str, Any]], prompt: str) -> str:
    headers = ("layer", "tier", "plugin", "chars", "~tokens")
    cells = [
        (r["name"], r["tier"], r["plugin"], f"{r['chars']:,}", f"{r['tokens']:,}") for r in rows
    ]
    cells.append(("total", "", "", f"{len(prompt):,}", f"{approx_tokens(len(prompt)):,}"))
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]

    def line(values: tuple[str, ...]) -> str:
        left = [v.ljust(w) for v, w in zip(values[:3], widths[:3], strict=True)]
        right = [v.rjust(w) for v, w in zip(values[3:], widths[3:], strict=True)]
        return "  ".join(left + right).rstrip()

    out = [line(headers)]
    out += [line(c) for c in cells[:-1]]
    out.append(line(tuple("-" * w for w in widths)))
    out.append(line(cells[-1]))
    return "\n".join(out)


@click.group("prompt")
def prompt_group() -> None:
    """Show the system prompt a new session would start with, layer by layer.

    The prompt is assembled from the prompt layers of the installed plugins, exactly as a new
    session builds it; a resumed session replays the prompt stored with it instead.
    """


@prompt_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print the layers and the prompt as JSON.")
@click.option("--raw", is_flag=True, help="Print only the assembled prompt.")
@click.option(
    "--platform",
    metavar="NAME",
    help="Build it for this platform (cli, cron, gateway, library); default agent.platform.",
)
@click.pass_obj
def show(state: CliState, as_json: bool, raw: bool, platform: str | None) -> None:
    """Print each layer's name, tier, plugin and size, then the assembled prompt.

    Sizes are in characters and approximate tokens (4 characters a token).
    """
    if as_json and raw:
        raise click.UsageError("--json and --raw cannot be used together")
    context, layers, prompt, notes = build_prompt(state, platform)
    if raw:
        click.echo(prompt)
        return
    rows = _layer_rows(layers)
    if as_json:
        document = {
            "model": context.model,
            "provider": context.provider,
            "platform": context.platform,
            "date": context.date,
            "layers": rows,
            "chars": len(prompt),
            "tokens": approx_tokens(len(prompt)),
            "prompt": prompt,
            "notes": notes,
        }
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
        return
    for note in notes:
        click.echo(f"note: {note}", err=True)
    if not rows:
        click.echo("No prompt layers: the system prompt is empty.")
        return
    facts = ", ".join(
        f"{label} {value}"
        for label, value in (("model", context.model), ("provider", context.provider))
        if value
    )
    click.echo(
        f"System prompt of a new {context.platform} session" + (f" ({facts})" if facts else "")
    )
    click.echo()
    click.echo(_table(rows, prompt))
    click.echo()
    click.echo(prompt)
