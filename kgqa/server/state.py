"""What the server holds for its lifetime: one factory (driver, embedder, LLM, index, profile,
built once at start-up), each mode's pipeline built once per (hops, top_k), the answer cache
and the one worker that answers questions in order."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kgqa.errors import GraphUnavailable, IndexMismatch, KGQAError
from kgqa.server.runner import Job, Runner

if TYPE_CHECKING:
    from kgqa.cache import AnswerCache
    from kgqa.factory import Factory
    from kgqa.server.schema import AskRequest
    from kgqa.service import AskResult, Pipelines
    from kgqa.types import Triple

# Pipelines kept for request parameters other than the settings' (hops x top_k).
KEPT_PIPELINE_SETS = 8
# The page's graph: answer entities whose support is drawn, and triples at most.
SHOWN_ANSWERS = 20
SHOWN_TRIPLES = 200


def _triple_json(t: Triple) -> dict[str, Any]:
    return {
        "id": str(t.id),
        "subject": t.subject,
        "relation": t.relation,
        "object": t.object,
        "text": t.verbalize(),
    }


class ServerState:
    def __init__(self, factory: Factory, cache: AnswerCache | None = None):
        s = factory.settings
        self.factory = factory
        self.settings = s
        self.cache = cache
        self.runner = Runner(s.server.queue_size, s.server.request_timeout)
        self.loaded: dict[str, str] = {}
        self._pipelines: OrderedDict[tuple[int, int], tuple[Factory, Pipelines]] = OrderedDict()
        # The worker and the request threads (cache look-ups) both ask for pipelines.
        self._lock = threading.Lock()

    # -- start-up --------------------------------------------------------------------------
    def warm_up(self, modes: tuple[str, ...] = ("graph",)) -> None:
        """Connect, load the models and build ``modes``' pipelines now, so that the first
        question does not pay for them (and a broken set-up fails at start-up, in one line)."""
        f = self.factory
        f.graph()
        embedder = f.question_embedder()  # loaded
        self.loaded["embedder"] = str(getattr(embedder, "name", type(embedder).__name__))
        llm = f.llm()
        warm = getattr(llm, "warm_up", None)
        if warm is not None:
            warm()
        self.loaded["llm"] = str(getattr(llm, "name", type(llm).__name__))
        for mode in modes:
            self.pipelines(None, None)[1].get(mode)

    # -- Neo4j -----------------------------------------------------------------------------
    def require_neo4j(self) -> None:
        """:class:`GraphUnavailable` at once when Neo4j does not answer. The store's reads
        retry a lost connection for about a minute (the driver's managed transactions): right
        for a blip mid-question, wrong for a request that arrives while Neo4j is down, which
        gets its 503 from this probe in milliseconds instead."""
        driver = self.factory.driver()
        if driver is None:  # a graph that is not Neo4j (tests, benchmarks in memory)
            return
        import neo4j

        try:
            driver.verify_connectivity()
        except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError, OSError) as e:
            n = self.settings.neo4j
            where = (
                "NEO4J_URI" if n.uri else "neo4j.bolt_port (is the server up? `kgqa neo4j start`)"
            )
            raise GraphUnavailable(
                f"Neo4j is not reachable at {n.effective_uri}; check {where}"
            ) from e

    # -- answering -------------------------------------------------------------------------
    def pipelines(self, hops: int | None, top_k: int | None) -> tuple[Factory, Pipelines]:
        """The factory and pipelines for these request parameters (the settings' when
        ``None``); other values share the one factory's driver and models."""
        r = self.settings.retrieval
        key = (hops or r.hops, top_k or r.top_k)
        with self._lock:
            return self._pipelines_for(key, (r.hops, r.top_k))

    def _pipelines_for(
        self, key: tuple[int, int], default: tuple[int, int]
    ) -> tuple[Factory, Pipelines]:
        from kgqa.service import Pipelines

        if key not in self._pipelines:
            if key == default:
                factory = self.factory
            else:
                settings = self.settings.with_overrides(
                    {"retrieval.hops": key[0], "retrieval.top_k": key[1]}
                )
                factory = self.factory.sharing(settings)
            self._pipelines[key] = (factory, Pipelines(factory))
            while len(self._pipelines) > KEPT_PIPELINE_SETS:
                oldest = next(k for k in self._pipelines if k != default)
                del self._pipelines[oldest]
        self._pipelines.move_to_end(key)
        return self._pipelines[key]

    def cached(self, req: AskRequest) -> AskResult | None:
        """The cached answer for ``req``, if any (no LLM: served without queueing); the topic
        entities are linked and checked first, so an unknown one is a 404 before anything is
        queued or streamed."""
        from kgqa.service import cached

        self.require_neo4j()
        factory, _ = self.pipelines(req.hops, req.top_k)
        cache = self.cache if req.cache and not req.save else None
        return cached(
            factory, cache, req.question, entities=req.topic(), mode=req.mode, check=req.check
        )

    def answer(
        self, req: AskRequest, job: Job, emit: Callable[[str, dict[str, Any]], object] | None
    ) -> dict[str, Any]:
        """Answer ``req`` on the worker (:meth:`Runner.submit`); the answer document."""
        from kgqa.progress import Observer
        from kgqa.service import ask

        self.require_neo4j()  # it may have gone while the request waited
        factory, pipelines = self.pipelines(req.hops, req.top_k)
        observer = Observer(emit or (lambda _e, _d: None), job.check)
        result = ask(
            factory,
            req.question,
            entities=req.topic(),
            mode=req.mode,
            check=req.check,
            save=req.save,
            cache=self.cache if req.cache else None,
            observer=observer,
            pipelines=pipelines,
        )
        doc = result.to_json()
        if emit is not None:
            emit("evidence", self.evidence(doc))
        return doc

    def retrieve(
        self, question: str, entities: list[str], hops: int | None, top_k: int | None
    ) -> dict[str, Any]:
        """``kgqa retrieve --json`` (on the worker: it embeds the question)."""
        from kgqa.answers import topic_names
        from kgqa.document import retrieval_document

        self.require_neo4j()
        factory, _ = self.pipelines(hops, top_k)
        r = factory.settings.retrieval
        names = topic_names(question, entities)
        if not names:
            raise KGQAError(
                "no topic entity: pass entity=NAME or write it in [brackets] in the question"
            )
        factory.graph().require_entities(names)
        retriever = factory.retriever()
        candidates = retriever.candidates(names, r.hops)
        top = retriever.top_k(question, candidates, r.top_k)
        return retrieval_document(question, names, r.hops, candidates, top)

    # -- the page's graph --------------------------------------------------------------------
    def evidence(self, doc: dict[str, Any]) -> dict[str, Any]:
        """The answer's evidence as a graph for the page (the ``evidence`` event): the support
        triples of the answer entities (the first :data:`SHOWN_ANSWERS`) and, when none has
        any, the evidence triples, each with subject, relation and object, and every triple id
        as a string (63-bit ids do not survive a JavaScript number)."""
        answers = doc["answer_entities"][:SHOWN_ANSWERS]
        ids = [int(i) for a in answers for i in a["support"]]
        if not ids:
            ids = [int(i) for s in doc["sub_questions"] for i in s["triple_ids"]]
        ids = list(dict.fromkeys(ids))[:SHOWN_TRIPLES]
        triples = self.factory.graph().triples_by_ids(ids)
        return {
            "topic": list(doc["entities"]),
            "answers": [
                {
                    "name": a["name"],
                    "node_id": a["node_id"],
                    "support": [str(i) for i in a["support"]],
                }
                for a in answers
            ],
            "triples": [_triple_json(t) for t in triples],
            "more_answers": max(0, len(doc["answer_entities"]) - len(answers)),
        }

    def neighbours(self, entity: str, limit: int) -> dict[str, Any]:
        """The triples touching ``entity`` (at most ``limit``; read-only): a click on a node
        of the page's graph."""
        self.require_neo4j()
        graph = self.factory.graph()
        graph.require_entities([entity])
        edges = graph.frontier_edges([entity], limit=limit + 1)
        triples = list({e.triple.id: e.triple for e in edges}.values())
        return {
            "entity": entity,
            "triples": [_triple_json(t) for t in triples[:limit]],
            "more": len(triples) > limit,
        }

    def info(self) -> dict[str, Any]:
        """What the page needs to know about this server."""
        from kgqa import __version__
        from kgqa.graph.inspect import browser_url
        from kgqa.modes import MODES

        n = self.settings.neo4j
        return {
            "version": __version__,
            "modes": list(MODES),
            "default_mode": "graph",
            # The local server's Browser; an external Neo4j (NEO4J_URI) has its own.
            "browser_url": browser_url(n.http_port) if n.managed else None,
        }

    # -- reads -----------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        self.require_neo4j()
        graph = self.factory.graph().stats().to_dict()
        out: dict[str, Any] = {
            "graph": graph,
            "index": self._index(graph["triple_ids"]),
            "queue": {
                "pending": self.runner.pending,
                "queue_size": self.runner.queue_size,
                "request_timeout": self.runner.timeout,
            },
            "models": dict(self.loaded),
        }
        if self.cache is not None:
            out["cache"] = {
                "dir": str(self.cache.folder),
                "entries": len(self.cache),
                "bytes": self.cache.volume(),
                "size_limit_bytes": self.cache.size_limit,
            }
        return out

    def run(self, run_id: str) -> dict[str, Any]:
        from kgqa.graph.inspect import run_cypher
        from kgqa.server.errors import NotFound

        self.require_neo4j()
        try:
            run = self.factory.graph().get_run(run_id)
        except ValueError as e:
            raise NotFound(f"run id {run_id!r} is not a UUID") from e
        if run is None:
            raise NotFound(f"no saved run {run_id!r} (runs are saved with save=true)")
        run["browser_cypher"] = run_cypher(run["run_id"])
        return run

    def _index(self, graph_triples: int | None) -> dict[str, Any]:
        """The vector index against the graph and the KB profile, from the manifest alone
        (the index itself is not read): problem ``None`` when consistent."""
        from kgqa.cache.keys import kb_identity
        from kgqa.index.faiss_index import MANIFEST_FILE, Manifest, check_compatible

        folder = self.settings.index_dir
        out: dict[str, Any] = {"dir": str(folder), "problem": None}
        path = folder / MANIFEST_FILE
        if not path.is_file():
            out["problem"] = f"no vector index in {folder}; run `kgqa index`"
            return out
        try:
            manifest = Manifest.read(path)
            check_compatible(manifest, self.factory.embedder(), folder)
        except IndexMismatch as e:
            out["problem"] = str(e)
            return out
        out |= {"vectors": manifest.count, "model": manifest.model, "fingerprint": None}
        out["fingerprint"] = manifest.kb_fingerprint
        profile = kb_identity(self.settings)["profile"]
        if graph_triples is not None and graph_triples != manifest.count:
            out["problem"] = (
                f"the index holds {manifest.count:,} vectors, the graph {graph_triples:,} "
                "triples; run `kgqa index`"
            )
        elif profile is not None and profile != manifest.kb_fingerprint:
            out["problem"] = (
                "the KB profile was derived for another KB than the index's; run `kgqa index`"
            )
        return out

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Neo4j reachable, models loaded, index consistent: ``(all well, details)``."""
        neo4j: dict[str, Any] = {"ok": True, "message": None}
        triples = None
        try:
            self.require_neo4j()
            triples = self.factory.graph().stats().triple_ids
        except GraphUnavailable as e:
            neo4j = {"ok": False, "message": str(e)}
        index = self._index(triples) if neo4j["ok"] else {"problem": "not checked: no graph"}
        models = {"ok": {"llm", "embedder"} <= set(self.loaded), **self.loaded}
        ok = bool(neo4j["ok"] and models["ok"] and index["problem"] is None)
        return ok, {
            "status": "ok" if ok else "unavailable",
            "neo4j": neo4j,
            "models": models,
            "index": index,
        }

    def close(self) -> None:
        self.runner.close()
        if self.cache is not None:
            self.cache.close()
