"""How every Neo4j driver failure becomes one kgqa error: the one translation that every read
and write of the graph store goes through."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kgqa.errors import GraphUnavailable, KGQAError


@contextmanager
def graph_errors(database: str, what: str = "") -> Iterator[None]:
    """Driver failures become one-line kgqa errors (chained, so ``-v`` can still show them).

    A lost or refused connection is :class:`GraphUnavailable` (fatal for an eval run: every
    following question would fail too); a query Neo4j rejects is a plain :class:`KGQAError`
    naming the query (``what``) and Neo4j's code."""
    from neo4j.exceptions import (
        AuthError,
        DriverError,
        Neo4jError,
        ServiceUnavailable,
        SessionExpired,
    )

    where = f" ({what})" if what else ""
    try:
        yield
    except AuthError as e:
        raise GraphUnavailable("Neo4j refused the credentials; fix NEO4J_PASSWORD") from e
    except (ServiceUnavailable, SessionExpired) as e:
        raise GraphUnavailable(
            f"lost the connection to Neo4j{where}; is it running? (`kgqa neo4j status`, NEO4J_URI)"
        ) from e
    except Neo4jError as e:
        if (e.code or "").startswith("Neo.TransientError.General.DatabaseUnavailable"):
            raise GraphUnavailable(f"Neo4j database {database!r} is unavailable{where}") from e
        raise KGQAError(f"Neo4j ({database}) failed{where}: {e.code}: {e.message}") from e
    except DriverError as e:
        raise GraphUnavailable(f"Neo4j driver error{where}: {e}") from e
    except OSError as e:
        raise GraphUnavailable(f"lost the connection to Neo4j{where}: {e}") from e
