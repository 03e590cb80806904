"""The LLM interface values and the scripted fake the other unit tests rely on."""

import pytest

from kgqa.llm.base import GenParams
from kgqa.llm.fake import ScriptedLLM

pytestmark = pytest.mark.unit


def test_gen_params_defaults_are_the_papers_table_2():
    p = GenParams()
    assert (p.max_tokens, p.temperature, p.top_k, p.min_p) == (256, 0.3, 40, 0.05)
    assert p.with_(stop=["?"]).stop == ("?",)
    with pytest.raises(AttributeError):
        p.max_tokens = 3  # type: ignore[misc]


def test_scripted_llm_applies_stop_strings_and_records_prompts():
    llm = ScriptedLLM().enqueue(["Which movies? more", lambda text: text.upper()])
    out = llm.complete("q1", GenParams(stop=("?",)))
    assert out.text == "Which movies"
    assert llm.complete([{"role": "user", "content": "hi"}], GenParams()).text == "[USER] HI"
    assert [c.text for c in llm.calls] == ["q1", "[user] hi"]
    with pytest.raises(AssertionError, match="no response left"):
        llm.complete("again", GenParams())


def test_scripted_llm_reports_length_when_max_tokens_cuts():
    out = ScriptedLLM().enqueue(["a b c d"]).complete("p", GenParams(max_tokens=2))
    assert (out.text, out.finish_reason) == ("a b", "length")
