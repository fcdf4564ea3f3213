"""Assembling the system prompt from the ``hermes_prompt_layers`` hook."""

from __future__ import annotations

from dataclasses import dataclass

from hermes_hookspecs import TIERS, PromptContext, PromptLayer

from ..plugins.manager import PluginManager

LAYER_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class BuiltLayer:
    """A layer as it ended up in the prompt, with the plugin that gave it."""

    layer: PromptLayer
    plugin: str


def collect_layers(plugins: PluginManager, context: PromptContext) -> list[BuiltLayer]:
    """The layers of every plugin, deduplicated by name and in prompt order.

    Plugins are read in load order, so a later-loaded plugin's layer replaces an earlier one of
    the same name (a third party can override a core layer); it keeps the earlier one's slot.
    """
    results = plugins.call_each("hermes_prompt_layers", context=context)
    by_name: dict[str, tuple[int, BuiltLayer]] = {}
    sequence = 0
    for record, value in reversed(results):  # call order is newest first; load order is reverse
        layers = value if isinstance(value, list | tuple) else [value]
        for layer in layers:
            if not isinstance(layer, PromptLayer):
                continue
            if layer.tier not in TIERS:
                plugins.record_error(
                    record,
                    "hermes_prompt_layers",
                    ValueError(f"layer {layer.name!r}: unknown tier {layer.tier!r}"),
                )
                continue
            slot = by_name[layer.name][0] if layer.name in by_name else sequence
            sequence += 1
            by_name[layer.name] = (slot, BuiltLayer(layer, record.name))
    ordered = sorted(
        by_name.values(),
        key=lambda item: (TIERS.index(item[1].layer.tier), item[1].layer.order, item[0]),
    )
    return [built for _slot, built in ordered if built.layer.text.strip()]


def join_layers(layers: list[BuiltLayer]) -> str:
    """The system prompt text: the layers' texts, stripped, joined by blank lines."""
    return LAYER_SEPARATOR.join(b.layer.text.strip() for b in layers)
