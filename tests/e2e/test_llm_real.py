"""The real llama.cpp backend with the small packaged model (slow: loads ~0.5 GB)."""

import contextlib
import json

import pytest

from kgqa.llm.base import GenParams
from kgqa.llm.llama_cpp import LlamaCppLLM
from kgqa.llm.models import resolve_model
from kgqa.settings import load_settings

pytestmark = pytest.mark.slow

SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"relation": {"type": "string", "enum": ["directed_by", "has_genre"]}},
        "required": ["relation"],
    }
)


@contextlib.contextmanager
def evaluated_batches(llm):
    """The size of each batch llama.cpp evaluates (prompt and generated tokens) meanwhile."""
    llm.warm_up()
    sizes: list[int] = []
    model = llm._llama
    real_eval = model.eval

    def recording_eval(tokens):
        sizes.append(len(tokens))
        return real_eval(tokens)

    model.eval = recording_eval
    try:
        yield sizes
    finally:
        del model.eval


@pytest.fixture(scope="module")
def llm():
    path = resolve_model("qwen2.5-coder-0.5b", load_settings(env={}).cache_dir)
    return LlamaCppLLM(path, name="qwen2.5-coder-0.5b", n_ctx=1024)


def test_grammar_constrained_completion_is_valid_and_seeded(llm):
    messages = [{"role": "user", "content": "Which relation answers 'who directed Heat'? JSON."}]
    params = GenParams(max_tokens=24, seed=1, grammar=SCHEMA)
    first = llm.complete(messages, params)
    assert json.loads(first.text)["relation"] in ("directed_by", "has_genre")
    assert first.prompt_tokens > 5 and 0 < first.completion_tokens <= 24 and first.seconds > 0
    assert llm.load_seconds and llm.load_seconds > 0
    # Same seed, same prompt: same output (the eval's reproducibility rests on this).
    assert llm.complete(messages, params).text == first.text


def test_gbnf_choice_and_stop_string(llm):
    gbnf = 'root ::= "Action" | "Crime" | "Drama"'
    out = llm.complete(
        [{"role": "user", "content": "Genre of the movie Heat (1995)? One word."}],
        GenParams(max_tokens=8, grammar=gbnf),
    )
    assert out.text in ("Action", "Crime", "Drama")
    raw = llm.complete(
        "Q: What is 2+2? A: 4. Q: What is 3+3?", GenParams(max_tokens=16, stop=("?",))
    )
    assert "?" not in raw.text


def test_pinned_prefix_gives_the_same_output_with_far_fewer_tokens_evaluated(llm):
    from kgqa.pipeline.pipeline import decomposition_turns
    from kgqa.profile.files import profile_without_graph
    from kgqa.prompts import PromptTemplate

    # The prompt as kgrag renders it for a KB: its in-context examples are the profile's (here
    # the packaged MetaQA one, whose questions are about movies like the one asked).
    examples = decomposition_turns(profile_without_graph("metaqa"))
    decompose = PromptTemplate("decompose", examples=examples)
    prompt = decompose.render(question="who directed the movies written by [Nora Ephron]")
    other = [{"role": "user", "content": "Say hello."}]
    # Greedy: with sampling, a prompt evaluated in other batch splits may flip a near-tie.
    params = GenParams(max_tokens=40, temperature=0.0, stop=("<END>",))
    llm.complete(other, GenParams(max_tokens=2))
    # Count the tokens llama.cpp evaluates (prompt and generated), not seconds: what pinning
    # saves is the ~500-token prefix, whatever else the machine is doing.
    with evaluated_batches(llm) as evaluated:
        plain = llm.complete(prompt, params)
        plain_tokens = sum(evaluated)
        llm.pin_prefix(decompose.render(question=""))
        llm.complete(other, GenParams(max_tokens=2))  # evaluates the pin, then another prompt
        evaluated.clear()
        pinned = llm.complete(prompt, params)
        pinned_tokens = sum(evaluated)
    assert pinned.text == plain.text
    assert plain.prompt_tokens > 400
    # Only the question's own tokens and the generated ones are evaluated again.
    assert pinned_tokens < plain_tokens - 300, (pinned_tokens, plain_tokens)


def test_a_prompt_continuing_a_pin_is_evaluated_after_the_pin_whatever_came_before(llm):
    """The question's tokens are one batch after the pin on every call, also right after a
    call that shared more of them (llama.cpp's numbers depend on the batching): a server's
    answer does not turn on which question it answered before."""
    from kgqa.pipeline.pipeline import decomposition_turns
    from kgqa.profile.files import profile_without_graph
    from kgqa.prompts import PromptTemplate

    decompose = PromptTemplate(
        "decompose", examples=decomposition_turns(profile_without_graph("metaqa"))
    )
    llm.warm_up()
    llm.pin_prefix(decompose.render(question=""))
    params = GenParams(max_tokens=24, temperature=0.0, stop=("<END>",))
    first = decompose.render(question="what movies did the director of [Heat] direct")
    alike = decompose.render(question="what movies did the writer of [Heat] write")
    runs = []
    other = [{"role": "user", "content": "Say hello."}]
    with evaluated_batches(llm) as batches:
        for before in (other, first, alike):  # after another prompt, the same one, a like one
            llm.complete(before, params)
            batches.clear()
            runs.append((llm.complete(first, params).text, batches[0]))
    texts, prompt_batches = zip(*runs, strict=True)
    assert len(set(texts)) == 1
    assert len(set(prompt_batches)) == 1 and prompt_batches[0] > 10, prompt_batches


def test_a_pinned_prefix_kept_on_disk_is_loaded_by_the_next_process(tmp_path):
    """A second LlamaCppLLM (as a new process would have) loads the evaluated pin from
    ``state_dir`` instead of evaluating it, and answers exactly as the first one did."""
    from kgqa.pipeline.pipeline import decomposition_turns
    from kgqa.profile.files import profile_without_graph
    from kgqa.prompts import PromptTemplate

    path = resolve_model("qwen2.5-coder-0.5b", load_settings(env={}).cache_dir)
    decompose = PromptTemplate(
        "decompose", examples=decomposition_turns(profile_without_graph("metaqa"))
    )
    prompt = decompose.render(question="who directed the movies written by [Nora Ephron]")
    params = GenParams(max_tokens=40, temperature=0.0, stop=("<END>",))
    runs = []
    for _ in range(2):
        llm = LlamaCppLLM(path, name="qwen2.5-coder-0.5b", n_ctx=1024, state_dir=tmp_path)
        llm.pin_prefix(decompose.render(question=""))
        llm.warm_up()
        evaluated: list[int] = []
        real_eval = llm._llama.eval

        def counting_eval(tokens, real_eval=real_eval, evaluated=evaluated):
            evaluated.append(len(tokens))
            return real_eval(tokens)

        llm._llama.eval = counting_eval
        text = llm.complete(prompt, params).text
        runs.append((text, sum(evaluated), llm.pins_evaluated, llm.pins_loaded))
    (first_text, first_tokens, *first_pins), (second_text, second_tokens, *second_pins) = runs
    assert first_pins == [1, 0] and second_pins == [0, 1]
    assert len(list(tmp_path.glob("*.state"))) == 1
    assert second_text == first_text
    # The second process evaluated the question and the answer only, not the ~500-token pin.
    assert second_tokens < first_tokens - 300, (second_tokens, first_tokens)


@pytest.mark.parametrize(
    "gbnf",
    [
        # what the model would write anyway: its best token is allowed at every step
        'root ::= "Crime" | "Drama" | "Action"',
        # steps held to a vocabulary, as graph mode's decomposition is
        'root ::= "1. " ("directors" | "genres" | "writers") " of [Heat]" ("\\n2. movies of '
        'those " ("directors" | "writers"))? "\\n<END>"',
        # text the model would not write: its best token is refused, and at the first step
        # no token among its best few is allowed (every token is checked)
        'root ::= "\\u00e6\\u00f8" [0-9] [0-9] "zq" ("x" | "y")',
    ],
)
def test_greedy_decoding_checks_the_grammar_on_its_choice_first_with_the_same_tokens(llm, gbnf):
    messages = [{"role": "user", "content": "Who directed the movie Heat (1995)? Be brief."}]
    params = GenParams(max_tokens=32, temperature=0.0, grammar=gbnf)
    llm.grammar_check_first = False
    whole_chain = llm.complete(messages, params)
    llm.grammar_check_first = True
    refused, whole = llm.grammar_refused, llm.grammar_whole
    checked = llm.complete(messages, params)
    assert checked.text == whole_chain.text
    assert checked.completion_tokens == whole_chain.completion_tokens
    if gbnf.startswith('root ::= "\\u00e6'):
        assert checked.text[:2] == "\u00e6\u00f8" and checked.text[-1] in "xy"
        assert llm.grammar_refused > refused and llm.grammar_whole > whole
