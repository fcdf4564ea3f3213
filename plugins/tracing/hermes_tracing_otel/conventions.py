"""The names this plugin emits, from the OpenTelemetry GenAI semantic conventions at one pinned
revision: v1.41.0 of open-telemetry/semantic-conventions, the last release that defined
``gen_ai.*`` there (from v1.42.0 they live in open-telemetry/semantic-conventions-genai, and the
``opentelemetry-semantic-conventions`` package keeps the same names as deprecated constants).
The tests check every name against that package's constants.

Plain strings: importing this module imports nothing of OpenTelemetry."""

from __future__ import annotations

SEMCONV_VERSION = "1.41.0"
"""The pinned revision of the conventions."""
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
"""The schema URL of the spans and metrics."""

# --- span names and operations
AGENT_NAME = "hermes"
OP_INVOKE_AGENT = "invoke_agent"
OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"

# --- attributes
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
AGENT_NAME_ATTR = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_TOP_P = "gen_ai.request.top_p"
REQUEST_SEED = "gen_ai.request.seed"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING = "gen_ai.usage.reasoning.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOKEN_TYPE = "gen_ai.token.type"
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
HTTP_STATUS = "http.response.status_code"

# --- metrics
METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"
METRIC_DURATION = "gen_ai.client.operation.duration"
TOKEN_BUCKETS = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
"""The conventions' advised bucket boundaries of ``gen_ai.client.token.usage``."""
DURATION_BUCKETS = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
"""The conventions' advised bucket boundaries of ``gen_ai.client.operation.duration``."""

# --- hermes's own attributes
COST_USD = "hermes.cost.usd"
EXIT_REASON = "hermes.exit_reason"
TASK_ID = "hermes.task_id"
SOURCE = "hermes.source"
API_CALLS = "hermes.api_calls"
PARENT_SESSION_ID = "hermes.parent_session_id"
PROVIDER = "hermes.provider"
LINK_KIND = "hermes.link"

PROVIDERS = {
    "openai": "openai",
    "openai-codex": "openai",
    "anthropic": "anthropic",
    "deepseek": "deepseek",
    "groq": "groq",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "perplexity": "perplexity",
    "gemini": "gcp.gemini",
    "vertex": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "cohere": "cohere",
    "azure": "azure.ai.openai",
}
"""hermes provider names -> the conventions' ``gen_ai.provider.name`` values."""
HOSTS = (
    ("api.openai.com", "openai"),
    ("openai.azure.com", "azure.ai.openai"),
    ("api.anthropic.com", "anthropic"),
    ("api.deepseek.com", "deepseek"),
    ("api.groq.com", "groq"),
    ("api.mistral.ai", "mistral_ai"),
    ("api.x.ai", "x_ai"),
    ("api.perplexity.ai", "perplexity"),
    ("generativelanguage.googleapis.com", "gcp.gemini"),
    ("aiplatform.googleapis.com", "gcp.vertex_ai"),
    ("bedrock-runtime", "aws.bedrock"),
    ("api.cohere", "cohere"),
)
"""Endpoint host parts -> provider names, for an endpoint given as ``custom``."""


def provider_name(provider: str, base_url: str = "") -> str:
    """The conventions' ``gen_ai.provider.name`` of a hermes provider (and endpoint): a value
    of their list when one applies, else the hermes name (the conventions allow custom
    values)."""
    known = PROVIDERS.get(provider)
    if known is not None:
        return known
    if base_url:
        from urllib.parse import urlsplit

        host = (urlsplit(base_url).hostname or "").lower()
        for part, name in HOSTS:
            if part in host:
                return name
    return provider or "unknown"
