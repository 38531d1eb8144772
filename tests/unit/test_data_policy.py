"""The data policy's detectors: each built-in class, its near misses, and the configuration.

Every case runs twice: through the Hyperscan prefilter and with Python regexes alone, which
must give the same verdicts.
"""

from __future__ import annotations

import json

import pytest

from lethe.api.settings import Settings
from lethe.vault.errors import ForbiddenContent
from lethe.vault.memory.data_policy import BUILT_IN, DataPolicy, luhn_valid, shannon_entropy
from lethe.vault.model import Provenance, SourceType
from tests.conftest import write_cmd

PEM_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "-----END RSA PRIVATE KEY-----"
)
OPENSSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"

FORBIDDEN = [
    # private keys
    (PEM_KEY, "private_key"),
    (OPENSSH_KEY, "private_key"),
    ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "private_key"),
    ("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg", "private_key"),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF", "private_key"),
    # vendor key formats (detect-secrets' denylists)
    ("the deploy key is AKIAIOSFODNN7EXAMPLE", "api_key"),
    ("use ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8 for CI", "api_key"),
    ("gitlab: glpat-" + "x1Y2z3W4v5U6t7S8r9Q0", "api_key"),
    ("slack bot xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "api_key"),
    ("stripe sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "api_key"),
    ("SG." + "a" * 22 + "." + "b" * 43, "api_key"),
    # generic assignments with a high-entropy value
    ('api_key = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"', "api_key"),
    ("CLIENT_SECRET: Zx81kLq0PmN2vB7cR4tY9wE3", "api_key"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9x7Qk2Lm9", "api_key"),
    # passwords
    ("password: hunter2", "password"),
    ('{"db_password": "correct horse battery staple"}', "password"),
    ("PASSWD=Tr0ub4dor&3", "password"),
    ("login with passphrase := letmein", "password"),
    ("my password: s3cr3t! don't share it", "password"),
    ("connect to postgres://admin:s3cretpw@db.example.com:5432/app", "password"),
    # payment cards (Luhn-valid test numbers of several networks and layouts)
    ("card 4111 1111 1111 1111 exp 12/29", "payment_card"),
    ("4111-1111-1111-1111", "payment_card"),
    ("paid with 5500005555555559.", "payment_card"),
    ("amex 3782 822463 10005", "payment_card"),
    ("visa13 4222222222222", "payment_card"),
    ("cards: 4111111111111111,5555555555554444", "payment_card"),
    ("maestro 6759649826438453", "payment_card"),
]

ALLOWED = [
    "Alice prefers tea over coffee",
    "The user mentioned the private key is kept in the HSM, never on disk.",
    "Password: reset it from the self-service portal",
    "password: ${DB_PASSWORD}",
    'password = "<secret>"',
    "passwordless: true",
    "api_key=YOUR_API_KEY_HERE_PLEASE",
    "the api key rotates every 90 days",
    # numbers that are not cards
    "order 4111111111111112 shipped",  # 16 digits, fails Luhn
    "order 1234567890123456 shipped",  # fails Luhn (and no card prefix)
    "ticket 1000000000000008",  # passes Luhn, but no network starts with 1
    "at 1733580000000 ms since the epoch",
    "call +4915112345678 tomorrow",
    "call +44 7911 123456",
    "id 12345678-1234-1234-1234-123456789012",
    "pi is 3.14159265358979323846",
    "total 4111111111111111111111 units",  # a 22-digit number is not a card
    "4111 11 1111 1111 11",  # groups that no card is printed in
    "AKIA is how AWS key ids begin",
]


@pytest.fixture(scope="module", params=[True, False], ids=["hyperscan", "python"])
def policy(request: pytest.FixtureRequest) -> DataPolicy:
    return DataPolicy.build(use_hyperscan=request.param)


@pytest.mark.parametrize(("text", "expected"), FORBIDDEN)
def test_forbidden_text_is_classified(policy: DataPolicy, text: str, expected: str) -> None:
    assert policy.forbidden_class(text) == expected


@pytest.mark.parametrize("text", ALLOWED)
def test_near_misses_pass(policy: DataPolicy, text: str) -> None:
    assert policy.forbidden_class(text) is None


def test_hyperscan_prefilter_is_in_use() -> None:
    """The fast path is the one measured: every built-in rule compiles into the prefilter."""
    prefilter = DataPolicy.build()._compiled()[1]
    assert prefilter is not None and prefilter.always == []


def test_luhn() -> None:
    assert luhn_valid("4111111111111111") and luhn_valid("378282246310005") and luhn_valid("79927398713")
    assert not luhn_valid("4111111111111112") and not luhn_valid("79927398710")


def test_entropy() -> None:
    assert shannon_entropy("aaaa") == 0
    assert shannon_entropy("abcd") == 2


def test_refusal_names_the_class_never_the_text(policy: DataPolicy) -> None:
    with pytest.raises(ForbiddenContent) as caught:
        policy.check(write_cmd("card 4111 1111 1111 1111"))
    err = caught.value
    assert err.forbidden_class == "payment_card" and err.status == 422
    assert err.extensions() == {"forbidden_class": "payment_card"}
    assert "4111" not in err.detail and "4111" not in str(err)


def test_provenance_reference_is_checked(policy: DataPolicy) -> None:
    ref = "https://api.example.com/v1/x?access_token=Zx81kLq0PmN2vB7cR4tY9wE3"
    cmd = write_cmd("fetched the report", provenance=Provenance(SourceType.WEB_PAGE, ref))
    with pytest.raises(ForbiddenContent) as caught:
        policy.check(cmd)
    assert caught.value.forbidden_class == "api_key" and "provenance" in caught.value.detail
    policy.check(
        write_cmd("fetched the report", provenance=Provenance(SourceType.WEB_PAGE, "https://a.example/"))
    )


def test_disabled_class_lets_its_content_through() -> None:
    policy = DataPolicy.build(disabled=["payment_card"])
    assert policy.forbidden_class("4111 1111 1111 1111") is None
    assert policy.forbidden_class(PEM_KEY) == "private_key"
    assert "payment_card" not in policy.classes
    none = DataPolicy.build(disabled=BUILT_IN)
    assert none.classes == () and none.forbidden_class(PEM_KEY) is None


@pytest.mark.parametrize("use_hyperscan", [True, False], ids=["hyperscan", "python"])
def test_configured_patterns_and_identifiers(use_hyperscan: bool) -> None:
    policy = DataPolicy.build(
        patterns={"national_id": r"\b\d{3}-\d{2}-\d{4}\b"},
        identifiers={"named_account": ["ACME-0001", "José Núñez", "+cfo"]},
        use_hyperscan=use_hyperscan,
    )
    assert policy.forbidden_class("ssn 123-45-6789 on file") == "national_id"
    assert policy.forbidden_class("ssn 123-45-67890") is None
    assert policy.forbidden_class("billed to acme-0001 today") == "named_account"
    assert policy.forbidden_class("billed to ACME-00012") is None  # not a whole word
    assert policy.forbidden_class("met JOSE\u0301 NÚÑEZ") == "named_account"  # NFC, any case
    assert policy.forbidden_class("cc +CFO on it") == "named_account"
    assert policy.forbidden_class("4111 1111 1111 1111") == "payment_card"  # built-ins stay on


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"disabled": ["cards"]}, "cannot disable"),
        ({"patterns": {"Bad Name": "x"}}, "class name"),
        ({"patterns": {"payment_card": "x"}}, "built-in"),
        ({"patterns": {"broken": "("}}, "bad pattern"),
        ({"identifiers": {"acct": ["  "]}}, "empty"),
        ({"identifiers": {"acct": []}}, "no identifiers"),
        ({"identifiers": {"acct": "ACME"}}, "list of strings"),
    ],
)
def test_unusable_configuration_is_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DataPolicy.build(**kwargs)


def test_settings_declare_the_policy(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    declared = {"disabled": ["password"], "patterns": {"ticket": r"TCK-\d+"}, "identifiers": {"vip": ["Ada"]}}
    monkeypatch.setenv("LETHE_DATA_POLICY", json.dumps(declared))
    policy = Settings(data_dir=tmp_path).built_data_policy()
    assert policy.forbidden_class("see TCK-42") == "ticket"
    assert policy.forbidden_class("ask Ada") == "vip"
    assert policy.forbidden_class("password: hunter2") is None
    monkeypatch.delenv("LETHE_DATA_POLICY")
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"identifiers": {"vip": ["Grace"]}}))
    monkeypatch.setenv("LETHE_DATA_POLICY_FILE", str(path))
    assert Settings(data_dir=tmp_path).built_data_policy().forbidden_class("ask grace") == "vip"


def test_default_settings_refuse_secrets_and_cards(tmp_path) -> None:
    policy = Settings(data_dir=tmp_path).built_data_policy()
    assert set(policy.classes) == set(BUILT_IN)


def test_unusable_settings_stop_the_start(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("LETHE_DATA_POLICY", json.dumps({"patterns": {"broken": "("}}))
    with pytest.raises(ValueError, match="bad pattern"):
        Settings(data_dir=tmp_path)


def test_the_client_reads_the_class_from_the_problem() -> None:
    import httpx

    from lethe.client.errors import InvalidRequest, problem_error

    body = {"type": "urn:lethe:problem:forbidden-content", "title": "Forbidden content", "status": 422}
    err = problem_error(httpx.Response(422, json={**body, "detail": "d", "forbidden_class": "payment_card"}))
    assert isinstance(err, InvalidRequest) and err.forbidden_class == "payment_card"
    assert problem_error(httpx.Response(422, json={**body, "detail": "d"})).forbidden_class is None
