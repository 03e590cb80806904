"""The Cypher that opens an answer in Neo4j Browser: only integers reach the text, the cap is
said, and the grounded evidence is chosen (answer entities' support first)."""

from __future__ import annotations

import json
import re
import uuid

import click
import numpy as np
import pytest
from click.testing import CliRunner

from kgqa.commands import ask_cmd
from kgqa.errors import KGQAError
from kgqa.graph.inspect import (
    MAX_BROWSER_TRIPLES,
    NO_EVIDENCE,
    answer_cypher,
    browser_cypher,
    browser_url,
    grounded_ids,
    run_cypher,
)
from kgqa.graph.queries import query
from kgqa.types import Answer, AnswerEntity, ScoredTriple, SubAnswer, Triple

pytestmark = pytest.mark.unit

ID_LIST = re.compile(r"WHERE r\.id IN \[([^\]]*)\]")


def ids_in(cypher: str) -> list[int]:
    match = ID_LIST.search(cypher)
    assert match, cypher
    return [int(x) for x in match.group(1).split(", ")]


def test_exact_query_for_a_few_ids() -> None:
    assert browser_cypher([3, 1, 2]) == (
        "// 3 triples\nMATCH p=()-[r]->()\nWHERE r.id IN [3, 1, 2]\nRETURN p"
    )


def test_one_id_and_duplicates_and_large_and_negative_ids() -> None:
    big = 2**63 - 1
    text = browser_cypher([big, big, -5, 7])
    assert text.startswith("// 3 triples\n")
    assert ids_in(text) == [big, -5, 7]
    assert browser_cypher([42]).startswith("// 1 triple\n")


def test_numpy_integers_render_as_plain_ints() -> None:
    text = browser_cypher(list(np.array([10, 20], dtype=np.int64)))
    assert ids_in(text) == [10, 20]
    assert "int64" not in text and "np." not in text


@pytest.mark.parametrize(
    "bad",
    [
        "1] RETURN 1 UNION MATCH (n) DETACH DELETE n //",
        "12",
        1.0,
        3.7,
        None,
        b"1",
        2**63,
        -(2**63) - 1,
    ],
)
def test_anything_but_a_64_bit_integer_is_refused(bad: object) -> None:
    with pytest.raises(KGQAError):
        browser_cypher([1, bad])  # type: ignore[list-item]


def test_only_digits_commas_and_minus_signs_in_the_id_list() -> None:
    text = browser_cypher([5, -6, 2**62])
    assert re.fullmatch(r"[-0-9, ]+", ID_LIST.search(text).group(1))  # type: ignore[union-attr]
    # No parameter: Browser cannot be given one with a pasted query.
    assert "$" not in text


def test_cap_keeps_the_first_ids_and_says_so() -> None:
    ids = list(range(1000, 1000 + 1234))
    text = browser_cypher(ids)
    assert (
        text.splitlines()[0]
        == f"// {MAX_BROWSER_TRIPLES} of 1234 triples (the first 200 are shown)"
    )
    assert ids_in(text) == ids[:MAX_BROWSER_TRIPLES]
    assert ids_in(browser_cypher(ids, limit=3)) == ids[:3]
    # Exactly at the cap: nothing was left out, so nothing is said about a cap.
    assert browser_cypher(ids[:MAX_BROWSER_TRIPLES]).splitlines()[0] == "// 200 triples"


def test_bad_limit_is_refused() -> None:
    with pytest.raises(KGQAError, match="limit"):
        browser_cypher([1], limit=0)


def test_empty_evidence_is_a_comment_that_says_so() -> None:
    assert browser_cypher([]) == NO_EVIDENCE
    assert NO_EVIDENCE.startswith("//") and "\n" not in NO_EVIDENCE
    assert "no evidence" in NO_EVIDENCE


def _answer(**kwargs: object) -> Answer:
    fields: dict[str, object] = {"question": "q?", "entities_in": ("X",), "mode": "kgrag"}
    return Answer(**(fields | {"text": "A"} | kwargs))  # type: ignore[arg-type]


def test_answer_cypher_prefers_the_answer_entities_support() -> None:
    answer = _answer(
        answer_entities=(
            AnswerEntity("B", support=(30, 10)),
            AnswerEntity("C", support=(10, 20)),
        ),
        evidence_ids=(99, 98, 10),
    )
    assert grounded_ids(answer) == [30, 10, 20]
    assert ids_in(answer_cypher(answer)) == [30, 10, 20]


def test_answer_cypher_falls_back_to_evidence_ids() -> None:
    t = Triple(5, "s", "r", "o")
    answer = _answer(
        answer_entities=(AnswerEntity("B"),),  # an entity without support triples
        sub_answers=(SubAnswer(1, "q", "q", "a", evidence=(ScoredTriple(t, 1.0),)),),
        evidence_ids=(5, 6),
    )
    assert grounded_ids(answer) == [5, 6]
    assert ids_in(answer_cypher(answer)) == [5, 6]


def test_answer_without_any_evidence() -> None:
    assert answer_cypher(_answer(mode="llm")) == NO_EVIDENCE


def test_run_cypher_renders_only_a_uuid() -> None:
    run_id = str(uuid.uuid4())
    text = run_cypher(run_id.upper())
    assert f"{{run_id: '{run_id}'}}" in text
    assert "$" not in text
    for bad in ["x' }) DETACH DELETE n //", "", "1234"]:
        with pytest.raises(KGQAError, match="run id"):
            run_cypher(bad)


def test_browser_url() -> None:
    assert browser_url() == "http://127.0.0.1:7474/browser/"
    assert browser_url(17474) == "http://127.0.0.1:17474/browser/"


def test_run_queries_touch_only_the_kgqa_label_and_types() -> None:
    for name in ("save_run", "runs_list", "runs_delete"):
        text = query(name)
        assert "$" in text
        labels = set(re.findall(r"\(\w*:(\w+)", text))
        assert labels <= {"KgqaRun", "Entity"}, (name, labels)
        types = set(re.findall(r"\[\w*:(\w+)", text))
        assert all(t.startswith("KGQA_") for t in types), (name, types)
    # The KB's entities are only ever MATCHed by the run queries, never created or changed.
    assert not re.search(r"(CREATE|MERGE)\s*\(\w*:Entity", query("save_run"))


# -- `kgqa ask` wiring: the Browser section, "browser_cypher" in --json, --save ------------------


def _ask_cli(monkeypatch: pytest.MonkeyPatch, answer: Answer) -> tuple[click.Group, list]:
    saved: list = []

    from ask_fakes import AskFactoryBase, FakeGraph

    class FakeStore(FakeGraph):
        def save_run(self, a: Answer, *, answer_names=()) -> str:
            saved.append((self.database, a, list(answer_names)))
            return "3c1f6756-1b91-4694-b068-7cd4036cf794"

    class FakeFactory(AskFactoryBase):
        graph_store = FakeStore()

        def pipeline(self, mode: str) -> object:
            class P:
                def answer(self, question: str, entities: list[str]) -> Answer:
                    return answer

            return P()

    monkeypatch.setattr("kgqa.factory.Factory", FakeFactory)
    return click.Group(commands={"ask": ask_cmd.ask}), saved


def _support_answer() -> Answer:
    return _answer(
        text="Action, Drama\nbecause",
        answer_entities=(AnswerEntity("Action", support=(11, 12)),),
        evidence_ids=(11, 12, 13),
    )


def test_ask_text_ends_with_the_browser_cypher(monkeypatch: pytest.MonkeyPatch) -> None:
    group, saved = _ask_cli(monkeypatch, _support_answer())
    result = CliRunner().invoke(group, ["ask", "q? [X]"], obj={})
    assert result.exit_code == 0, result.output
    title = "Cypher for Neo4j Browser (paste into http://127.0.0.1:7474/browser/):"
    head, _, tail = result.output.partition(title + "\n")
    assert head and tail.splitlines() == ["  " + ln for ln in browser_cypher([11, 12]).splitlines()]
    assert saved == []  # nothing is written without --save


def test_ask_json_has_browser_cypher_and_save_records_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer = _support_answer()
    group, saved = _ask_cli(monkeypatch, answer)
    result = CliRunner().invoke(group, ["ask", "q? [X]", "--json", "--save"], obj={})
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["browser_cypher"] == browser_cypher([11, 12])
    run_id = "3c1f6756-1b91-4694-b068-7cd4036cf794"
    assert data["saved_run"] == {"run_id": run_id, "browser_cypher": run_cypher(run_id)}
    [(database, a, names)] = saved
    assert (database, a, names) == ("neo4j", answer, ["Action", "Drama"])


def test_ask_without_evidence_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    group, _ = _ask_cli(monkeypatch, _answer(mode="llm", text="Action"))
    result = CliRunner().invoke(group, ["ask", "q?", "--mode", "llm"], obj={})
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith(NO_EVIDENCE)
