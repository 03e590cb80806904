"""The LLM interface every stage talks to, and the values that cross it.

One small protocol (``complete``) so that the stages can run against llama.cpp, a scripted
fake in tests, or any other backend a user plugs in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypedDict

from kgqa.errors import PromptTooLong
from kgqa.types import StageCost


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


def stage_cost(stage: str, out: Completion) -> StageCost:
    """What one call of ``stage`` cost, and whether its output stopped at the token limit."""
    return StageCost(
        stage,
        out.seconds,
        out.prompt_tokens,
        out.completion_tokens,
        cut=out.finish_reason == "length",
    )


class LLM(Protocol):
    """A text generator. ``name`` identifies the model in results."""

    name: str

    def complete(self, prompt: Prompt, params: GenParams) -> Completion:
        """Generate a continuation of ``prompt`` (text) or the assistant's reply (messages)."""
        ...


# Tokens a chat template adds around each message (role markers, end-of-turn), and around the
# whole prompt (the assistant's opening): an upper bound for the small models kgqa runs.
CHAT_TOKENS_PER_MESSAGE = 8
CHAT_TOKENS_PER_PROMPT = 16


def context_window(llm: object) -> tuple[int, Callable[[Prompt], int]] | None:
    """The LLM's context window (``n_ctx``) and its token counter (``count_tokens``), for the
    stages that cut their prompts to fit; ``None`` for an LLM that has not both."""
    n_ctx = getattr(llm, "n_ctx", None)
    count = getattr(llm, "count_tokens", None)
    if not isinstance(n_ctx, int) or n_ctx <= 0 or count is None:
        return None
    return n_ctx, count


def prompt_budget(n_ctx: int, params: GenParams) -> int:
    """How many prompt tokens a call with ``params`` may use so that the output still has
    room: the window less the output's share (``max_tokens``, at most half of the window)."""
    return n_ctx - min(params.max_tokens, n_ctx // 2)


def context_error(tokens: int, n_ctx: int, what: str = "a prompt") -> PromptTooLong:
    """The one line for a prompt that cannot fit: the setting to raise, and by how much."""
    return PromptTooLong(
        f"{what} of {tokens:,} tokens does not fit the LLM's context window of {n_ctx:,} "
        f"tokens; raise llm.n_ctx (KGQA_LLM_N_CTX, default 4096)"
    )
