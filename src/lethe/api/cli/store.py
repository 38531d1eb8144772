"""The store and the server: ``lethe init``, ``migrate``, ``replay``, ``reindex``, ``serve``."""

from __future__ import annotations

import asyncio
import os
from typing import Literal, TypedDict

import typer
from rich.markup import escape

from lethe.api.bootstrap import require_initialised
from lethe.api.cli.common import ExitCode, console, container, err, fail, load_settings, print_json
from lethe.api.first_admin import mint_first_admin
from lethe.api.store_lease import exclusive_lease, shared_lease
from lethe.vault.custody.subject_aliases import rederive
from lethe.vault.errors import StoreNotReady, VaultError
from lethe.vault.model import Role
from lethe.vault.store import replay as replaying
from lethe.vault.store.db import make_engine
from lethe.vault.store.schema import schema_state, upgrade

app = typer.Typer()


@app.command()
def init() -> None:
    """Create the data dir, database schema, local keystore and master key (only what is missing)."""
    with container(create=True) as c:
        if c.created:
            for line in c.created:
                console.print(f"created {line}")
        else:
            console.print("already initialised; nothing created")
        console.print(f"database: {c.settings.db_url.split('@')[-1]} (schema at the latest migration)")


@app.command()
def migrate() -> None:
    """Upgrade the store's schema to this release (stop every Lethe process and back up first)."""
    settings = load_settings()
    try:
        require_initialised(settings)
        engine = make_engine(settings.db_url)
        before = schema_state(engine)
        if not before.known:
            raise StoreNotReady(f"the store's schema {before.current} is newer than this Lethe's")
        if before.up_to_date:
            console.print(f"schema already at {before.head}")
        else:
            with exclusive_lease(settings.data_dir, engine, "a migration"):
                upgrade(engine)
            console.print(f"schema upgraded from {before.current or 'nothing'} to {before.head}")
        engine.dispose()
    except VaultError as exc:
        fail(str(exc), ExitCode.SETUP)
    with container() as c:  # after 0028, needs the KMS and the pepper (custody.subject_aliases)
        added = rederive(c.uow, c.keyring, c.pseudonyms)
    console.print(f"subject references re-derived: {added} earlier spelling(s) folded into their subject")


@app.command()
def replay(
    check: bool = typer.Option(False, "--check", help="Rebuild into a scratch copy and report differences."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Rebuild the projection from the event log (or check it and the search index without changing them)."""
    with container() as c:
        if check:
            report = replaying.check(c.uow.engine, index=c.reindex.check())
        else:
            report = replaying.rebuild(c.uow.engine)
    if as_json:
        print_json(
            {"events": report.events, "identical": report.identical, "differences": report.differences}
        )
    elif check:
        console.print(f"replayed {report.events} events into a scratch copy")
        for d in report.differences:
            console.print(f"[red]difference[/red] {d}")
        console.print("[green]identical[/green]" if report.identical else "[red]projection differs[/red]")
    else:
        console.print(f"rebuilt the projection from {report.events} events")
    if check and not report.identical:
        raise typer.Exit(ExitCode.REFUSED)


@app.command()
def reindex(as_json: bool = typer.Option(False, "--json")) -> None:
    """Rebuild every derived index (the search index) from the log and the keys; safe beside `lethe serve`."""
    with container() as c, shared_lease(c.settings.data_dir, c.uow.engine, "a reindex"):
        report = c.reindex.rebuild()
    recipe = report.recipe
    if as_json:
        print_json(
            {
                "index": "search_index",
                "entries": report.entries,
                "unreadable": report.unreadable,
                "built_at": report.built_at,
                "vectors": report.vectors,
                "embedding_model": report.embedding_model,
                "embedding_dims": report.embedding_dims,
                "recipe": {
                    "tokeniser": recipe.tokeniser,
                    "tokeniser_version": recipe.tokeniser_version,
                    "term_hash": recipe.term_hash,
                    "term_hash_version": recipe.term_hash_version,
                },
            }
        )
        return
    console.print(
        f"rebuilt search_index: {report.entries} entries ({report.unreadable} memories left out: key gone); "
        f"recipe {recipe.tokeniser} v{recipe.tokeniser_version}, "
        f"{recipe.term_hash} v{recipe.term_hash_version}; "
        + (
            f"{report.vectors} sealed vectors of {report.embedding_model}"
            if report.embedding_model
            else c.semantic
        )
    )


class _ServeOptions(TypedDict):
    """What ``serve`` gives uvicorn, in one process or per worker (checked against its signature)."""

    host: str
    port: int
    access_log: bool
    log_config: None
    server_header: bool
    loop: Literal["uvloop"]
    http: type[asyncio.Protocol]  # httptools, with a deadline for headers


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on (loopback by default)."),
    port: int = typer.Option(8080, "--port", min=1, max=65535),
    workers: int | None = typer.Option(
        None,
        "--workers",
        min=1,
        max=64,
        help="Server processes on this port, each running the background work "
        "[default: LETHE_WORKERS, else one per usable core].",
        show_default=False,
    ),
) -> None:
    """Run the HTTP API on an initialised store (`lethe init`); the first run mints an admin token
    (its secret written to `admin-token` in the data dir). One worker process per core this
    process may run on by default: on 2 cores, two workers served 597 searches/s (p99 61 ms)
    where one served 270 (p99 120 ms), wrk at 16 connections (docs/operations.md)."""
    # One BLAS thread per server process (set before numpy loads; an operator's own value
    # wins). A search's products are small (scope x 256), and BLAS threads that spin for
    # work on the cores the other workers need halved search throughput: 2 workers, 16
    # clients, 2,000-item scopes: 50 -> 93 searches/s with one thread.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    import uvicorn  # the web stack loads only for the command that serves it

    from lethe.api.http.header_timeout import serving_protocol
    from lethe.api.http.listeners import WORKER_HEALTHCHECK_SECONDS, serve_workers, usable_cores
    from lethe.api.http.logging import configure_logging
    from lethe.api.server.app import create_app

    settings = load_settings()
    workers = workers or settings.workers or usable_cores()
    shown = f"[{host}]" if ":" in host else host
    if settings.public_url is None:  # the MCP resource URL clients are told to use
        settings = settings.model_copy(update={"public_url": f"http://{shown}:{port}"})
    with container() as c:
        for line in c.created:
            console.print(f"created {line}")
        tokens = c.tokens
        try:
            first = mint_first_admin(tokens, settings.bootstrap_tenant, settings.data_dir)
        except OSError as exc:
            fail(str(exc), ExitCode.SETUP)
        if first is not None:
            for line in first.lines():
                typer.echo(line)
        elif "bootstrap_tenant" in settings.model_fields_set and not tokens.any_with_role(
            Role.ADMIN, settings.bootstrap_tenant
        ):
            tenant = escape(settings.bootstrap_tenant)
            err.print(
                f"[yellow]warning:[/yellow] LETHE_BOOTSTRAP_TENANT={tenant} is ignored: the admin token "
                "is minted on the first start only, and this store has one. Mint one with "
                f"`lethe token create --tenant {tenant} --role admin`."
            )
    base = f"http://{shown}:{port}"
    typer.echo(f"console: {base}/console  ·  verify a certificate: {base}/verify")
    typer.echo(f"OpenAPI docs: {base}/docs")
    configure_logging(settings.log_level)
    options: _ServeOptions = {
        "host": host,
        "port": port,
        "access_log": False,  # uvicorn's access line holds raw paths and query strings
        "log_config": None,
        "server_header": False,
        # C event loop and HTTP parser (both wheels are dependencies): about 10 % more searches
        # per second on two nodes than asyncio's loop and h11 (docs/operations.md). The
        # parser's protocol closes a connection whose request headers are late.
        "loop": "uvloop",
        "http": serving_protocol(settings.header_read_timeout_seconds),
    }
    if workers == 1:  # this process serves (each of N workers tunes itself in the app factory)
        from lethe.api.http import allocator

        allocator.tune()
        uvicorn.run(create_app(settings), **options)
        return
    # Each worker process builds its own app from the environment (uvicorn imports the
    # factory by name); the public URL computed here travels with it.
    os.environ["LETHE_PUBLIC_URL"] = str(settings.public_url)
    config = uvicorn.Config(
        "lethe.api.server.app:create_app_from_environment",
        factory=True,
        workers=workers,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,  # a slow start is no hang (listeners.py)
        **options,
    )
    try:
        serve_workers(config)  # a listening socket per worker (api/http/listeners.py)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}", ExitCode.SETUP)
