"""Prompt templates: placeholder checks at construction, chat roles, overrides."""

import pytest

from kgqa.errors import PromptError
from kgqa.prompts import PLACEHOLDERS, PromptTemplate

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", sorted(PLACEHOLDERS))
def test_every_packaged_prompt_loads_and_ends_with_a_user_turn(name):
    t = PromptTemplate(name)
    messages = t.render(**{k: f"<{k}>" for k in PLACEHOLDERS[name]})
    assert messages[-1]["role"] == "user"
    for key in PLACEHOLDERS[name]:
        assert any(f"<{key}>" in m["content"] for m in messages)
    assert not any("{" + k + "}" in m["content"] for m in messages for k in PLACEHOLDERS[name])


def test_a_template_missing_a_placeholder_fails_at_construction(tmp_path):
    (tmp_path / "answer.txt").write_text("Facts:\n{triples}\nAnswer it.\n")
    with pytest.raises(PromptError, match=r"lacks placeholder\(s\) \{question\}"):
        PromptTemplate("answer", tmp_path)


def test_an_unknown_placeholder_fails_at_construction(tmp_path):
    (tmp_path / "answer_llm.txt").write_text("Q: {question} in {langauge}")
    with pytest.raises(PromptError, match=r"unknown placeholder\(s\) \{langauge\}"):
        PromptTemplate("answer_llm", tmp_path)


def test_override_replaces_the_packaged_prompt_and_roles_split(tmp_path):
    (tmp_path / "answer_llm.txt").write_text(
        "### system\nBe brief. Literal {JSON: 1} braces stay.\n### user\nQ: {question}\n"
    )
    t = PromptTemplate("answer_llm", tmp_path)
    assert t.source == str(tmp_path / "answer_llm.txt")
    assert t.render(question="who {question}?") == [
        {"role": "system", "content": "Be brief. Literal {JSON: 1} braces stay."},
        {"role": "user", "content": "Q: who {question}?"},
    ]


def test_no_role_lines_means_one_user_message_and_last_turn_must_be_user():
    t = PromptTemplate("x", required=frozenset({"a"}), text="say {a}\n")
    assert t.render(a="hi") == [{"role": "user", "content": "say hi"}]
    with pytest.raises(PromptError, match="last message"):
        PromptTemplate("x", required=frozenset({"a"}), text="### user\n{a}\n### assistant\nok")
    with pytest.raises(PromptError, match="needs"):
        t.render(b="x")


def test_unknown_prompt_name_lists_the_known_ones():
    with pytest.raises(PromptError, match="known: answer, answer_llm, decompose"):
        PromptTemplate("nope")
