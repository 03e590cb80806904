"""An OpenAI-compatible chat-completions server as the LLM (llama.cpp's server, Ollama, vLLM,
LM Studio, a hosted API), over ``httpx``.

Nothing is sent in ``__init__``; the first call (or :meth:`OpenAICompatLLM.warm_up`) opens the
client. Graph mode's steps are held to a GBNF grammar: the server must enforce it. Whether it
does is found out once, by asking for a reply that only the grammar makes likely (a server that
ignores an unknown ``grammar`` field answers in prose); a GBNF grammar sent to a server that
does not enforce one is refused with one line, never run unconstrained. A JSON schema goes as
``response_format``. :meth:`record` says which was used, for the answer's parameters.

The API key is kept only in the client's headers, is never part of ``repr``, an error message
or a record, and is scrubbed from any server message that echoes it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kgqa.errors import LLMUnavailable, ModelNotFound, PromptTooLong
from kgqa.llm.base import (
    CHAT_TOKENS_PER_MESSAGE,
    CHAT_TOKENS_PER_PROMPT,
    Completion,
    GenParams,
    Prompt,
)

if TYPE_CHECKING:
    import httpx

# Statuses worth another try: rate limited, or the server (or a proxy before it) failing.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
# What the grammar probe asks for: a reply no model writes unless a grammar makes it.
PROBE_TEXT = "kgqa-grammar-probe"
PROBE_GRAMMAR = f'root ::= "{PROBE_TEXT}"'
# Words in a server's error that mean the prompt did not fit its context window.
_CONTEXT_WORDS = re.compile(r"context length|context window|context_length|exceeds? .*context")
# Bytes per token where the server cannot count (no tokenize endpoint): an over-count for
# English text with the BPE vocabularies of current models (about 4 bytes a token).
BYTES_PER_TOKEN_ESTIMATE = 3


def _safe_url(url: str) -> str:
    """The URL without credentials written into it (user:password@)."""
    return re.sub(r"//[^/@]*@", "//", url)


class OpenAICompatLLM:
    """An :class:`~kgqa.llm.base.LLM` over ``POST {base_url}/chat/completions`` (chat prompts)
    and ``POST {base_url}/completions`` (text prompts).

    ``model``: the server's model name. ``n_ctx``: the server's context window (the stages cut
    their prompts to fit it). ``timeout``: seconds for one response; ``max_retries`` further
    tries on a refused connection, a time-out, 429 or 5xx, waiting ``backoff`` × 2ⁿ seconds (or
    the server's ``Retry-After``, at most 30 s). ``transport``: an ``httpx`` transport (tests
    pass ``httpx.MockTransport``).
    """

    backend = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        n_ctx: int = 4096,
        seed: int = 0,
        timeout: float = 120.0,
        connect_timeout: float = 5.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], object] = time.sleep,
    ):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = model
        self.n_ctx = n_ctx
        self.seed = seed
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self._api_key = api_key
        self._transport = transport
        self._sleep = sleep
        self._client: httpx.Client | None = None
        # Found out once, on the first call that needs it.
        self._gbnf: bool | None = None
        self._counter: str | None = None  # "extras", "tokenize" or "estimate"
        self._counts: dict[str, int] = {}
        self.constraints_used: set[str] = set()

    def __repr__(self) -> str:
        return f"OpenAICompatLLM(base_url={_safe_url(self.base_url)!r}, model={self.model!r})"

    @property
    def where(self) -> str:
        return _safe_url(self.base_url)

    def warm_up(self) -> None:
        """Open the HTTP client (no request is sent)."""
        if self._client is not None:
            return
        import httpx

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
            transport=self._transport,
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def record(self) -> dict[str, object]:
        """What a run's parameters say about this backend (never the key)."""
        return {
            "llm_backend": self.backend,
            "llm_base_url": self.where,
            "constrained_by": ",".join(sorted(self.constraints_used)) or None,
        }

    # -- generation -------------------------------------------------------------------------
    def complete(self, prompt: Prompt, params: GenParams) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            # top_p stays off (1.0): the paper samples with top-k and min-p only. top_k,
            # min_p and repeat_penalty are llama.cpp's names (vLLM reads top_k and min_p;
            # a server that does not know a field ignores it).
            "top_p": 1.0,
            "top_k": params.top_k,
            "min_p": params.min_p,
            "repeat_penalty": params.repeat_penalty,
            "seed": self.seed if params.seed is None else params.seed,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        if isinstance(prompt, str):
            path, body["prompt"] = "/completions", prompt
        else:
            path, body["messages"] = "/chat/completions", [dict(m) for m in prompt]
        if params.grammar:
            body.update(self._constraint(params.grammar, body.get("messages")))
        start = time.perf_counter()
        out = self._post(path, body)
        seconds = time.perf_counter() - start
        try:
            choice = out["choices"][0]
            text = choice["text"] if isinstance(prompt, str) else choice["message"]["content"]
        except (KeyError, IndexError, TypeError) as e:
            raise LLMUnavailable(
                f"LLM server at {self.where} sent a reply without choices; is it OpenAI-compatible?"
            ) from e
        usage = out.get("usage") or {}
        return Completion(
            text=text or "",
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            seconds=seconds,
            # "length": the output hit max_tokens and may be cut, as with llama.cpp in process.
            finish_reason=choice.get("finish_reason") or "stop",
        )

    def _constraint(
        self, grammar: str, messages: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The request fields that hold the output to ``grammar`` (GBNF, or a JSON schema);
        ``messages``: the request's, for the probe (see :meth:`supports_gbnf`)."""
        text = grammar.strip()
        if text.startswith("{"):
            schema = json.loads(text)
            self.constraints_used.add("json_schema")
            if self.supports_gbnf(messages):
                # llama.cpp's servers (C++ and Python) read a schema in the json_object form.
                return {"response_format": {"type": "json_object", "schema": schema}}
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "kgqa", "schema": schema, "strict": True},
                }
            }
        if not self.supports_gbnf(messages):
            raise LLMUnavailable(
                f"LLM server at {self.where} does not enforce a GBNF grammar (the `grammar` "
                f"field), which graph mode's steps need; use llama.cpp's server, or set "
                f"graph.grammar=false (KGQA_GRAPH_GRAMMAR=0) to run unconstrained"
            )
        self.constraints_used.add("gbnf")
        return {"grammar": grammar}

    def supports_gbnf(self, messages: list[dict[str, Any]] | None = None) -> bool:
        """Whether the server enforces the ``grammar`` field: asked once, with a grammar that
        allows only one reply.

        ``messages``: the request about to be sent, whose prompt the probe then carries. A
        llama.cpp server keeps the prompt it last read and re-reads only what a new prompt adds
        to it, so the request after the probe reads nothing again; a probe with a prompt of
        its own would make the server read the whole request (its fixed instructions and
        examples too) in every process that asks one question (19 s a `kgqa ask` with the
        0.5B model on 2 threads, docs/llm.md)."""
        if self._gbnf is None:
            body = {
                "model": self.model,
                "messages": messages or [{"role": "user", "content": "Say hello."}],
                "max_tokens": 16,
                "temperature": 0.0,
                "seed": self.seed,
                "grammar": PROBE_GRAMMAR,
            }
            try:
                out = self._post("/chat/completions", body)
            except LLMUnavailable as e:
                if getattr(e, "status", None) in (400, 422):
                    self._gbnf = False  # the server refuses the unknown field
                    return False
                raise
            try:
                reply = out["choices"][0]["message"]["content"] or ""
            except (KeyError, IndexError, TypeError):
                reply = ""
            self._gbnf = reply.strip() == PROBE_TEXT
        return self._gbnf

    # -- token counts -------------------------------------------------------------------------
    def count_tokens(self, prompt: Prompt) -> int:
        """The prompt's tokens, counted by the server's tokenizer where it has an endpoint for
        it (llama-cpp-python's ``/extras/tokenize/count``, llama.cpp's ``/tokenize``), else an
        over-estimate from its length; chat messages add what a template adds, as in process."""
        if isinstance(prompt, str):
            return self._count(prompt) + 1
        return CHAT_TOKENS_PER_PROMPT + sum(
            self._count(m["content"]) + CHAT_TOKENS_PER_MESSAGE for m in prompt
        )

    def _count(self, text: str) -> int:
        if text not in self._counts:
            self._counts[text] = self._server_count(text)
        return self._counts[text]

    def _server_count(self, text: str) -> int:
        root = re.sub(r"/v1$", "", self.base_url)
        if self._counter in (None, "extras"):
            found = self._try_post(f"{root}/extras/tokenize/count", {"input": text})
            if found is not None and isinstance(found.get("count"), int):
                self._counter = "extras"
                return int(found["count"])
        if self._counter in (None, "tokenize"):
            found = self._try_post(f"{root}/tokenize", {"content": text})
            if found is not None and isinstance(found.get("tokens"), list):
                self._counter = "tokenize"
                return len(found["tokens"])
        self._counter = "estimate"
        return len(text.encode("utf-8")) // BYTES_PER_TOKEN_ESTIMATE + 1

    def _try_post(self, url: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """One request to an optional endpoint: its JSON, or ``None`` where it has none."""
        import httpx

        self.warm_up()
        assert self._client is not None
        try:
            response = self._client.post(url, json=body)
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        try:
            data = response.json()
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    # -- the wire -------------------------------------------------------------------------------
    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST with bounded retries; every failure is one line (a :class:`KGQAError`)."""
        import httpx

        self.warm_up()
        assert self._client is not None
        url = self.base_url + path
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            wait = self.backoff * 2**attempt
            try:
                response = self._client.post(url, json=body)
            except httpx.TimeoutException as e:
                if last:
                    raise LLMUnavailable(
                        f"LLM server at {self.where} did not answer within {self.timeout:g} s "
                        f"({self.max_retries + 1} tries); raise llm.timeout (KGQA_LLM_TIMEOUT)"
                    ) from e
                self._sleep(wait)
                continue
            except httpx.TransportError as e:
                if last:
                    raise LLMUnavailable(
                        f"LLM server at {self.where} is not reachable ({type(e).__name__}, "
                        f"{self.max_retries + 1} tries); is it running? check llm.base_url "
                        f"(KGQA_LLM_BASE_URL)"
                    ) from e
                self._sleep(wait)
                continue
            status = response.status_code
            if status == 200:
                try:
                    data = response.json()
                except ValueError:
                    data = None
                if not isinstance(data, dict):
                    raise LLMUnavailable(
                        f"LLM server at {self.where} sent a reply that is not a JSON object; "
                        f"is {url} an OpenAI-compatible endpoint?"
                    )
                return data
            if status in RETRY_STATUSES and not last:
                self._sleep(self._retry_after(response, wait))
                continue
            raise self._error(response, path)
        raise AssertionError("unreachable")  # the loop returns or raises

    @staticmethod
    def _retry_after(response: httpx.Response, default: float) -> float:
        try:
            return min(30.0, max(0.0, float(response.headers.get("retry-after", default))))
        except ValueError:
            return default

    def _message(self, response: httpx.Response) -> str:
        """The server's own error text, on one line, short, with the key scrubbed."""
        try:
            data = response.json()
            error = data.get("error", data) if isinstance(data, dict) else data
            text = error.get("message") or error.get("detail") if isinstance(error, dict) else error
            text = text if isinstance(text, str) else json.dumps(text)
        except ValueError:
            text = response.text
        if self._api_key:
            text = text.replace(self._api_key, "***")
        text = " ".join(str(text).split())
        return text[:200] + ("..." if len(text) > 200 else "")

    def _error(self, response: httpx.Response, path: str) -> Exception:
        status = response.status_code
        message = self._message(response)
        where = self.where
        if status in (401, 403):
            error: Exception = LLMUnavailable(
                f"LLM server at {where} refused the API key ({status}); set KGQA_LLM_API_KEY "
                f"(or OPENAI_API_KEY)"
            )
        elif status == 404:
            models = self._model_names()
            if models is not None and self.model not in models:
                shown = ", ".join(models[:8]) or "none"
                error = ModelNotFound(
                    f"LLM server at {where} has no model {self.model!r}; set llm.model "
                    f"(KGQA_MODEL) to one it serves: {shown}"
                )
            else:
                error = LLMUnavailable(
                    f"LLM server at {where} has no {path} (404: {message}); llm.base_url "
                    f"(KGQA_LLM_BASE_URL) usually ends in /v1"
                )
        elif status in (400, 413, 422) and _CONTEXT_WORDS.search(message.lower()):
            error = PromptTooLong(
                f"the prompt does not fit the context window of the model at {where} "
                f"({message}); start the server with a larger context, and set llm.n_ctx "
                f"(KGQA_LLM_N_CTX) to it"
            )
        else:
            error = LLMUnavailable(f"LLM server at {where} answered {status}: {message}")
        error.status = status  # type: ignore[attr-defined]
        return error

    def _model_names(self) -> list[str] | None:
        """The models the server lists (``GET /models``), or ``None`` where it lists none."""
        import httpx

        assert self._client is not None
        try:
            response = self._client.get(self.base_url + "/models")
            data = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("data"), list):
            return None
        return [str(m.get("id")) for m in data["data"] if isinstance(m, dict)]
