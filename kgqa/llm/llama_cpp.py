"""The llama.cpp backend (llama-cpp-python).

The model is loaded on the first call (or :meth:`LlamaCppLLM.warm_up`), never in ``__init__``.
Chat prompts use the chat template stored in the GGUF. llama.cpp keeps the evaluated tokens of
the previous call and re-evaluates only what follows the longest common prefix, so prompts
whose fixed part (instructions, in-context examples) comes first are cheaper when repeated.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgqa.errors import ModelNotFound
from kgqa.llm.base import (
    CHAT_TOKENS_PER_MESSAGE,
    CHAT_TOKENS_PER_PROMPT,
    Completion,
    GenParams,
    Prompt,
    context_error,
)

if TYPE_CHECKING:
    import llama_cpp

_TOO_LONG = re.compile(r"Requested tokens \((\d+)\) exceed context window")


class LlamaCppLLM:
    """An :class:`~kgqa.llm.base.LLM` over a local GGUF file.

    ``n_threads=0`` uses every core; ``n_gpu_layers`` > 0 offloads layers on a CUDA/Metal
    build of llama-cpp-python (ignored by a CPU build). :meth:`pin_prefix` keeps a fixed prompt
    prefix (in-context examples) evaluated across calls.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        name: str | None = None,
        n_ctx: int = 4096,
        n_threads: int = 0,
        n_gpu_layers: int = 0,
        seed: int = 0,
        verbose: bool = False,
    ):
        self.model_path = Path(model_path)
        self.name = name or self.model_path.stem
        self.n_ctx = n_ctx
        self.n_threads = n_threads or (os.cpu_count() or 1)
        self.n_gpu_layers = n_gpu_layers
        self.seed = seed
        self.verbose = verbose
        self.load_seconds: float | None = None
        self._llama: llama_cpp.Llama | None = None
        self._grammars: dict[str, Any] = {}
        self._pending_pins: list[list[Any]] = []
        self._pins = _PinnedStates()
        # One llama context holds one KV cache: calls must not interleave.
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Load the model now (it takes seconds); later calls reuse it."""
        if self._llama is not None:
            return
        try:
            import llama_cpp
        except ImportError as e:
            raise ModelNotFound(
                "llama-cpp-python is not installed: pip install llama-cpp-python==0.3.36"
            ) from e
        if not self.model_path.is_file():
            raise ModelNotFound(f"model file {self.model_path} does not exist")
        start = time.perf_counter()
        try:
            self._llama = llama_cpp.Llama(
                model_path=str(self.model_path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                n_gpu_layers=self.n_gpu_layers,
                seed=self.seed,
                verbose=self.verbose,
            )
        except (ValueError, RuntimeError) as e:
            raise ModelNotFound(f"llama.cpp cannot load {self.model_path}: {e}") from e
        self.load_seconds = time.perf_counter() - start

    def _grammar(self, grammar: str) -> Any:
        if grammar not in self._grammars:
            from llama_cpp import LlamaGrammar

            text = grammar.strip()
            self._grammars[grammar] = (
                LlamaGrammar.from_json_schema(text, verbose=self.verbose)
                if text.startswith("{")
                else LlamaGrammar.from_string(text, verbose=self.verbose)
            )
        return self._grammars[grammar]

    def count_tokens(self, prompt: Prompt) -> int:
        """The prompt's tokens: exact for text; for chat messages, their contents plus an upper
        bound of what the chat template adds (the model loads on the first call)."""
        with self._lock:  # the model loads once, even when two threads ask first
            self.warm_up()
        assert self._llama is not None
        llama = self._llama

        def tokens(text: str) -> int:
            return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

        if isinstance(prompt, str):
            return tokens(prompt) + 1
        messages = list(prompt)
        return CHAT_TOKENS_PER_PROMPT + sum(
            tokens(m["content"]) + CHAT_TOKENS_PER_MESSAGE for m in messages
        )

    def complete(self, prompt: Prompt, params: GenParams) -> Completion:
        with self._lock:
            self.warm_up()
            try:
                return self._complete(prompt, params)
            except ValueError as e:
                # llama-cpp-python refuses a prompt that fills the window (the pinned prefixes
                # evaluated first included): "Requested tokens (N) exceed context window of M".
                found = _TOO_LONG.search(str(e))
                if found is None:
                    raise
                raise context_error(int(found.group(1)), self.n_ctx) from e

    def _complete(self, prompt: Prompt, params: GenParams) -> Completion:
        """One call, under the lock, with the model loaded."""
        assert self._llama is not None
        kwargs: dict[str, Any] = dict(
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            top_k=params.top_k,
            min_p=params.min_p,
            # top_p stays off (1.0): the paper samples with top-k and min-p only.
            top_p=1.0,
            repeat_penalty=params.repeat_penalty,
            stop=list(params.stop),
            seed=self.seed if params.seed is None else params.seed,
            grammar=self._grammar(params.grammar) if params.grammar else None,
        )
        # Only calls that continue a pinned prompt get the cache: with a cache set,
        # llama-cpp-python also saves the full state (~300 MB of logits) after each call.
        cache = self._pinned_cache_for(prompt)
        start = time.perf_counter()
        self._llama.cache = cache
        try:
            if isinstance(prompt, str):
                out: Any = self._llama.create_completion(prompt, **kwargs)
                text = out["choices"][0]["text"]
            else:
                messages: Any = list(prompt)
                out = self._llama.create_chat_completion(messages=messages, **kwargs)
                text = out["choices"][0]["message"]["content"] or ""
        finally:
            self._llama.cache = None
        seconds = time.perf_counter() - start
        usage = out.get("usage") or {}
        return Completion(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            seconds=seconds,
            finish_reason=out["choices"][0].get("finish_reason") or "stop",
        )

    def pin_prefix(self, prompt: Prompt) -> None:
        """Keep the evaluated state of ``prompt`` so that a later chat prompt with the same
        messages except the last one starts from it, even after other prompts ran in between.

        llama.cpp by itself reuses only the prefix shared with the *previous* call; in the
        pipeline the decomposition prompt (about 500 tokens of instructions and examples)
        follows other stages, so it would be re-evaluated for every question. Cheap to call:
        the state is computed on the first call after the model is loaded.
        """
        if isinstance(prompt, str):
            raise TypeError("pin_prefix takes chat messages")
        self._pending_pins.append(list(prompt))

    def _pinned_cache_for(self, prompt: Prompt) -> Any:
        """The pinned-state cache if ``prompt`` continues a pinned prompt, else ``None``."""
        if self._pending_pins:
            assert self._llama is not None
            for pin in self._pending_pins:
                self._llama.create_chat_completion(messages=pin, max_tokens=1)
                self._pins.add(pin[:-1], self._llama.save_state())
            self._pending_pins.clear()
        if isinstance(prompt, str) or not self._pins.matches(list(prompt)[:-1]):
            return None
        return self._pins


class _PinnedStates:
    """A llama-cpp-python prompt cache that serves pinned states and stores nothing else.

    Duck-types ``llama_cpp.BaseLlamaCache`` (``__getitem__`` / ``__contains__`` /
    ``__setitem__``): llama-cpp-python loads the returned state when its prefix is longer
    than what the context already holds, and evaluates only the rest of the prompt.
    """

    def __init__(self) -> None:
        self._states: list[tuple[list[Any], Any]] = []

    def add(self, messages: list[Any], state: Any) -> None:
        self._states.append((messages, state))

    def matches(self, messages: list[Any]) -> bool:
        return any(m == messages for m, _ in self._states)

    def _best(self, key: Any) -> Any:
        from llama_cpp import Llama

        tokens = list(key)
        scored = [
            (Llama.longest_token_prefix(s.input_ids.tolist(), tokens), s) for _, s in self._states
        ]
        best = max(scored, key=lambda x: x[0], default=(0, None))
        if best[0] == 0:
            raise KeyError("no pinned prefix")
        return best[1]

    def __getitem__(self, key: Any) -> Any:
        return self._best(key)

    def __contains__(self, key: Any) -> bool:
        try:
            self._best(key)
        except KeyError:
            return False
        return True

    def __setitem__(self, key: Any, value: Any) -> None:
        pass  # per-call states are not kept: only the pinned ones are worth their memory
