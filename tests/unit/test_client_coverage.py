"""The client has a method for every route the server serves, named like the route.

``ROUTE_ROLES`` names every ``/v1`` route (the app refuses to start otherwise), so a new
endpoint that the client lacks fails here, naming the method to add to
``lethe.client.operations`` (one ``@operation`` function).
"""

from __future__ import annotations

from lethe.api.http.auth import ROUTE_ROLES
from lethe.client import AsyncLetheClient, LetheClient
from lethe.client.calls import operation
from lethe.client.operations import Operations

UNAUTHENTICATED = {"healthz", "readyz"}


def client_operations() -> set[str]:
    return {name for name, value in vars(Operations).items() if isinstance(value, operation)}


def test_every_route_has_a_client_method_of_its_name() -> None:
    missing = sorted(set(ROUTE_ROLES) - client_operations())
    assert missing == [], f"add an @operation to lethe.client.operations for: {missing}"


def test_the_client_has_no_method_for_a_route_that_is_gone() -> None:
    assert client_operations() - UNAUTHENTICATED == set(ROUTE_ROLES)


def test_both_clients_expose_every_operation() -> None:
    for name in client_operations():
        assert callable(getattr(LetheClient("http://x", "t"), name))
        assert callable(getattr(AsyncLetheClient("http://x", "t"), name))
