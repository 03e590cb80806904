"""The OpenAI-compatible backend against a real server: llama-cpp-python's own
(`python -m llama_cpp.server`, the `llm-server` extra) serving the small packaged model on a
free loopback port. The server enforces a GBNF grammar and kgqa finds that out; `kgqa ask
--mode graph` through it gives the answers the in-process backend gives on the same model and
seed, with the step grammar held; a wrong key is one line; the server stopping in the middle of
an eval stops the run with one line, and the run resumes once the server is back.

Slow (the model runs on the CPU) and integration (the real Neo4j of the test session)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from kgqa.cli import cli
from kgqa.errors import LLMUnavailable
from kgqa.eval.datasets import Question
from kgqa.eval.runner import EvalConfig, read_records, run_eval
from kgqa.factory import Factory
from kgqa.llm.base import GenParams
from kgqa.llm.models import resolve_model
from kgqa.llm.openai_compat import OpenAICompatLLM
from kgqa.settings import load_settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MODEL = "qwen2.5-coder-0.5b"
THREADS = str(min(2, os.cpu_count() or 1))
KEY = "kgqa-test-key-4711"
QUESTIONS = [
    "what is the nationality of [Ada Varga]?",
    "what is the nationality of the spouse of [Ada Varga]?",
]


# What llama-cpp-python's server logs for a request whose prompt begins as the last one did.
PREFIX_READ = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """`python -m llama_cpp.server` with the small model, started and stopped by the tests."""

    def __init__(self, model_path: Path, log: Path, api_key: str | None = None):
        self.model_path = model_path
        self.log = log
        self.api_key = api_key
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 180.0) -> None:
        args = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_path),
            "--model_alias",
            MODEL,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            # What the in-process backend uses (kgqa.llm.llama_cpp, settings' defaults).
            "--n_ctx",
            "4096",
            "--n_threads",
            THREADS,
            "--n_threads_batch",
            THREADS,
            "--seed",
            "0",
        ]
        if self.api_key:
            args += ["--api_key", self.api_key]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.base_url}/models", headers=headers).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not start in {timeout:g} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@pytest.fixture(scope="module")
def model_path() -> Path:
    return resolve_model(MODEL, load_settings(env={}).cache_dir)


@pytest.fixture(scope="module")
def server(model_path: Path, tmp_path_factory) -> Iterator[LlamaServer]:
    served = LlamaServer(model_path, tmp_path_factory.mktemp("llm-server") / "server.log")
    served.start()
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def env(neo4j_settings, neo4j_driver, tmp_path_factory) -> dict[str, str]:
    """The sample people KB loaded, embedded and profiled (rules: no LLM) once."""
    from conftest import wipe_database

    wipe_database(neo4j_driver, neo4j_settings.neo4j.database)
    env = {
        "NEO4J_URI": neo4j_settings.neo4j.effective_uri,
        "NEO4J_USERNAME": neo4j_settings.neo4j.user,
        "NEO4J_PASSWORD": neo4j_settings.neo4j.password or "",
        "KGQA_DATA_DIR": str(tmp_path_factory.mktemp("llm-server-data")),
        "KGQA_PROFILE_NAMER": "rules",
        "KGQA_MODEL": MODEL,
        "KGQA_LLM_N_THREADS": THREADS,
    }
    kb = Path(str(resources.files("kgqa") / "data" / "sample_people.nt"))
    result = CliRunner().invoke(cli, ["load", str(kb)], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return env


def served_env(env: dict[str, str], server: LlamaServer, **extra: str) -> dict[str, str]:
    return env | {"KGQA_LLM_BACKEND": "openai", "KGQA_LLM_BASE_URL": server.base_url} | extra


def ask(env: dict[str, str], question: str, mode: str = "graph") -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    result = CliRunner().invoke(
        cli, ["ask", question, "--mode", mode, "--json"], env=env, catch_exceptions=False
    )
    seconds = time.perf_counter() - start
    assert result.exit_code == 0, result.output
    return json.loads(result.output[result.output.index("{") :]), seconds


def test_the_server_enforces_a_gbnf_grammar_and_kgqa_finds_that_out(server) -> None:
    llm = OpenAICompatLLM(server.base_url, MODEL)
    assert llm.supports_gbnf()
    choice = 'root ::= "Norland" | "Ostmark"'
    messages = [{"role": "user", "content": "Write a poem about the sea."}]
    out = llm.complete(messages, GenParams(max_tokens=8, grammar=choice))
    assert out.text in ("Norland", "Ostmark") and out.finish_reason == "stop"
    assert llm.record()["constrained_by"] == "gbnf"
    cut = llm.complete(messages, GenParams(max_tokens=2))
    assert cut.finish_reason == "length" and cut.completion_tokens == 2
    # The server counts tokens with the model's own tokenizer (its /extras endpoint).
    assert 1 < llm.count_tokens("Ada Varga") <= 6 and llm._counter == "extras"
    llm.close()


def test_graph_mode_through_the_server_matches_the_in_process_backend(env, server) -> None:
    timings = []
    for question in QUESTIONS:
        local, local_s = ask(env, question)
        mark = server.log.stat().st_size
        served, served_s = ask(served_env(env, server), question)
        # The grammar probe carried the step prompt, so the server read the prompt once, for
        # the probe: the step request after it found all of it already read (its log says
        # how many prompt tokens each request had left to read).
        reads = PREFIX_READ.findall(server.log.read_bytes()[mark:].decode("utf-8", "replace"))
        assert reads and int(reads[-1][1]) <= 2, reads
        timings.append(
            (
                question,
                local_s,
                served_s,
                local["timings"]["total_seconds"],
                served["timings"]["total_seconds"],
            )
        )
        assert served["parameters"]["llm_backend"] == "openai"
        assert served["parameters"]["constrained_by"] == "gbnf"
        assert served["parameters"]["step_grammar"] is True
        assert local["parameters"]["llm_backend"] == "llama_cpp"
        # Same model, same seed, same parameters: the same steps, path and answer.
        assert [s["original"] for s in served["sub_questions"]] == [
            s["original"] for s in local["sub_questions"]
        ]
        assert served["parameters"].get("path") == local["parameters"].get("path")
        assert {e["name"] for e in served["answer_entities"]} == {
            e["name"] for e in local["answer_entities"]
        }
    for question, local_s, served_s, local_stages, served_stages in timings:
        print(
            f"{question!r}: wall (CLI, model load included) in process {local_s:.1f} s, "
            f"through the server {served_s:.1f} s; stage seconds {local_stages:.2f} vs "
            f"{served_stages:.2f}"
        )


def test_kgrag_through_the_server_answers_with_its_sub_questions(env, server) -> None:
    out, seconds = ask(served_env(env, server), QUESTIONS[0], "kgrag")
    assert out["parameters"]["llm_backend"] == "openai"
    assert out["sub_questions"] and out["answer"]
    # The answer prompt was cut to the window with the server's token counts: nothing left out.
    assert not out["parameters"].get("triples_cut_to_fit")
    assert out["timings"]["prompt_tokens"] > 0
    print(f"kgrag {QUESTIONS[0]!r} through the server: {seconds:.1f} s, answer {out['answer']!r}")


def test_a_wrong_key_is_one_line_and_the_right_one_works(model_path, tmp_path) -> None:
    guarded = LlamaServer(model_path, tmp_path / "server.log", api_key=KEY)
    guarded.start()
    try:
        with pytest.raises(LLMUnavailable) as e:
            OpenAICompatLLM(guarded.base_url, MODEL, api_key="wrong").complete(
                [{"role": "user", "content": "hi"}], GenParams(max_tokens=1)
            )
        assert "refused the API key (401)" in str(e.value) and "wrong" not in str(e.value)
        right = OpenAICompatLLM(guarded.base_url, MODEL, api_key=KEY)
        assert right.complete([{"role": "user", "content": "hi"}], GenParams(max_tokens=1))
    finally:
        guarded.stop()


class StopsServerAt:
    """Delegates to the served LLM, and stops the server when a question about ``name`` is
    first sent: the server goes away in the middle of an eval."""

    def __init__(self, llm: OpenAICompatLLM, server: LlamaServer, name: str):
        self.llm, self.server, self.name = llm, server, name
        self.n_ctx = llm.n_ctx
        self.count_tokens = llm.count_tokens
        self.record = llm.record

    def complete(self, prompt: Any, params: GenParams) -> Any:
        if not isinstance(prompt, str) and f"[{self.name}]" in prompt[-1]["content"]:
            self.server.stop()
        return self.llm.complete(prompt, params)


def test_an_eval_stops_when_the_server_goes_away_and_resumes(
    env, neo4j_settings, model_path, tmp_path, capsys
) -> None:
    own = LlamaServer(model_path, tmp_path / "server.log")
    own.start()
    settings = load_settings(env=served_env(env, own, KGQA_LLM_MAX_RETRIES="1"), config=None)
    questions = [
        Question(1, "what is the nationality of [Ada Varga]", ("Ada Varga",), ("Norland",), hops=1),
        Question(2, "who is [Cy Varga] married to", ("Cy Varga",), ("Di Laine",), hops=1),
        Question(3, "what is the nationality of [Di Laine]", ("Di Laine",), ("Ostmark",), hops=1),
    ]
    config = EvalConfig("people/1-hop", 1, "dev", 3, 0, "graph", 3, 30, MODEL)
    out = tmp_path / "run"
    try:
        with Factory(settings) as f:
            llm = f.llm()
            assert isinstance(llm, OpenAICompatLLM)
            f._cache["llm"] = StopsServerAt(llm, own, "Cy Varga")
            with pytest.raises(LLMUnavailable) as e:
                run_eval(f.pipeline("graph"), questions, out, config, progress=False)
        message = str(e.value)
        assert "not reachable" in message and "\n" not in message
        assert [r["id"] for r in read_records(out)] == [1]  # no error record for the rest
        # The CLI says the same in one line, with the exit code (the embedder's progress
        # bar may come before it on stderr).
        from kgqa.cli import main

        mp = pytest.MonkeyPatch()
        for k, v in served_env(env, own, KGQA_LLM_MAX_RETRIES="0").items():
            mp.setenv(k, v)
        try:
            with pytest.raises(SystemExit) as exit_:
                main(["ask", QUESTIONS[0], "--mode", "graph"])
        finally:
            mp.undo()
        err = capsys.readouterr().err.strip().splitlines()
        assert exit_.value.code == LLMUnavailable.exit_code
        errors = [line for line in err if line.startswith("kgqa: ")]
        assert errors == [err[-1]] and err[-1].startswith("kgqa: error: LLM server"), err
        own.start()
        with Factory(settings) as f:
            result_ = run_eval(f.pipeline("graph"), questions, out, config, progress=False)
        assert (result_.resumed, result_.answered) == (1, 2)
        records = read_records(out)
        assert [r["id"] for r in records] == [1, 2, 3]
        assert all(r["status"] == "ok" for r in records)
        assert all(r["parameters"]["constrained_by"] == "gbnf" for r in records)
    finally:
        own.stop()
