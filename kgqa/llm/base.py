"""The LLM interface every stage talks to, and the values that cross it.

One small protocol (``complete``) so that the stages can run against llama.cpp, a scripted
fake in tests, or any other backend a user plugs in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypedDict


class ChatMessage(TypedDict):
    role: str  # "system" | "user" | "assistant"
    content: str


Prompt = str | Sequence[ChatMessage]
"""A raw text prompt (no chat template) or chat messages (the model's own template)."""


@dataclass(frozen=True)
class GenParams:
    """Sampling parameters for one call. Defaults are the paper's Table 2."""

    max_tokens: int = 256
    temperature: float = 0.3
    top_k: int = 40
    min_p: float = 0.05
    repeat_penalty: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = 0
    # A GBNF grammar, or a JSON schema (a string starting with "{"), that constrains output.
    grammar: str | None = None

    def with_(self, **changes: object) -> GenParams:
        """A copy with some fields changed (``stop`` may be given as a list)."""
        if "stop" in changes and changes["stop"] is not None:
            changes["stop"] = tuple(changes["stop"])  # type: ignore[arg-type]
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Completion:
    """What one call produced and what it cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    # "stop" (end of turn or a stop string) or "length" (hit max_tokens: output may be cut).
    finish_reason: str = "stop"


class LLM(Protocol):
    """A text generator. ``name`` identifies the model in results."""

    name: str

    def complete(self, prompt: Prompt, params: GenParams) -> Completion:
        """Generate a continuation of ``prompt`` (text) or the assistant's reply (messages)."""
        ...
