"""clawcore-models-openai: OpenAI-compatible chat models for the clawcore agent loop.

Registers the model ``openai`` through ``register_models``; its settings are
the ``models.openai`` config section.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from clawcore import hookimpl
from clawcore.http_api import CLEARTEXT_RULE, endpoint_properties

from clawcore_models_openai.defaults import DEFAULTS

if TYPE_CHECKING:
    from clawcore_models_openai.chat import OpenAIChatModel

__all__ = ["OpenAIChatModel", "config_schema", "register_models"]


def __getattr__(name: str) -> Any:
    # The OpenAI SDK takes half a second to import: only a chat model that is built needs it.
    if name == "OpenAIChatModel":
        from clawcore_models_openai.chat import OpenAIChatModel

        return OpenAIChatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {
        "models.openai": {
            "type": "object",
            "additionalProperties": False,
            "description": "An OpenAI-compatible chat model (OpenAI, Ollama, vLLM, LM Studio).",
            "allOf": [CLEARTEXT_RULE],
            "properties": {
                "model": {"type": "string", "minLength": 1, "default": DEFAULTS["model"]},
                "apiKey": {"type": ["string", "null"], "default": None,
                           "description": "Prefer apiKeyEnv: a key in the file is a key on disk."},
                **endpoint_properties("models.openai", DEFAULTS["timeout"]),
                "contextWindow": {"type": "integer", "minimum": 1024, "default": DEFAULTS["contextWindow"]},
                "maxOutputTokens": {"type": ["integer", "null"], "minimum": 1, "default": None},
                "temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2, "default": None},
                "retries": {"type": "integer", "minimum": 0, "maximum": 10, "default": DEFAULTS["retries"]},
            },
        }
    }


def _openai(settings: Mapping[str, Any]) -> OpenAIChatModel:
    from clawcore_models_openai.chat import OpenAIChatModel

    return OpenAIChatModel(settings)


@hookimpl
def register_models(register: Callable[..., None]) -> None:
    register("openai", _openai)
