"""The answer cache: what its key depends on (and what it must not), the store on disk (a
bound on its size, a damaged folder read as empty), and `ask` through the service and the
CLI: a second ask is a hit, marked, with no LLM call; save and --no-cache answer afresh."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgqa.cache import AnswerCache, answer_key, normalize_question
from kgqa.cache.keys import code_identity, kb_identity, model_identity
from kgqa.service import AskResult, ask
from kgqa.settings import LLMSettings, Settings
from kgqa.types import Answer, AnswerEntity

pytestmark = pytest.mark.unit

Q = "who is married to [Ada]?"


def _key(settings: Settings, question: str = Q, entities=("Ada",), mode="graph", check=False):
    return answer_key(settings, question, list(entities), mode, check=check)


def test_the_question_is_normalised_for_whitespace_only() -> None:
    assert normalize_question("  who is\tmarried \n to [Ada]? ") == Q
    # case is part of the question: entity names are case-sensitive
    assert normalize_question("Who is married to [ADA]?") != Q


def test_the_key_changes_with_everything_an_answer_depends_on(settings: Settings) -> None:
    base = _key(settings)
    assert _key(settings, "who  is married to [Ada]? ") == base  # whitespace only
    changed = {
        "question": _key(settings, "who is the spouse of [Ada]?"),
        "entities": _key(settings, entities=("Ada", "Ben")),
        "entity order": _key(settings, entities=("Ben",)),
        "mode": _key(settings, mode="kgrag"),
        "check": _key(settings, check=True),
        "hops": _key(settings.with_overrides({"retrieval.hops": 2})),
        "top_k": _key(settings.with_overrides({"retrieval.top_k": 5})),
        "hub_cap": _key(settings.with_overrides({"retrieval.hub_cap": 7})),
        "temperature": _key(settings.with_overrides({"llm.temperature": 0.0})),
        "seed": _key(settings.with_overrides({"llm.seed": 1})),
        "max_tokens": _key(settings.with_overrides({"llm.max_tokens": 64})),
        "n_ctx": _key(settings.with_overrides({"llm.n_ctx": 2048})),
        "model": _key(settings.with_overrides({"llm.model": "qwen2.5-coder-0.5b"})),
        "backend": _key(settings.with_overrides({"llm.backend": "openai"})),
        "graph mode": _key(settings.with_overrides({"graph.grammar": False})),
        "embedder": _key(settings.with_overrides({"embed.model": "other"})),
        "profile file": _key(settings.with_overrides({"profile.file": "metaqa"})),
        "namer": _key(settings.with_overrides({"profile.namer": "rules"})),
        "database": _key(settings.with_overrides({"neo4j.database": "other"})),
        "entity labels": _key(settings.with_overrides({"neo4j.entity_labels": "Person"})),
    }
    assert base not in changed.values()
    assert len(set(changed.values())) == len(changed)


def test_the_key_ignores_secrets_and_settings_that_change_no_answer(settings: Settings) -> None:
    base = _key(settings)
    same = [
        settings.with_overrides({"llm.api_key": "sk-1"}),
        settings.with_overrides({"llm.timeout": 5.0, "llm.max_retries": 0}),
        settings.with_overrides({"embed.batch_size": 8}),
        settings.with_overrides({"neo4j.password": "other-password"}),
        settings.with_overrides({"server.port": 9000, "answer_cache.size_mb": 1}),
    ]
    assert all(_key(s) == base for s in same)


def test_the_kb_fingerprints_and_file_contents_are_in_the_key(
    settings: Settings, tmp_path: Path
) -> None:
    base = _key(settings)
    folder = settings.index_dir
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"kb_fingerprint": "sha256:aaa"}))
    assert kb_identity(settings) == {"index": "sha256:aaa", "profile": None}
    with_index = _key(settings)
    (folder / "profile.json").write_text(json.dumps({"fingerprint": "sha256:aaa"}))
    with_profile = _key(settings)
    # `kgqa load` of another KB writes both files again
    (folder / "manifest.json").write_text(json.dumps({"kb_fingerprint": "sha256:bbbb"}))
    (folder / "profile.json").write_text(json.dumps({"fingerprint": "sha256:bbbb"}))
    reloaded = _key(settings)
    assert len({base, with_index, with_profile, reloaded}) == 4
    # a prompts folder and a profile file given by path: their contents
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "answer.txt").write_text("one")
    custom = settings.with_overrides({"llm.prompts_dir": str(prompts)})
    first = _key(custom)
    (prompts / "answer.txt").write_text("two")
    assert _key(custom) != first
    profile = tmp_path / "p.toml"
    profile.write_text("a = 1")
    with_file = settings.with_overrides({"profile.file": str(profile)})
    first = _key(with_file)
    profile.write_text("a = 2")
    assert _key(with_file) != first


def test_the_model_identity_is_its_pinned_sha256_or_the_file(tmp_path: Path) -> None:
    known = Settings(llm=LLMSettings(model="qwen2.5-coder-1.5b"))
    assert model_identity(known).startswith("sha256:cc324af0")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 10)
    own = Settings(llm=LLMSettings(model=str(gguf)))
    first = model_identity(own)
    assert str(gguf) in first and ":14:" in first
    gguf.write_bytes(b"GGUF" + b"\0" * 11)
    assert model_identity(own) != first
    served = Settings(llm=LLMSettings(backend="openai", base_url="http://h/v1", model="m"))
    assert model_identity(served) == "openai:http://h/v1:m"
    assert len(code_identity()) == 64


def _result(text: str = "Ben") -> AskResult:
    answer = Answer(Q, ("Ada",), "graph", text, answer_entities=(AnswerEntity(text, "n:1"),))
    return AskResult(answer, ("Ada",), None, None, None, "MATCH p=() RETURN p")


def test_the_store_round_trips_and_stays_within_its_size(tmp_path: Path) -> None:
    cache = AnswerCache(tmp_path / "c", size_mb=1)
    assert cache.get("k") is None
    stored = cache.put("k", _result())
    got = cache.get("k")
    assert got is not None and got[0] == _result() and got[1] == stored
    assert (tmp_path / "c").stat().st_mode & 0o077 == 0
    # ~3 MB of answers into a 1 MB cache: the oldest are evicted
    for i in range(60):
        cache.put(f"big{i}", _result("x" * 50_000 + str(i)))
    assert cache.volume() < 1.5 * 2**20
    assert cache.get("big59") is not None and cache.get("k") is None
    cache.close()


def test_a_damaged_cache_is_a_miss_with_a_note_not_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "cache.db").write_bytes(b"this is not sqlite" * 100)
    notes: list[str] = []
    cache = AnswerCache(folder, log=notes.append)
    assert cache.get("k") is None
    assert cache.put("k", _result()) is None
    assert notes and all("answer cache" in n and str(folder) in n for n in notes)
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(folder / "cache.db").execute("select 1 from Cache").fetchall()


class _Factory:
    """The service's view of a factory: the people KB in memory, a pipeline that counts."""

    def __init__(self, settings: Settings) -> None:
        from people_kb import store

        self.settings = settings
        self.store = store()
        self.calls = 0

    def graph(self):
        return self.store

    def startup_timings(self) -> dict[str, object]:
        return {"neo4j_connect": 0.0}

    def pipeline(self, mode: str):
        factory = self

        class P:
            def answer(self, question, entities):
                factory.calls += 1
                return Answer(
                    question,
                    tuple(entities),
                    mode,
                    f"Ben (answer {factory.calls})",
                    answer_entities=(AnswerEntity("Ben", "memory:Ben", 1.0, (1,)),),
                )

        return P()


def test_ask_serves_the_second_time_from_the_cache_and_marks_it(
    settings: Settings, tmp_path: Path
) -> None:
    f = _Factory(settings)
    cache = AnswerCache(tmp_path / "c")
    first = ask(f, Q, cache=cache)
    assert f.calls == 1 and first.cache is not None and not first.cache.hit
    again = ask(f, "  who is married to   [Ada]? ", cache=cache)
    assert f.calls == 1 and again.cache is not None and again.cache.hit
    assert again.cache.key == first.cache.key
    doc, hit_doc = first.to_json(), again.to_json()
    assert hit_doc["cache"]["hit"] is True and doc["cache"]["hit"] is False
    assert {k: v for k, v in hit_doc.items() if k != "cache"} == {
        k: v for k, v in doc.items() if k != "cache"
    }
    # the linked entity is the asking's own, the answer the cached one
    linked = ask(f, "who is married to Ada?", cache=cache)
    assert linked.linked == "Ada" and f.calls == 2  # another question text: another key
    assert ask(f, "who is married to Ada?", cache=cache).cache.hit  # type: ignore[union-attr]
    # an unknown entity is still an error, cache or not
    from kgqa.errors import EntityNotFound

    with pytest.raises(EntityNotFound):
        ask(f, "who is married to [ada]?", cache=cache)
    # a run to save is answered afresh; another mode is another key
    saved_calls = f.calls
    ask(f, Q, cache=cache, save=True)
    ask(f, Q, cache=cache, mode="kgrag")
    assert f.calls == saved_calls + 2
    # without a cache nothing is marked
    assert "cache" not in ask(f, Q).to_json()


def test_cli_ask_uses_the_cache_and_no_cache_answers_afresh(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgqa.cli import cli

    made: list[_Factory] = []

    class CliFactory(_Factory):
        def __init__(self, s: Settings, log: object = None, **_: object) -> None:
            super().__init__(s)
            made.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr("kgqa.factory.Factory", CliFactory)
    monkeypatch.setenv("KGQA_ANSWER_CACHE_ENABLED", "true")
    monkeypatch.setenv("KGQA_ANSWER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KGQA_DATA_DIR", str(tmp_path / "data"))

    def run(*args: str):
        return CliRunner().invoke(cli, ["ask", Q, "--json", *args], obj={})

    first = run()
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["cache"]["hit"] is False
    # --json shows the process's start-up beside the stages
    startup = json.loads(first.stdout)["timings"]["startup"]
    assert startup["neo4j_connect"] == 0.0 and startup["process_seconds"] > 0
    second = run()
    assert json.loads(second.stdout)["cache"]["hit"] is True
    assert "answer from the cache" in second.stderr
    fresh = run("--no-cache")
    assert "cache" not in json.loads(fresh.stdout)
    assert [f.calls for f in made] == [1, 0, 1]
    # the text output of a hit is the answer's own
    text = CliRunner().invoke(cli, ["ask", Q], obj={})
    assert text.exit_code == 0 and "Ben (answer 1)" in text.stdout
    # the cache lives where the settings say, never in the working folder
    assert (tmp_path / "cache" / "cache.db").is_file()
