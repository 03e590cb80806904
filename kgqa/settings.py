"""One ``Settings`` object for the whole system.

Precedence, highest first: CLI overrides > environment (``KGQA_<SECTION>_<FIELD>``, plus the
usual ``NEO4J_URI`` / ``NEO4J_USERNAME`` / ``NEO4J_PASSWORD`` / ``NEO4J_DATABASE`` and the
shortcut ``KGQA_MODEL``) > config file (TOML; ``--config``, ``KGQA_CONFIG``, ``./kgqa.toml`` or
``~/.config/kgqa/config.toml``) > defaults below.

Each section is its own small frozen dataclass. Reading the environment happens in
:func:`load_settings`, never at import time.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, get_type_hints

from kgqa.errors import ConfigError


def _home() -> Path:
    return Path(os.environ.get("HOME", str(Path.home())))


def default_cache_dir() -> Path:
    """Downloads and builds that can be re-made (Neo4j jars, assembled models)."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else _home() / ".cache") / "kgqa"


def default_data_dir() -> Path:
    """State worth keeping (Neo4j's database, the vector index, eval runs)."""
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else _home() / ".local" / "share") / "kgqa"


@dataclass(frozen=True)
class Neo4jSettings:
    # None means "the local server that `kgqa neo4j start` manages"; set NEO4J_URI to use
    # an existing server instead, and then kgqa starts nothing.
    uri: str | None = None
    user: str = "neo4j"
    # None: for the managed server, a random password is generated on first start and kept
    # (mode 600) in the server's data folder; for an external server it must be given.
    password: str | None = None
    database: str = "neo4j"
    version: str = "5.26.19"
    browser_version: str = "5.24.0"
    apoc_version: str = "5.26.19"
    # Where the managed server keeps its database and logs (configurable).
    data_dir: Path | None = None
    bolt_port: int = 7687
    http_port: int = 7474
    heap: str = "1g"
    pagecache: str = "1g"
    start_timeout: float = 120.0
    connect_timeout: float = 10.0
    # Which nodes are the KB's entities and what their names are (kgqa.graph.schema): kgqa's
    # own graphs are (:Entity {name}); for a graph already in Neo4j, e.g. "Person,Movie" (or
    # "*" for every label) and "name,title" (the first property a node has is its name).
    entity_labels: str = "Entity"
    name_properties: str = "name"

    @property
    def managed(self) -> bool:
        return self.uri is None

    @property
    def effective_uri(self) -> str:
        return self.uri or f"bolt://127.0.0.1:{self.bolt_port}"


@dataclass(frozen=True)
class EmbedSettings:
    model: str = "all-MiniLM-L6-v2"
    batch_size: int = 256
    device: str = "cpu"
    # "auto" (bfloat16 on CPUs with AVX-512 BF16, else float32), "float32" or "bfloat16".
    precision: str = "auto"
    # What runs the model. "torch": sentence-transformers; "onnx": ONNX Runtime over a
    # one-time export in <cache_dir>/embed-onnx (float32; no torch in the process); "auto":
    # ONNX Runtime for the few texts of a question (a new process starts ~7 s sooner), torch
    # for indexing (bf16 is 1.7x ONNX's float32 on many texts; docs/benchmarks.md).
    # "static": a static model kgqa distils once from embed.model (kgqa.embed.static):
    # ~100x faster to embed a KB, other vectors (its own index: `kgqa index --rebuild`).
    # "aligned": that static model mapped into embed.model's own space by a least-squares
    # fit on 3,000 of the KB's triples when the index is first built (kept with the index);
    # questions embedded by embed.model itself (kgqa.embed.static.AlignedStaticEmbedder).
    backend: str = "auto"
    # With backend "static" or "aligned": the top `rerank` candidate triples by the index's
    # vectors are scored again by embed.model itself (question and triples) and the top-K
    # taken from that (static at 200: MiniLM's top-30 overlap 0.86 / 0.99 on 1-/2-hop dev
    # questions against 0.53 / 0.85 for static alone; ~0.5 s per top-K; KAPING Hit@1 gains at
    # one hop and loses at two, docs/benchmarks.md). 0: the index's vectors alone.
    rerank: int = 0


@dataclass(frozen=True)
class IndexSettings:
    # None: <data_dir>/index/<database>
    dir: Path | None = None


@dataclass(frozen=True)
class RetrievalSettings:
    hops: int = 3
    top_k: int = 30
    # Do not expand *through* a node with more relationships than this after the first hop
    # (0 disables the cap). Reported in the result, never silent.
    hub_cap: int = 500
    # Stop collecting candidates past this many triples; the result says truncated=True.
    max_candidates: int = 20000
    # How the answer prompt writes the top-K triples: "triples", one per line as the paper
    # does, or "grouped", the triples sharing a subject and relation (or a relation and
    # object) on one line (fewer prompt tokens; docs/benchmarks.md).
    facts: str = "triples"


@dataclass(frozen=True)
class ProfileSettings:
    # A KB profile file that overrides parts of the profile kgqa derives from the graph: a
    # path, or the name of a packaged profile ("metaqa"). None: the derived profile alone.
    file: str | None = None
    # Who names the relations when a profile is derived: "llm" (the configured model, from
    # each relation's name and example triples) or "rules" (from the names alone).
    namer: str = "llm"


@dataclass(frozen=True)
class GraphModeSettings:
    # A one-step question's relation: "llm" (the LLM's own first step under the grammar),
    # "phrases" (embedding similarity between the question and each step's phrasings), or
    # "auto" (phrases when a profile file wrote them by hand, else the LLM; kgqa.graphmode).
    one_step: str = "auto"
    # With "llm": the phrasings' step is taken instead where it scores more than this above
    # the LLM's (embedding dot products; 0.3 measured to change no right answer).
    one_step_margin: float = 0.3
    # Hold the step decomposition to the grammar over the KB's real schema.
    grammar: bool = True
    # Cut a decomposition to the prefix of its steps that reads most like the question (off:
    # measured to help one-hop questions and hurt two-hop ones more; docs/results.md).
    cut_steps: bool = False
    # Let the LLM first name what the question asks for ("answer: clubs"); the step grammar
    # then ends the path where it first reaches that (off: the 1.5B model names the noun the
    # question mentions, "where is the club X plays for" -> clubs; WC2014 1-hop dev right paths
    # 0.90 -> 0.98 but 2-hop 0.84 -> 0.68, MetaQA 2-hop 0.80 -> 0.75; docs/results.md).
    answer_type: bool = False
    # Read what the question asks for from its wording ("which team", "what number",
    # "where") and hold the path's end to the KB's nouns for it (kgqa.graphmode.asked): a
    # noun is taken when its embedding similarity to the wording is at least asked_floor and
    # within asked_margin of the best noun's. Right full paths, dev seed 0
    # (benchmarks/bench_step_paths.py): WC2014 1-hop 0.90 -> 0.94, 2-hop 0.84 -> 1.00 (50
    # each), MetaQA 2-hop 0.80 -> 0.92 (50), 3-hop 0.967 -> 0.967 (30); docs/results.md.
    asked_kind: bool = True
    asked_floor: float = 0.40
    asked_margin: float = 0.06
    # Check the last step of a written path against the question: another step the same
    # frontier really has, to a kind the question asks for (or the same kind), is taken where
    # the path ("the authors of the movies written by [X]", or "who wrote the movies written
    # by [X]") then reads more like the question by more than later_margin (embedding dot
    # products; a written step the frontier lacks gives way to the best real one;
    # kgqa.graphmode.pipeline.GraphPipeline.checked_later; docs/results.md).
    later_check: bool = True
    later_margin: float = 0.02
    # ... and where the question's words name every relation of another such path but not of
    # the written one ("who co-wrote films with [X]": not "actors of those movies"), that path
    # is taken by any reading (kgqa.graphmode.mentions).
    relation_mentions: bool = True
    # Cut a path that, after reaching what the question asks for, goes out and straight back
    # along one relation ("people of [club X]", their countries, the people of those
    # countries) where the shorter path reads more like the question (GraphPipeline.cut_loop);
    # with relation_mentions, a loop before the last step along a relation the question does
    # not name follows the one its other words name instead (GraphPipeline.named_loop).
    cut_loops: bool = True


@dataclass(frozen=True)
class LLMSettings:
    # "llama_cpp" (a GGUF in this process) or "openai" (an OpenAI-compatible server at
    # base_url: llama.cpp's server, Ollama, vLLM, a hosted API; kgqa.llm.openai_compat).
    backend: str = "llama_cpp"
    # llama_cpp: a name from kgqa.llm.models (e.g. "qwen2.5-coder-1.5b") or a path to any
    # GGUF file; openai: the server's name for its model.
    model: str = "qwen2.5-coder-1.5b"
    # The server's API root, e.g. http://127.0.0.1:8080/v1 (openai backend only).
    base_url: str | None = None
    # KGQA_LLM_API_KEY, else OPENAI_API_KEY; never shown (repr, as_dict, run records).
    api_key: str | None = field(default=None, repr=False)
    # Seconds for one server response, and further tries on 429/5xx/refused connections.
    timeout: float = 120.0
    max_retries: int = 3
    n_ctx: int = 4096
    n_threads: int = 0  # 0: all cores
    n_gpu_layers: int = 0
    seed: int = 0
    max_tokens: int = 256
    temperature: float = 0.3
    top_k: int = 40
    min_p: float = 0.05
    # A folder whose *.txt files override the packaged prompts by name.
    prompts_dir: Path | None = None
    # llama_cpp: keep the evaluated pinned prompt prefixes (the decomposition's instructions
    # and examples) in <cache_dir>/prompt-states, so that a new process loads them instead of
    # evaluating ~1,000 tokens again (the newest 8 files are kept; each is the KV cache of one
    # prompt, ~28 MB for the 1.5B model).
    prompt_states: bool = True
    # llama_cpp on CPU: repack the quantised weights into llama.cpp's interleaved layout at
    # load ("on": ~0.6 s more per load on the 1.5B, ~12 % faster prompt and generation), or
    # use them as stored ("off"). "auto": off for a process that answers one question
    # (`kgqa ask`), on for the rest (serve, eval): docs/llm.md.
    cpu_repack: str = "auto"
    # llama_cpp, greedy calls under a grammar (graph mode's decomposition): check the model's
    # own best token against the grammar first, and the whole vocabulary only when it is
    # refused (the same tokens; x1.22 faster decompositions on 2 cores), or (false) hold
    # every token to the grammar at each step as llama-cpp-python does: docs/llm.md.
    grammar_check_first: bool = True


@dataclass(frozen=True)
class ServerSettings:
    """``kgqa serve`` (docs/server.md)."""

    # Loopback only unless told otherwise: the API answers anyone who can reach it.
    host: str = "127.0.0.1"
    port: int = 8000
    # A bearer token every request but /healthz must carry (KGQA_API_TOKEN); never shown.
    api_token: str | None = field(default=None, repr=False)
    # Origins allowed to call the API from a browser, comma-separated ("" : CORS off).
    cors_origins: str = ""
    # Questions waiting behind the one being answered; one more is a 503 with Retry-After.
    queue_size: int = 8
    # Seconds a request may take, waiting in the queue included (504 past it).
    request_timeout: float = 300.0
    # The largest request body accepted, in bytes (413 past it).
    max_body_bytes: int = 65536


@dataclass(frozen=True)
class AnswerCacheSettings:
    """The answer cache of ``kgqa ask`` and ``kgqa serve`` (kgqa.cache)."""

    enabled: bool = True
    # None: <data_dir>/answer-cache
    dir: Path | None = None
    # Answers kept on disk at most, in MB; the least recently used go first.
    size_mb: int = 256


@dataclass(frozen=True)
class Settings:
    neo4j: Neo4jSettings = field(default_factory=Neo4jSettings)
    embed: EmbedSettings = field(default_factory=EmbedSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    profile: ProfileSettings = field(default_factory=ProfileSettings)
    graph: GraphModeSettings = field(default_factory=GraphModeSettings)
    server: ServerSettings = field(default_factory=ServerSettings)
    answer_cache: AnswerCacheSettings = field(default_factory=AnswerCacheSettings)
    cache_dir: Path = field(default_factory=default_cache_dir)
    data_dir: Path = field(default_factory=default_data_dir)

    @property
    def neo4j_data_dir(self) -> Path:
        return self.neo4j.data_dir or self.data_dir / "neo4j"

    @property
    def index_dir(self) -> Path:
        return self.index.dir or self.data_dir / "index" / self.neo4j.database

    @property
    def answer_cache_dir(self) -> Path:
        return self.answer_cache.dir or self.data_dir / "answer-cache"

    def with_overrides(self, overrides: Mapping[str, Any]) -> Settings:
        """Apply dotted overrides such as ``{"retrieval.top_k": 10}``; ``None`` values are ignored."""
        return _apply(self, {k: v for k, v in overrides.items() if v is not None}, "override")


_SECTIONS = (
    "neo4j",
    "embed",
    "index",
    "retrieval",
    "llm",
    "profile",
    "graph",
    "server",
    "answer_cache",
)
# Conventional variable names people already have set for Neo4j.
_ENV_ALIASES = {
    "NEO4J_URI": "neo4j.uri",
    "NEO4J_USERNAME": "neo4j.user",
    "NEO4J_USER": "neo4j.user",
    "NEO4J_PASSWORD": "neo4j.password",
    "NEO4J_DATABASE": "neo4j.database",
    "KGQA_MODEL": "llm.model",
    # The usual variable of OpenAI clients; KGQA_LLM_API_KEY, read after it, wins.
    "OPENAI_API_KEY": "llm.api_key",
    "KGQA_CACHE_DIR": "cache_dir",
    "KGQA_DATA_DIR": "data_dir",
    "KGQA_API_TOKEN": "server.api_token",
}


def _coerce(value: Any, typ: Any, key: str) -> Any:
    text = getattr(typ, "__name__", None) or str(typ).replace("typing.", "")
    try:
        if value is None:
            return None
        if "Path" in text:
            return Path(os.path.expanduser(str(value)))
        if typ is bool or text == "bool":
            if isinstance(value, bool):
                return value
            word = str(value).strip().lower()
            if word in ("1", "true", "yes", "on"):
                return True
            if word in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(word)
        if typ is int or text == "int":
            return int(value)
        if typ is float or text == "float":
            return float(value)
        return str(value)
    except (TypeError, ValueError) as e:
        hint = " (true or false)" if text == "bool" else ""
        raise ConfigError(f"setting {key}: {value!r} is not a valid {text}{hint}") from e


def _apply(settings: Settings, flat: Mapping[str, Any], source: str) -> Settings:
    top_hints = get_type_hints(Settings)
    sections: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    for key, value in flat.items():
        if "." in key:
            section, name = key.split(".", 1)
            if section not in _SECTIONS:
                raise ConfigError(f"{source}: unknown settings section {section!r} in {key!r}")
            obj = getattr(settings, section)
            hints = get_type_hints(type(obj))
            if name not in hints:
                valid = ", ".join(f.name for f in fields(obj))
                raise ConfigError(f"{source}: unknown setting {key!r}; valid: {valid}")
            sections.setdefault(section, {})[name] = _coerce(value, hints[name], key)
        else:
            if key not in top_hints or key in _SECTIONS:
                raise ConfigError(f"{source}: unknown setting {key!r}")
            top[key] = _coerce(value, top_hints[key], key)
    for section, values in sections.items():
        top[section] = replace(getattr(settings, section), **values)
    return replace(settings, **top)


def _flatten_toml(data: Mapping[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            for sub, v in value.items():
                flat[f"{key}.{sub}"] = v
        else:
            flat[key] = value
    return flat


def _config_path(explicit: Path | None, env: Mapping[str, str]) -> Path | None:
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"config file {explicit} does not exist")
        return explicit
    if env.get("KGQA_CONFIG"):
        path = Path(env["KGQA_CONFIG"])
        if not path.is_file():
            raise ConfigError(f"KGQA_CONFIG={path} does not exist")
        return path
    for candidate in (Path.cwd() / "kgqa.toml", _home() / ".config" / "kgqa" / "config.toml"):
        if candidate.is_file():
            return candidate
    return None


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for var, key in _ENV_ALIASES.items():
        if env.get(var):
            flat[key] = env[var]
    for var, value in env.items():
        if not var.startswith("KGQA_") or var in _ENV_ALIASES or var == "KGQA_CONFIG":
            continue
        rest = var[len("KGQA_") :].lower()
        for section in _SECTIONS:
            if rest.startswith(section + "_"):
                flat[f"{section}.{rest[len(section) + 1 :]}"] = value
                break
    return flat


def load_settings(
    overrides: Mapping[str, Any] | None = None,
    config: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Build the settings: defaults < config file < environment < ``overrides``."""
    env = os.environ if env is None else env
    settings = Settings()
    path = _config_path(config, env)
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"cannot read config file {path}: {e}") from e
        settings = _apply(settings, _flatten_toml(data), str(path))
    settings = _apply(settings, _from_env(env), "environment")
    if overrides:
        settings = settings.with_overrides(overrides)
    return settings


def as_dict(settings: Settings) -> dict[str, Any]:
    """A JSON-friendly view, with the password and the API key hidden."""
    data = dataclasses.asdict(settings)
    if data["neo4j"].get("password"):
        data["neo4j"]["password"] = "***"
    if data["llm"].get("api_key"):
        data["llm"]["api_key"] = "***"
    if data["server"].get("api_token"):
        data["server"]["api_token"] = "***"
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in _stringify(data).items()}


def _stringify(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _stringify(v) for k, v in obj.items()}
    if isinstance(obj, Path):
        return str(obj)
    return obj
