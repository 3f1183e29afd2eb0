"""The ASGI application: the routes (GET only), the security headers, and the errors as clear 4xx and 5xx.

Everything a page shows of a spec or a name goes through Jinja's autoescaping, and the Content-Security-Policy
lets a page load nothing but itself (no script at all; inline styles for the report's own and its figures').
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from layerbench.errors import LayerbenchError
from layerbench.serve.pages import Pages
from layerbench.serve.query import BadRequest, NotFound
from layerbench.serve.site import Site
from layerbench.serve.source import Source

CSP = (
    "default-src 'self'; script-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]
log = logging.getLogger("layerbench.serve")


class SecurityHeaders:
    """Every response, errors included, carries HEADERS."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(source: Source) -> ASGIApp:
    pages = Pages(Site(source))
    routes = [
        Route("/", pages.runs),
        Route("/api/runs", pages.runs_api),
        Route("/runs/{run_id}", pages.run),
        Route("/api/runs/{run_id}", pages.run_api),
        Route("/compare", pages.compare),
        Route("/api/compare", pages.compare_api),
        Route("/history", pages.history),
        Route("/api/history", pages.history_api),
    ]  # a Route's methods default to GET (and HEAD): anything else is a 405
    site = pages.site
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        BadRequest: _error(site, 400),
        NotFound: _error(site, 404),
        HTTPException: _http_error(site),
        LayerbenchError: _error(site, 500),
        Exception: _internal(site),
    }
    return SecurityHeaders(Starlette(routes=routes, exception_handlers=handlers))  # outside: a 500 has them too


def _error(site: Site, status: int) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(request: Request, exc: Exception) -> Response:
        return _said(site, request, status, str(exc))

    return handle


def _http_error(site: Site) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        what = {404: f"no page at {request.url.path}: the runs page is at /", 405: "this server only reads: GET only"}
        return _said(site, request, exc.status_code, what.get(exc.status_code, str(exc.detail)), exc.headers)

    return handle


def _internal(site: Site) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(request: Request, exc: Exception) -> Response:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)  # the traceback: the log's
        return _said(site, request, 500, f"the server failed ({type(exc).__name__}): its log says where")

    return handle


def _said(site: Site, request: Request, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """The error as JSON under /api/, else as a page; never a traceback."""
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message, "status": status}, status, headers)
    return HTMLResponse(site.render("error.html.j2", status=status, message=message), status, headers)
