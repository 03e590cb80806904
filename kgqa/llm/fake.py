"""A scripted LLM for tests: returns queued responses in order and records every prompt."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kgqa.llm.base import Completion, GenParams, Prompt, context_error


@dataclass(frozen=True)
class Call:
    prompt: Prompt
    params: GenParams

    @property
    def text(self) -> str:
        """The prompt as one string (chat messages joined), for assertions."""
        if isinstance(self.prompt, str):
            return self.prompt
        return "\n".join(f"[{m['role']}] {m['content']}" for m in self.prompt)


@dataclass
class ScriptedLLM:
    """``enqueue([...])`` responses; each ``complete`` pops the next one.

    A response is a string or a function of the prompt text. Stop strings are applied the way
    llama.cpp applies them (the output ends before the first stop string, which is dropped),
    so stages see what the real model would give them. Running out of responses is an error,
    so a test notices an unexpected extra call.

    A token is a word here. With ``n_ctx`` set, the fake has a context window as llama.cpp
    does: a prompt of ``n_ctx`` tokens or more is refused (:class:`~kgqa.errors.PromptTooLong`)
    and the stages that can cut their prompts to fit (:func:`~kgqa.llm.base.prompt_budget`)
    do so.
    """

    name: str = "scripted"
    responses: list[str | Callable[[str], str]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    n_ctx: int | None = None

    def count_tokens(self, prompt: Prompt) -> int:
        """Words in the prompt (chat messages joined), the fake's tokens."""
        return len(Call(prompt, GenParams()).text.split())

    def enqueue(self, responses: Iterable[str | Callable[[str], str]]) -> ScriptedLLM:
        self.responses.extend(responses)
        return self

    def complete(self, prompt: Prompt, params: GenParams) -> Completion:
        call = Call(prompt, params)
        if self.n_ctx is not None and self.count_tokens(prompt) >= self.n_ctx:
            raise context_error(self.count_tokens(prompt), self.n_ctx)
        self.calls.append(call)
        if not self.responses:
            raise AssertionError(f"ScriptedLLM: no response left for call {len(self.calls)}")
        response = self.responses.pop(0)
        text = response(call.text) if callable(response) else response
        finish = "stop"
        cut = min((i for i in (text.find(s) for s in params.stop if s) if i >= 0), default=-1)
        if cut >= 0:
            text = text[:cut]
        words = text.split()
        if len(words) > params.max_tokens:
            text, finish = " ".join(words[: params.max_tokens]), "length"
        return Completion(
            text=text,
            prompt_tokens=len(call.text.split()),
            completion_tokens=len(text.split()),
            seconds=0.0,
            finish_reason=finish,
        )
