"""``kgqa serve``: the HTTP API over :func:`kgqa.service.ask` (docs/server.md).

:mod:`~kgqa.server.app` (routes, the token and body guard), :mod:`~kgqa.server.state` (the
factory, pipelines and cache held for the server's lifetime), :mod:`~kgqa.server.runner` (one
worker, a bounded queue, deadlines), :mod:`~kgqa.server.schema` (the documents),
:mod:`~kgqa.server.errors` (errors as JSON with a status). FastAPI is imported only here, never
by the CLI's start-up.
"""
