"""Fault injection (issue 13): each fault and bad input that used to give a traceback, a
misleading message or an answer it should not, through the real CLI against the real Neo4j of
the test session, asserting the exit code, the one line on stderr and that the graph and the
vector index are as they were.

The LLM is the scripted fake (the factory's ``llm`` is replaced; it takes ``llm.n_ctx`` from
the settings, so it has a context window as llama.cpp does and refuses what does not fit) and
the embedder the hashing one: no model is loaded. The llama.cpp side of a prompt too long is
unit-tested (tests/unit/test_fault_handling.py) against llama-cpp-python's own message.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import neo4j
import pytest
from cli_run import run_cli

from kgqa.embed.hashing import HashingEmbedder
from kgqa.errors import (
    BadQuestion,
    ConfigError,
    GraphUnavailable,
    IndexMismatch,
    ModelNotFound,
    PromptTooLong,
)
from kgqa.factory import Factory
from kgqa.llm.fake import ScriptedLLM
from kgqa.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.faults]

REAL_LLM = Factory.llm  # the llama.cpp one, for the cases about model files

TAGS = 300  # triples around [Heat] beyond its director and cast: more than a prompt can hold
KB = [
    "Heat|directed_by|Michael Mann",
    "Heat|starred_actors|Al Pacino",
    "Heat|starred_actors|Robert De Niro",
    "Collateral|directed_by|Michael Mann",
    # A node that a cut-off "Paul" (of "Paul Verhoeven") would be linked to.
    "Showgirls|written_by|Paul",
    *(f"Heat|has_tags|tag number {i}" for i in range(TAGS)),
]


def _llm(answer: str | Callable[[str], str]) -> Callable[[Factory], ScriptedLLM]:
    """A ``Factory.llm`` that gives the scripted fake (with ``llm.n_ctx`` as its window)."""
    respond = answer if callable(answer) else (lambda _prompt: answer)

    def llm(self: Factory) -> ScriptedLLM:
        if "llm" not in self._cache:
            self._cache["llm"] = ScriptedLLM(
                responses=[respond] * 20, n_ctx=self.settings.llm.n_ctx
            )
        return self._cache["llm"]

    return llm


def _like_a_small_model(prompt: str) -> str:
    """The issue's run: the sub-answer is "Paul Verhoeven" (cut to "Paul" at one token), and
    the synthesis repeats the sub-answer it was given (its prompt's last word)."""
    if "combine the answers to sub-questions" in prompt:
        return f"{prompt.split()[-1]}\nExplanation: from the sub-answer."
    return "Paul Verhoeven"


ENV = {"KGQA_PROFILE_NAMER": "rules", "KGQA_RETRIEVAL_HOPS": "1"}


def _env(settings: Settings) -> dict[str, str]:
    s = settings.neo4j
    return {
        "NEO4J_URI": s.effective_uri,
        "NEO4J_USERNAME": s.user,
        "NEO4J_PASSWORD": s.password or "",
        "NEO4J_DATABASE": s.database,
        "KGQA_DATA_DIR": str(settings.data_dir),
        **ENV,
    }


def _load(settings: Settings, driver: neo4j.Driver, capsys: pytest.CaptureFixture[str]) -> None:
    """Wipe the graph, then load and index the KB above through the CLI."""
    from conftest import wipe_database

    wipe_database(driver, settings.neo4j.database)
    shutil.rmtree(settings.data_dir, ignore_errors=True)
    path = settings.data_dir.parent / "kb.txt"
    path.write_text("\n".join(KB) + "\n", encoding="utf-8")
    assert run_cli(["load", "--no-index", str(path)], capsys)[0] == 0
    assert run_cli(["index"], capsys)[0] == 0


@pytest.fixture(scope="module")
def _module_kb(neo4j_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    from dataclasses import replace

    from kgqa.settings import IndexSettings

    folder = tmp_path_factory.mktemp("faults")
    return replace(neo4j_settings, data_dir=folder / "data", index=IndexSettings())


_LOADED: dict[str, object] = {}


@pytest.fixture
def kb(
    _module_kb: Settings,
    neo4j_driver: neo4j.Driver,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Settings:
    """The small KB above, loaded and indexed through the CLI (hashing embedder, rules namer)
    once for the module, and again only after a test changed it; the LLM answers "Paul
    Verhoeven" to every prompt."""
    settings = _module_kb
    for var, value in _env(settings).items():
        monkeypatch.setenv(var, value)
    monkeypatch.setattr(Factory, "embedder", lambda self: HashingEmbedder(dim=64))
    monkeypatch.setattr(Factory, "llm", _llm("Paul Verhoeven\nExplanation: he directed it."))
    if not settings.index_dir.is_dir() or _LOADED.get("state") != snapshot(neo4j_driver, settings):
        _load(settings, neo4j_driver, capsys)
        _LOADED["state"] = snapshot(neo4j_driver, settings)
    return settings


def one_error_line(err: str) -> str:
    """The one line a failed command printed (progress notes before it aside)."""
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("kgqa: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def snapshot(driver: neo4j.Driver, settings: Settings) -> tuple[object, ...]:
    """The graph (nodes, every triple id, the indexes) and the index files, by content."""
    records, _, _ = driver.execute_query(
        "MATCH (n) OPTIONAL MATCH (n)-[r]->() "
        "RETURN count(DISTINCT n) AS nodes, collect(r.id) AS ids",
        database_=settings.neo4j.database,
    )
    indexes, _, _ = driver.execute_query(
        "SHOW INDEXES YIELD name RETURN collect(name) AS names", database_=settings.neo4j.database
    )
    # Graph mode keeps the step phrasings' vectors beside the index: a cache, not the index.
    files = {
        str(p.relative_to(settings.index_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(settings.index_dir.rglob("*"))
        if p.is_file() and not p.name.startswith("phrases-")
    }
    names = sorted(indexes[0]["names"])
    return records[0]["nodes"], sorted(records[0]["ids"]), names, files


@pytest.fixture
def unchanged(kb: Settings, neo4j_driver: neo4j.Driver) -> Iterator[None]:
    """Asserts, after the test, that the graph and the index are as the fixture left them."""
    before = snapshot(neo4j_driver, kb)
    yield
    assert snapshot(neo4j_driver, kb) == before


# -- items 1 and 3 (fixed before this tier: tests/unit/test_service.py, tests/integration/
# test_load.py), reproduced here as the issue wrote them ----------------------------------------
@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["who directed it?", "--entity", "No Such Person"], "entity 'No Such Person' is not"),
        (["who directed [heat]?"], "entity 'heat' is not in the graph; did you mean: 'Heat'"),
        (["who directed [heat]?", "--mode", "kgrag"], "did you mean: 'Heat'"),
    ],
)
def test_an_unknown_or_miscased_entity_is_one_line_with_suggestions(
    kb: Settings, unchanged: None, capsys, args: list[str], hint: str
) -> None:
    from kgqa.errors import EntityNotFound

    code, _, err = run_cli(["ask", *args], capsys)
    assert code == EntityNotFound.exit_code and hint in one_error_line(err)


def test_an_oversized_value_is_refused_with_its_line_before_any_write(
    kb: Settings, unchanged: None, tmp_path: Path, capsys
) -> None:
    from kgqa.errors import KBFormatError

    path = tmp_path / "long.txt"
    rows = [f"movie {i}|directed_by|person {i}" for i in range(30)]
    rows.insert(12, "movie x|directed_by|" + "x" * 200_000)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    code, _, err = run_cli(["load", "--no-index", "--batch-size", "5", str(path)], capsys)
    line = one_error_line(err)
    assert code == KBFormatError.exit_code and "line 13: object is too long" in line
    assert "nothing was written" in line


# -- item 2: prompts that cannot fit, a URI kgqa cannot use ---------------------------------
def test_a_huge_top_k_is_cut_to_fit_the_context_window_and_says_so(
    kb: Settings, unchanged: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("KGQA_LLM_N_CTX", "600")
    question = "who directed [Heat]?"
    code, out, err = run_cli(["ask", question, "--mode", "kaping", "--top-k", "100000"], capsys)
    assert code == 0, err
    assert "Traceback" not in err
    assert "of the top-K triples were left out of the answer prompts to fit" in out
    code, out, _ = run_cli(
        ["ask", question, "--mode", "kaping", "--top-k", "100000", "--json"], capsys
    )
    data = json.loads(out)
    kept = len(data["sub_questions"][0]["triple_ids"])
    assert data["parameters"]["triples_cut_to_fit"] == TAGS + 3 - kept > 0
    assert 0 < kept < TAGS


@pytest.mark.parametrize("mode", ["kaping", "kgrag", "graph"])
def test_a_context_window_too_small_for_any_prompt_is_one_line(
    kb: Settings, unchanged: None, monkeypatch: pytest.MonkeyPatch, capsys, mode: str
) -> None:
    monkeypatch.setenv("KGQA_LLM_N_CTX", "64")
    code, _, err = run_cli(["ask", "who directed [Heat]?", "--mode", mode], capsys)
    line = one_error_line(err)
    assert code == PromptTooLong.exit_code
    assert line.startswith("kgqa: error: ") and "context window of 64 tokens" in line
    assert "KGQA_LLM_N_CTX" in line


@pytest.mark.parametrize(
    "uri", ["http://127.0.0.1:7474", "https://user:secret@db.example:7473", "127.0.0.1:7687"]
)
def test_a_uri_scheme_kgqa_cannot_use_is_one_line_naming_those_it_can(
    kb: Settings, unchanged: None, monkeypatch: pytest.MonkeyPatch, capsys, uri: str
) -> None:
    monkeypatch.setenv("NEO4J_URI", uri)
    code, _, err = run_cli(["stats"], capsys)
    line = one_error_line(err)
    assert code == ConfigError.exit_code
    assert "bolt://, bolt+s://, bolt+ssc://, neo4j://, neo4j+s://, neo4j+ssc://" in line
    assert "secret" not in line


# -- item 4: output cut at the token limit --------------------------------------------------
def test_an_answer_cut_at_the_token_limit_is_marked_and_not_grounded(
    kb: Settings, unchanged: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("KGQA_LLM_MAX_TOKENS", "1")
    monkeypatch.setattr(Factory, "llm", _llm(_like_a_small_model))
    code, out, err = run_cli(["ask", "who directed [Heat]?", "--mode", "kgrag"], capsys)
    assert code == 0, err
    assert "the LLM stopped at its token limit (llm.max_tokens 1)" in out
    assert "answer: Paul  [cut at the token limit]" in out
    code, out, _ = run_cli(["ask", "who directed [Heat]?", "--mode", "kgrag", "--json"], capsys)
    data = json.loads(out)
    assert data["answer"] == "Paul"  # what the model wrote: shown, but not taken for a node
    assert data["answer_entities"] == []
    assert "answer" in data["cut_stages"] and data["sub_questions"][0]["cut"]


def test_an_answer_that_ends_within_the_limit_is_grounded(
    kb: Settings, unchanged: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    # "Paul" written in full (not cut) is the node Paul: what the cut answer must not become.
    monkeypatch.setattr(Factory, "llm", _llm("Paul"))
    code, out, _ = run_cli(["ask", "who directed [Heat]?", "--mode", "kgrag", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["cut_stages"] == []
    assert [e["name"] for e in data["answer_entities"]] == ["Paul"]


def test_eval_records_and_counts_answers_cut_at_the_token_limit(
    kb: Settings, unchanged: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Factory, "llm", _llm(_like_a_small_model))
    from dataclasses import replace

    from kgqa.eval.datasets import Question
    from kgqa.eval.runner import EvalConfig, read_records, run_eval
    from kgqa.settings import LLMSettings

    settings = replace(kb, llm=LLMSettings(max_tokens=1), retrieval=replace(kb.retrieval, hops=1))
    questions = [Question(1, "who directed [Heat]", ("Heat",), ("Michael Mann",), hops=1)]
    config = EvalConfig("faults", 1, None, None, 0, "kgrag", 1, 30, "scripted")
    with Factory(settings) as f:
        result = run_eval(f.pipeline("kgrag"), questions, tmp_path / "run", config, progress=False)
    (record,) = read_records(tmp_path / "run")
    assert record["status"] == "ok" and "answer" in record["answer"]["cut_stages"]
    assert record["answer"]["answer_entities"] == []
    assert any(c["cut"] for c in record["costs"])
    assert result.aggregate["cut_answers"] == 1
    assert result.aggregate["cut_by_stage"]["answer"] == 1


# -- item 5: misleading messages --------------------------------------------------------------
@pytest.mark.parametrize("command", ["ask", "retrieve"])
def test_empty_brackets_are_one_clear_line(
    kb: Settings, unchanged: None, capsys, command: str
) -> None:
    code, _, err = run_cli([command, "who directed []?"], capsys)
    line = one_error_line(err)
    assert code == BadQuestion.exit_code
    assert line.startswith("kgqa: error: the question has empty brackets []")


def test_a_question_of_more_than_1024_distinct_words_is_linked(
    kb: Settings, unchanged: None, capsys
) -> None:
    filler = " ".join(f"word{i}" for i in range(1100))
    code, out, err = run_cli(["ask", f"{filler} who directed Heat?", "--mode", "kaping"], capsys)
    assert code == 0, err
    assert "linked entity: Heat" in err and "full-text index" not in err


def test_without_the_full_text_index_linking_says_so(
    kb: Settings, neo4j_driver: neo4j.Driver, capsys
) -> None:
    neo4j_driver.execute_query("DROP INDEX entity_names IF EXISTS", database_=kb.neo4j.database)
    code, _, err = run_cli(["ask", "who directed Heat?", "--mode", "kaping"], capsys)
    assert code != 0
    assert "entity linking needs the full-text index" in one_error_line(err)


# -- item 6: small ones ---------------------------------------------------------------------------
def test_index_status_exits_non_zero_when_it_reports_a_problem(
    kb: Settings, capsys, tmp_path: Path
) -> None:
    assert run_cli(["index", "--status"], capsys)[0] == 0
    extra = tmp_path / "more.txt"
    extra.write_text("Thief|directed_by|Michael Mann\n", encoding="utf-8")
    assert run_cli(["load", "--no-index", str(extra)], capsys)[0] == 0
    code, out, _ = run_cli(["index", "--status"], capsys)
    assert code == IndexMismatch.exit_code and "out of date" in out
    code, out, _ = run_cli(["index", "--status", "--json"], capsys)
    assert code == IndexMismatch.exit_code and json.loads(out)["missing"] == 1
    for path in kb.index_dir.iterdir():  # a damaged index: reported as a problem
        if path.suffix == ".json":
            path.write_text("{not json", encoding="utf-8")
    code, out, _ = run_cli(["index", "--status"], capsys)
    assert code == IndexMismatch.exit_code and "problem:" in out


def test_the_local_servers_folders_are_private(neo4j_server) -> None:
    for folder in (neo4j_server.data_dir, neo4j_server.logs_dir, neo4j_server.conf_dir):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_the_local_server_loads_no_apoc_procedure(neo4j_server, neo4j_driver) -> None:
    # kgqa's Cypher calls none (tests/integration/test_cypher_explain.py runs every file).
    records, _, _ = neo4j_driver.execute_query(
        "SHOW PROCEDURES YIELD name WHERE name STARTS WITH 'apoc.' RETURN count(*) AS n"
    )
    assert records[0]["n"] == 0
    records, _, _ = neo4j_driver.execute_query(
        "SHOW FUNCTIONS YIELD name WHERE name STARTS WITH 'apoc.' RETURN count(*) AS n"
    )
    assert records[0]["n"] == 0
    # The built-in procedures kgqa does call are still there.
    records, _, _ = neo4j_driver.execute_query(
        "SHOW PROCEDURES YIELD name WHERE name = 'db.index.fulltext.queryNodes' "
        "RETURN count(*) AS n"
    )
    assert records[0]["n"] == 1


# -- faults that already behaved when issue 13 was filed, kept behaving -----------------------
def test_a_truncated_vector_index_is_one_line_with_the_fix(
    kb: Settings, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    vectors = kb.index_dir / "index.faiss"
    data = vectors.read_bytes()
    vectors.write_bytes(data[: len(data) // 2])
    code, _, err = run_cli(["ask", "who directed [Heat]?", "--mode", "kaping"], capsys)
    line = one_error_line(err)
    assert code == IndexMismatch.exit_code and "kgqa index" in line
    code, _, _ = run_cli(["index", "--status"], capsys)
    assert code == IndexMismatch.exit_code


@pytest.mark.parametrize("content", [None, b"GGUF\x03\x00\x00\x00 not a model", b"PK\x03\x04"])
def test_a_missing_or_corrupt_gguf_is_one_line(
    kb: Settings,
    unchanged: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys,
    content: bytes | None,
) -> None:
    model = tmp_path / "model.gguf"
    if content is not None:
        model.write_bytes(content)
    monkeypatch.setattr(Factory, "llm", REAL_LLM)
    monkeypatch.setenv("KGQA_LLM_MODEL", str(model))
    code, _, err = run_cli(["ask", "who directed [Heat]?", "--mode", "llm"], capsys)
    line = one_error_line(err)
    assert code in (ModelNotFound.exit_code, ConfigError.exit_code)
    assert str(model) in line or "model" in line


def test_a_wrong_password_is_one_line_that_does_not_print_it(
    kb: Settings, unchanged: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("NEO4J_PASSWORD", "not-the-password-42")
    code, _, err = run_cli(["stats"], capsys)
    line = one_error_line(err)
    assert code == GraphUnavailable.exit_code and "NEO4J_PASSWORD" in line
    assert "not-the-password-42" not in line


def test_the_server_refuses_unauthenticated_access(kb: Settings, unchanged: None) -> None:
    with (
        neo4j.GraphDatabase.driver(kb.neo4j.effective_uri, auth=None) as driver,
        pytest.raises(neo4j.exceptions.Neo4jError) as e,
    ):
        driver.execute_query("MATCH (n) RETURN count(n)", database_=kb.neo4j.database)
    assert "auth" in str(e.value).lower() or "unauthorized" in str(e.value).lower()


def test_kill_9_during_a_load_then_loading_again_completes_it(
    kb: Settings, neo4j_driver: neo4j.Driver, tmp_path: Path
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import wipe_database

    wipe_database(neo4j_driver, kb.neo4j.database)
    rows = [f"film {i}|directed_by|director {i % 997}" for i in range(15_000)]
    path = tmp_path / "big.txt"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    kgqa = str(Path(sys.executable).with_name("kgqa"))  # the installed command, as a user runs it
    cmd = [kgqa, "load", "--no-index", "--batch-size", "250", str(path)]
    env = {**os.environ, **_env(kb)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def relationships() -> int:
        records, _, _ = neo4j_driver.execute_query(
            "MATCH ()-[r]->() RETURN count(r) AS n", database_=kb.neo4j.database
        )
        return int(records[0]["n"])

    deadline = time.monotonic() + 120
    while relationships() == 0 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the load finished before it could be killed: use more rows"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = relationships()
    assert 0 < partial < len(rows)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    records, _, _ = neo4j_driver.execute_query(
        "MATCH ()-[r]->() RETURN count(r) AS n, count(DISTINCT r.id) AS ids",
        database_=kb.neo4j.database,
    )
    assert records[0]["n"] == records[0]["ids"] == len(rows)
