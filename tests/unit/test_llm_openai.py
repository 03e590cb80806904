"""The OpenAI-compatible backend against a scripted HTTP transport (httpx.MockTransport): the
request it sends (the paper's parameters, the grammar field), retries and back-off, every
failure as one line without the API key, the grammar probe, truncation, token counts, and the
settings and factory that choose it. The real server: tests/integration/test_llm_server.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx
import pytest

from kgqa.errors import ConfigError, KGQAError, LLMUnavailable, ModelNotFound, PromptTooLong
from kgqa.factory import Factory
from kgqa.llm.base import GenParams, context_window, stage_cost
from kgqa.llm.openai_compat import PROBE_GRAMMAR, PROBE_TEXT, OpenAICompatLLM
from kgqa.pipeline.pipeline import PipelineParams
from kgqa.settings import Settings, as_dict, load_settings

pytestmark = pytest.mark.unit

KEY = "sk-test-0123456789abcdef"
URL = "http://127.0.0.1:9/v1"
STEPS = 'root ::= "1. " ("member of" | "based in") " entities of [Ada]\\n<END>"'
Handler = Callable[[httpx.Request], httpx.Response]


def reply(text: str, finish: str = "stop", prompt_tokens: int = 7) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "choices": [
                {"message": {"role": "assistant", "content": text}, "finish_reason": finish}
            ],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split())},
        },
    )


class Server:
    """A scripted server: ``probe`` answers the grammar probe; ``script`` the other requests,
    in order. Every request is kept (``requests``)."""

    def __init__(self, script: list[httpx.Response | Handler], probe: bool | None = True):
        self.script = list(script)
        self.probe = probe
        self.requests: list[httpx.Request] = []

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests if r.content]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = json.loads(request.content) if request.content else {}
        if body.get("grammar") == PROBE_GRAMMAR and self.probe is not None:
            return reply(PROBE_TEXT if self.probe else "Hello! How can I help?")
        if not self.script:
            raise AssertionError(f"unexpected request {request.method} {request.url}")
        step = self.script.pop(0)
        return step(request) if callable(step) else step


def llm(server: Server, **kwargs: Any) -> tuple[OpenAICompatLLM, list[float]]:
    waits: list[float] = []
    kwargs.setdefault("api_key", KEY)
    model = OpenAICompatLLM(
        URL, "qwen-7b", transport=httpx.MockTransport(server), sleep=waits.append, **kwargs
    )
    return model, waits


CHAT = [{"role": "user", "content": "Where is the club of [Ada] based?"}]


def test_a_chat_call_sends_the_papers_parameters_and_the_key_as_a_bearer_header() -> None:
    server = Server([reply("Port Avel")])
    model, _ = llm(server)
    params = GenParams(max_tokens=64, temperature=0.3, top_k=40, min_p=0.05, repeat_penalty=1.1)
    out = model.complete(CHAT, params.with_(stop=["<END>"], seed=7))
    assert (out.text, out.finish_reason, out.prompt_tokens) == ("Port Avel", "stop", 7)
    (request,) = server.requests
    assert request.url == "http://127.0.0.1:9/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = json.loads(request.content)
    assert body == {
        "model": "qwen-7b",
        "messages": CHAT,
        "max_tokens": 64,
        "temperature": 0.3,
        "top_p": 1.0,
        "top_k": 40,
        "min_p": 0.05,
        "repeat_penalty": 1.1,
        "seed": 7,
        "stop": ["<END>"],
    }


def test_a_text_prompt_goes_to_completions_and_no_key_means_no_header() -> None:
    def text_reply(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/completions"
        assert json.loads(request.content)["prompt"] == "Q: 2+2\nA:"
        return httpx.Response(200, json={"choices": [{"text": " 4", "finish_reason": "stop"}]})

    server = Server([text_reply])
    model, _ = llm(server, api_key=None)
    assert model.complete("Q: 2+2\nA:", GenParams(seed=None)).text == " 4"
    assert "authorization" not in server.requests[0].headers
    assert json.loads(server.requests[0].content)["seed"] == 0  # the LLM's own seed


def test_output_cut_at_max_tokens_is_marked_as_in_process() -> None:
    model, _ = llm(Server([reply("Port", finish="length")]))
    out = model.complete(CHAT, GenParams(max_tokens=1))
    assert out.finish_reason == "length"
    assert stage_cost("answer", out).cut


def test_a_gbnf_grammar_goes_in_the_grammar_field_after_one_probe() -> None:
    server = Server([reply("1. member of entities of [Ada]\n<END>")] * 2)
    model, _ = llm(server)
    assert model.record()["constrained_by"] is None
    for _ in range(2):
        model.complete(CHAT, GenParams(grammar=STEPS))
    bodies = server.bodies()
    assert [b.get("grammar") for b in bodies] == [PROBE_GRAMMAR, STEPS, STEPS]  # probed once
    assert model.record() == {
        "llm_backend": "openai",
        "llm_base_url": URL,
        "constrained_by": "gbnf",
    }


def test_the_probe_carries_the_request_s_own_prompt() -> None:
    # A llama.cpp server then re-reads nothing of it for the request that follows.
    server = Server([reply("1. member of entities of [Ada]\n<END>")])
    model, _ = llm(server)
    model.complete(CHAT, GenParams(grammar=STEPS))
    probe, steps = server.bodies()
    assert probe["grammar"] == PROBE_GRAMMAR and steps["grammar"] == STEPS
    assert probe["messages"] == steps["messages"] == [dict(m) for m in CHAT]
    assert probe["max_tokens"] == 16 and probe["temperature"] == 0.0


def test_a_server_that_ignores_the_grammar_field_is_refused_in_one_line() -> None:
    server = Server([], probe=False)
    model, _ = llm(server)
    with pytest.raises(LLMUnavailable) as e:
        model.complete(CHAT, GenParams(grammar=STEPS))
    message = str(e.value)
    assert "does not enforce a GBNF grammar" in message and "\n" not in message
    assert len(server.requests) == 1  # only the probe: nothing ran unconstrained


def test_a_server_that_rejects_the_grammar_field_is_refused_too() -> None:
    def reject(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": {"message": "Unrecognized field: grammar"}})

    server = Server([reject], probe=None)
    model, _ = llm(server)
    with pytest.raises(LLMUnavailable, match="does not enforce a GBNF grammar"):
        model.complete(CHAT, GenParams(grammar=STEPS))


SCHEMA = '{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}'


def test_a_json_schema_goes_as_response_format_in_the_servers_own_form() -> None:
    server = Server([reply('{"name": "x"}')], probe=True)
    model, _ = llm(server)
    model.complete(CHAT, GenParams(grammar=SCHEMA))
    assert server.bodies()[-1]["response_format"] == {
        "type": "json_object",
        "schema": json.loads(SCHEMA),
    }
    other = Server([reply('{"name": "x"}')], probe=False)
    model, _ = llm(other)
    model.complete(CHAT, GenParams(grammar=SCHEMA))
    body = other.bodies()[-1]
    assert "grammar" not in body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == json.loads(SCHEMA)
    assert model.record()["constrained_by"] == "json_schema"


def test_429_and_5xx_are_retried_with_back_off_and_retry_after() -> None:
    server = Server(
        [
            httpx.Response(429, headers={"retry-after": "2"}, json={"error": {"message": "slow"}}),
            httpx.Response(503, json={"error": {"message": "loading"}}),
            reply("Port Avel"),
        ]
    )
    model, waits = llm(server, backoff=0.5)
    assert model.complete(CHAT, GenParams()).text == "Port Avel"
    assert waits == [2.0, 1.0]  # the server's Retry-After, then 0.5 * 2**1
    assert len(server.requests) == 3


def test_retries_are_bounded_and_end_in_one_line_with_the_status() -> None:
    server = Server([httpx.Response(500, json={"error": {"message": "boom\nline two"}})] * 3)
    model, waits = llm(server, max_retries=2, backoff=0.1)
    with pytest.raises(LLMUnavailable) as e:
        model.complete(CHAT, GenParams())
    assert str(e.value) == f"LLM server at {URL} answered 500: boom line two"
    assert len(server.requests) == 3 and waits == [0.1, 0.2]


def test_an_unreachable_server_is_one_line_naming_the_setting() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    server = Server([refuse] * 4)
    model, waits = llm(server)
    with pytest.raises(LLMUnavailable) as e:
        model.complete(CHAT, GenParams())
    message = str(e.value)
    assert "not reachable" in message and "KGQA_LLM_BASE_URL" in message
    assert "\n" not in message and len(waits) == 3


def test_a_time_out_is_retried_then_one_line() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    model, waits = llm(Server([slow] * 2), max_retries=1, timeout=5)
    with pytest.raises(LLMUnavailable, match=r"did not answer within 5 s \(2 tries\)"):
        model.complete(CHAT, GenParams())
    assert len(waits) == 1


@pytest.mark.parametrize("status", [401, 403])
def test_a_wrong_key_is_one_line_without_the_key(status: int) -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
    server = Server([httpx.Response(status, json=echo)])
    model, waits = llm(server)
    with pytest.raises(LLMUnavailable) as e:
        model.complete(CHAT, GenParams())
    message = str(e.value)
    assert f"refused the API key ({status})" in message and "KGQA_LLM_API_KEY" in message
    assert KEY not in message and waits == []  # not retried


def test_a_key_echoed_in_another_error_is_scrubbed() -> None:
    echo = {"error": {"message": f"bad request for key {KEY}"}}
    model, _ = llm(Server([httpx.Response(400, json=echo)]))
    with pytest.raises(LLMUnavailable) as e:
        model.complete(CHAT, GenParams())
    assert KEY not in str(e.value) and "***" in str(e.value)


def test_an_unknown_model_names_the_ones_the_server_has() -> None:
    models = httpx.Response(200, json={"object": "list", "data": [{"id": "mistral-7b"}]})
    server = Server([httpx.Response(404, json={"error": {"message": "model not found"}}), models])
    model, _ = llm(server)
    with pytest.raises(ModelNotFound) as e:
        model.complete(CHAT, GenParams())
    assert str(e.value) == (
        f"LLM server at {URL} has no model 'qwen-7b'; set llm.model (KGQA_MODEL) to one it "
        f"serves: mistral-7b"
    )
    assert server.requests[-1].method == "GET" and server.requests[-1].url.path == "/v1/models"


def test_a_wrong_path_is_one_line_about_the_base_url() -> None:
    server = Server([httpx.Response(404, text="Not Found"), httpx.Response(404)])
    model, _ = llm(server)
    with pytest.raises(LLMUnavailable, match=r"usually ends in /v1"):
        model.complete(CHAT, GenParams())


def test_a_prompt_too_long_for_the_server_is_prompt_too_long() -> None:
    message = "This model's maximum context length is 2048 tokens. However, you requested 3000"
    server = Server([httpx.Response(400, json={"error": {"message": message}})])
    model, waits = llm(server)
    with pytest.raises(PromptTooLong) as e:
        model.complete(CHAT, GenParams())
    assert "maximum context length is 2048" in str(e.value) and "KGQA_LLM_N_CTX" in str(e.value)
    assert waits == []


def test_a_reply_without_choices_is_one_line() -> None:
    model, _ = llm(Server([httpx.Response(200, json={"object": "error"})]))
    with pytest.raises(LLMUnavailable, match="without choices"):
        model.complete(CHAT, GenParams())


def test_tokens_are_counted_by_the_server_once_per_text() -> None:
    def count(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/extras/tokenize/count"
        return httpx.Response(200, json={"count": len(json.loads(request.content)["input"])})

    server = Server([count] * 3)
    model, _ = llm(server)
    assert model.count_tokens("abcd") == 5
    assert model.count_tokens([{"role": "user", "content": "abcd"}]) == 16 + 4 + 8
    question = CHAT[0]["content"]
    messages = [{"role": "system", "content": "xy"}, *CHAT]
    assert model.count_tokens(messages) == 16 + (2 + 8) + (len(question) + 8)
    assert len(server.requests) == 3  # "abcd" counted once; "xy" and the question once each
    assert context_window(model) == (4096, model.count_tokens)


def test_llama_cpps_tokenize_endpoint_and_an_estimate_where_there_is_none() -> None:
    tokenize = httpx.Response(200, json={"tokens": [1, 2, 3]})
    server = Server([httpx.Response(404), tokenize])
    model, _ = llm(server)
    assert model.count_tokens("anything") == 4
    assert server.requests[1].url.path == "/tokenize"
    none = Server([httpx.Response(404), httpx.Response(404)])
    model, _ = llm(none)
    assert model.count_tokens("x" * 30) == 30 // 3 + 1 + 1
    model.count_tokens("y" * 30)
    assert len(none.requests) == 2  # the estimate is chosen once


def test_the_key_is_in_no_repr_record_or_settings_view(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    settings = load_settings(
        env={"OPENAI_API_KEY": "sk-other", "KGQA_LLM_API_KEY": KEY, "KGQA_LLM_BACKEND": "openai"}
    )
    assert settings.llm.api_key == KEY  # KGQA_LLM_API_KEY wins over OPENAI_API_KEY
    assert KEY not in repr(settings) and KEY not in json.dumps(as_dict(settings))
    model, _ = llm(Server([]))
    assert KEY not in repr(model) and KEY not in json.dumps(model.record())
    fallback = load_settings(env={"OPENAI_API_KEY": "sk-other"})
    assert fallback.llm.api_key == "sk-other"


def test_settings_choose_the_backend(tmp_path) -> None:
    base = Settings(cache_dir=tmp_path, data_dir=tmp_path)
    openai = replace(
        base, llm=replace(base.llm, backend="openai", base_url=URL, model="m", api_key=KEY)
    )
    made = Factory(openai).llm()
    assert isinstance(made, OpenAICompatLLM)
    assert (made.base_url, made.model, made.n_ctx) == (URL, "m", 4096)
    with pytest.raises(ConfigError, match="KGQA_LLM_BASE_URL"):
        Factory(replace(base, llm=replace(base.llm, backend="openai"))).llm()
    with pytest.raises(ConfigError, match="'llama_cpp' or 'openai'"):
        Factory(replace(base, llm=replace(base.llm, backend="vllm"))).llm()


def test_the_answers_parameters_say_which_backend_and_constraint_were_used(tmp_path) -> None:
    base = Settings(cache_dir=tmp_path, data_dir=tmp_path)
    settings = replace(base, llm=replace(base.llm, backend="openai", base_url=URL))
    factory = Factory(settings)
    params = PipelineParams.from_settings(settings, llm_record=factory._llm_record)
    server = Server([reply("1. member of entities of [Ada]\n<END>")])
    model = factory.llm()
    model._transport = httpx.MockTransport(server)
    assert params.as_dict("graph")["constrained_by"] is None
    model.complete(CHAT, GenParams(grammar=STEPS))
    recorded = params.as_dict("graph")
    assert recorded["llm_backend"] == "openai" and recorded["constrained_by"] == "gbnf"
    assert recorded["repeat_penalty"] == 1.0
    factory.close()


def test_every_error_is_a_kgqa_error_with_its_exit_code() -> None:
    assert issubclass(LLMUnavailable, KGQAError) and LLMUnavailable.exit_code == 8


def test_kgqa_asks_cost_line_names_the_server_and_the_constraint() -> None:
    from kgqa.commands.ask_cmd import _cost_table
    from kgqa.types import Answer

    served = {"model": "m", "seed": 0, "llm_backend": "openai", "llm_base_url": URL}
    answer = Answer("q", (), "llm", "x", parameters=served | {"constrained_by": "gbnf"})
    assert f"mode llm, model m at {URL}, output held by gbnf, seed 0" in _cost_table(answer)
    local = Answer("q", (), "llm", "x", parameters={"model": "m", "seed": 0})
    assert "mode llm, model m, seed 0" in _cost_table(local)


def test_graph_mode_over_the_wire_sends_its_step_grammar_and_records_it() -> None:
    from test_graphmode import named_profile, walker

    from kgqa.graphmode.pipeline import GraphPipeline

    p = named_profile()
    # What a server sends back: the output ends before the stop string, which is dropped.
    server = Server([reply("1. spouses of [Ada]\n2. countries of those spouses\n")])
    model, _ = llm(server)
    params = PipelineParams(llm_record=model.record)
    pipe = GraphPipeline(model, walker(p), params, profile=p)
    answer = pipe.answer("what is the nationality of [Ada]'s spouse", ["Ada"])
    assert [e.name for e in answer.answer_entities] == ["Ostmark"]
    probe, steps = server.bodies()
    assert probe["grammar"] == PROBE_GRAMMAR
    assert steps["grammar"] == pipe.step_grammar(["Ada"])
    assert "<END>" in steps["stop"]
    assert answer.parameters["constrained_by"] == "gbnf"
    assert answer.parameters["step_grammar"] is True
