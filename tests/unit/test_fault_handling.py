"""The pieces behind issue 13's fixes, without services: prompts cut to fit the context window
(and llama.cpp's refusal as one line), output cut at the token limit, empty brackets, long
questions' link terms, URI schemes, the CLI's line for a bug, private server folders. The same
faults through the real CLI and Neo4j: tests/integration/test_faults.py."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from kgqa.answers import complete_answer_line, split_cut_line, topic_names
from kgqa.errors import BadQuestion, ConfigError, PromptTooLong
from kgqa.eval.metrics import aggregate
from kgqa.factory import URI_SCHEMES, check_uri
from kgqa.graph.linking import MAX_LINK_TERMS, link_terms
from kgqa.llm.base import GenParams, prompt_budget
from kgqa.llm.fake import ScriptedLLM
from kgqa.llm.llama_cpp import LlamaCppLLM
from kgqa.pipeline.answer import SubQuestionAnswerer
from kgqa.pipeline.ground import AnswerGrounder
from kgqa.pipeline.pipeline import KGRAGPipeline, PipelineParams
from kgqa.types import Candidates, ScoredTriple, Triple

pytestmark = pytest.mark.unit


def _scored(n: int) -> list[ScoredTriple]:
    return [ScoredTriple(Triple(i, "Heat", "has_tags", f"tag {i}"), 1.0 - i / n) for i in range(n)]


# -- prompts that cannot fit ----------------------------------------------------------------
def test_the_budget_leaves_the_output_its_share_at_most_half_the_window() -> None:
    assert prompt_budget(4096, GenParams(max_tokens=256)) == 3840
    assert prompt_budget(64, GenParams(max_tokens=256)) == 32


def test_triples_are_cut_best_first_to_what_the_prompt_can_hold() -> None:
    llm = ScriptedLLM(n_ctx=300)
    answerer = SubQuestionAnswerer(llm, GenParams(max_tokens=50))
    top = _scored(200)
    kept = answerer.fit("who directed [Heat]?", top)
    assert 0 < len(kept) < 200 and kept == top[: len(kept)]
    assert llm.count_tokens(answerer.prompt("who directed [Heat]?", kept)) <= 250
    bigger = answerer.prompt("who directed [Heat]?", top[: len(kept) + 1])
    assert llm.count_tokens(bigger) > 250  # as many as fit, not fewer
    assert answerer.fit("q", top[:3]) == top[:3]  # what fits is not touched
    assert SubQuestionAnswerer(ScriptedLLM(), GenParams()).fit("q", top) == top  # no window


def test_a_window_that_holds_not_one_triple_is_refused_naming_the_setting() -> None:
    answerer = SubQuestionAnswerer(ScriptedLLM(n_ctx=64), GenParams())
    with pytest.raises(PromptTooLong, match=r"context window of 64 tokens; raise llm\.n_ctx"):
        answerer.fit("who directed [Heat]?", _scored(5))


def test_the_pipeline_records_and_grounds_only_the_triples_the_prompt_held() -> None:
    class Retriever:
        def candidates(self, entities: Any, hops: int) -> Candidates:
            return Candidates(tuple(entities), hops, (tuple(t.triple for t in _scored(400)),))

        def top_k(self, text: str, candidates: Candidates, k: int) -> list[ScoredTriple]:
            return _scored(400)[:k]

    llm = ScriptedLLM(n_ctx=400, responses=["tag 1"])
    pipe = KGRAGPipeline(llm, Retriever(), PipelineParams(top_k=100000), "kaping")
    answer = pipe.answer("which tags has [Heat]?", ["Heat"])
    kept = len(answer.sub_answers[0].evidence)
    assert answer.parameters["triples_cut_to_fit"] == 400 - kept > 0
    assert len(llm.calls[0].text.split()) < 400


class FakeLlama:
    """What LlamaCppLLM uses of llama_cpp.Llama; refuses long prompts with its message."""

    def __init__(self, n_ctx: int):
        self.n_ctx, self.cache = n_ctx, None

    def tokenize(self, data: bytes, add_bos: bool = False, special: bool = True) -> list[int]:
        return list(range(len(data.split())))

    def create_chat_completion(self, messages: Any, **kwargs: Any) -> Any:
        tokens = sum(len(m["content"].split()) for m in messages)
        if tokens >= self.n_ctx:
            raise ValueError(f"Requested tokens ({tokens}) exceed context window of {self.n_ctx}")
        raise ValueError("some other llama.cpp failure")


def _llama_llm(n_ctx: int) -> LlamaCppLLM:
    llm = LlamaCppLLM("/nonexistent.gguf", n_ctx=n_ctx)
    llm._llama = FakeLlama(n_ctx)  # type: ignore[assignment]
    return llm


def test_llama_cpps_refusal_of_a_long_prompt_is_one_line_naming_the_setting() -> None:
    llm = _llama_llm(64)
    prompt = [{"role": "user", "content": "word " * 100}]
    with pytest.raises(PromptTooLong) as e:
        llm.complete(prompt, GenParams())  # type: ignore[arg-type]
    assert str(e.value) == (
        "a prompt of 100 tokens does not fit the LLM's context window of 64 tokens; raise "
        "llm.n_ctx (KGQA_LLM_N_CTX, default 4096)"
    )
    with pytest.raises(ValueError, match="some other"):  # other failures are not disguised
        llm.complete([{"role": "user", "content": "short"}], GenParams())  # type: ignore[arg-type]


def test_llama_counts_chat_tokens_with_room_for_the_template() -> None:
    llm = _llama_llm(4096)
    messages = [{"role": "system", "content": "a b"}, {"role": "user", "content": "c d e"}]
    assert llm.count_tokens(messages) > 5  # type: ignore[arg-type]
    assert llm.count_tokens("a b c") == 4


# -- output cut at the token limit -------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "complete", "last"),
    [
        ("Paul", "", "Paul"),
        ("Michael Mann, Paul", "Michael Mann", "Paul"),
        ("Answer: Al Pacino and Robert", "Al Pacino", "Robert"),
        ("Michael Mann\nExplanation: he", "Michael Mann", ""),  # the answer line was finished
        ("", "", ""),
    ],
)
def test_a_cut_answer_lines_last_item_is_set_apart(text: str, complete: str, last: str) -> None:
    assert split_cut_line(text) == (complete, last)
    assert complete_answer_line(text, cut=True) == complete
    assert complete_answer_line(text, cut=False) == (text.split("\n")[0].replace("Answer: ", ""))


def test_a_name_cut_mid_way_is_not_grounded() -> None:
    grounder = AnswerGrounder(lambda names: {n: f"id-{n}" for n in names if n == "Paul"}, set)
    evidence = [Triple(1, "Showgirls", "written_by", "Paul")]
    assert [e.name for e in grounder.ground("Paul", ["Heat"], evidence)] == ["Paul"]
    assert grounder.ground("Paul", ["Heat"], evidence, cut=True) == ()
    assert grounder.ground("Paul", ["Heat"], evidence, suspect=["paul"]) == ()


def test_a_cut_stage_is_marked_on_the_answer_and_counted_in_the_aggregate() -> None:
    llm = ScriptedLLM(responses=["Paul Verhoeven", "Paul Verhoeven"])
    pipe = KGRAGPipeline(llm, None, PipelineParams(gen=GenParams(max_tokens=1)), "llm")
    answer = pipe.answer("who directed Heat?", [])
    assert answer.text == "Paul" and answer.cut_stages == ("answer",)
    from kgqa.document import answer_document

    ok = {"status": "ok", "answer": answer_document(answer), "metrics": {}}
    clean = {"status": "ok", "answer": {"cut_stages": []}, "metrics": {}}
    agg = aggregate([ok, clean, {"status": "error", "metrics": {}}])
    assert agg["cut_answers"] == 1 and agg["cut_by_stage"] == {"answer": 1}


# -- questions, URIs ------------------------------------------------------------------------------
@pytest.mark.parametrize("question", ["who directed []?", "who directed [  ] and [Heat]?"])
def test_empty_brackets_are_a_bad_question(question: str) -> None:
    with pytest.raises(BadQuestion, match=r"^the question has empty brackets \[\]"):
        topic_names(question)
    assert topic_names(question, ["Heat"]) == ["Heat"]  # --entity says which


def test_a_long_question_is_linked_from_a_bounded_set_of_terms() -> None:
    words = [f"word{i}" for i in range(2000)]
    terms = link_terms(" ".join(words) + " who directed Heat? heat HEAT")
    assert len(terms) == MAX_LINK_TERMS and terms[0] == "Heat"
    assert link_terms("who directed Heat in Heat?") == ["who", "directed", "Heat", "in"]


@pytest.mark.parametrize("uri", [f"{s}://127.0.0.1:7687" for s in URI_SCHEMES])
def test_bolt_schemes_are_accepted(uri: str) -> None:
    check_uri(uri)


def test_other_schemes_name_those_that_work_and_hide_credentials() -> None:
    with pytest.raises(ConfigError) as e:
        check_uri("http://neo4j:hunter2@127.0.0.1:7474")
    message = str(e.value)
    assert "scheme 'http'" in message and "bolt+ssc://" in message and "hunter2" not in message


# -- the CLI's last line of defence ------------------------------------------------------------
def test_an_unexpected_exception_is_one_line_saying_it_is_a_bug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kgqa import cli

    def boom(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("unexpected\nstate")

    monkeypatch.delenv("KGQA_DEBUG", raising=False)
    monkeypatch.setattr("kgqa.commands.graph_cmds.stats.callback", boom)
    with pytest.raises(SystemExit) as e:
        cli.main(["stats"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == cli.BUG_EXIT_CODE
    assert len(err) == 1 and err[0].startswith("kgqa: internal error (this is a bug in kgqa")
    assert "RuntimeError: unexpected state" in err[0] and "KGQA_DEBUG=1" in err[0]
    monkeypatch.setenv("KGQA_DEBUG", "1")
    with pytest.raises(RuntimeError):
        cli.main(["stats"])


def test_a_file_the_system_refuses_is_one_line_not_a_bug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kgqa import cli

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device", "/data/index/index.faiss")

    monkeypatch.delenv("KGQA_DEBUG", raising=False)
    monkeypatch.setattr("kgqa.commands.graph_cmds.stats.callback", full)
    with pytest.raises(SystemExit) as e:
        cli.main(["stats"])
    assert e.value.code == cli.IO_EXIT_CODE
    assert capsys.readouterr().err == (
        "kgqa: error: No space left on device: /data/index/index.faiss\n"
    )


def test_a_commands_exit_code_reaches_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    import click

    from kgqa import cli

    def exits(*_args: object, **_kwargs: object) -> None:
        click.get_current_context().exit(6)

    monkeypatch.setattr("kgqa.commands.graph_cmds.stats.callback", exits)
    with pytest.raises(SystemExit) as e:
        cli.main(["stats"])
    assert e.value.code == 6


# -- the local server's folders ----------------------------------------------------------------
def test_the_server_home_and_its_folders_are_private(tmp_path: Path) -> None:
    from kgqa.graph.server import LocalNeo4j
    from kgqa.settings import Neo4jSettings, Settings

    settings = Settings(
        neo4j=Neo4jSettings(data_dir=tmp_path / "neo4j"),
        cache_dir=tmp_path / "cache",
        data_dir=tmp_path / "data",
    )
    server = LocalNeo4j(settings)
    old = tmp_path / "neo4j" / "data"
    server.make_private_folders()
    for folder in (server.home, old, server.logs_dir, server.conf_dir):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    old.chmod(0o755)  # a home made by an older kgqa
    server.make_private_folders()
    assert stat.S_IMODE(old.stat().st_mode) == 0o700
