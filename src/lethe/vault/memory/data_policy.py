"""The deployment's data policy: content the vault refuses to store, by class.

Minimisation before encryption: a secret or a card number sealed under a subject's key is
still held (by every backup, until the subject is forgotten), so a write whose text matches
a forbidden class is refused before anything is keyed or stored. The refusal names the
class, never the content or the matched text.

Built-in classes (all on unless a deployment disables one by name):

- ``private_key``: a private key block's armour (PEM, OpenSSH, PGP, SSH2, PuTTY), as
  detect-secrets' ``PrivateKeyDetector`` finds it.
- ``api_key``: vendors' key and token formats (AWS, GitHub, GitLab, Slack, Stripe, OpenAI,
  SendGrid, Twilio, npm, PyPI, Discord, Telegram, Mailchimp, Azure storage, Square), as
  detect-secrets' detectors find them: those formats change with the vendors, so they come
  from the library rather than from here. Plus a generic assignment (``api_key=…``,
  ``client_secret: …``, ``Bearer …``) whose value is 16+ characters of mixed letters and
  digits with at least 3 bits of entropy per character (a placeholder such as
  ``YOUR_API_KEY`` passes).
- ``password``: a password assignment (``password: …``, ``passwd=…``, ``"password": "…"``)
  and credentials in a URL (``scheme://user:secret@host``, detect-secrets'
  ``BasicAuthDetector``). An unquoted value counts when it holds a digit or ends its
  clause, so prose ("Password: reset it from the portal") passes; placeholders
  (``${VAR}``, ``<secret>``, ``***``) pass.
- ``payment_card``: 13-19 digits, contiguous or grouped by one kind of separator (a space
  or a dash: groups of four, or 4-6-5 / 4-6-4), starting with a card network's prefix and
  passing the Luhn check; digits inside a longer number, a decimal or a ``+`` phone number
  are not candidates.

Configured classes: ``patterns`` (class name → a regular expression, Python syntax) and
``identifiers`` (class name → literal strings, matched case-insensitively as whole words,
after NFC normalisation): national-id formats, named accounts, anything a deployment never
wants held. Class names are ``[a-z][a-z0-9_]*`` (they become metric labels) and never a
built-in's.

What is checked: the content and the provenance's free-text fields (``source_ref``, and
``url``, ``document_ref``, ``tool`` and ``turn`` where the command carries them), since a
reference is stored too (sealed with the content, and shown to reviewers and in exports). The
ids in ``provenance.sources`` are memory ids the vault checks, and are not scanned.

Cost: every rule is compiled once into one Hyperscan database, which scans a write's text
in one pass (a prefilter: it may say "maybe", never misses); only a rule it flags is then
run as a Python regex and confirmed (Luhn, entropy, the clause rule). Where Hyperscan
cannot run, every rule runs as a Python regex (slower on long content, same verdicts).

It is a guard against storing by mistake, not a data-loss-prevention system against a
writer who wants to hide a secret (spelled out, split, encoded): such a writer is not
stopped by any pattern.

Exceptions: ``ForbiddenContent`` (422, ``vault.errors``) from ``DataPolicy.check``;
``ValueError`` from ``DataPolicy.build`` for a configuration it cannot use (an unknown
class to disable, a bad class name, a regex that does not compile, an empty identifier).
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from lethe.vault.errors import ForbiddenContent
from lethe.vault.model import WriteCommand

PRIVATE_KEY = "private_key"
API_KEY = "api_key"
PASSWORD = "password"  # noqa: S105 (a class name)
PAYMENT_CARD = "payment_card"
BUILT_IN = (PRIVATE_KEY, API_KEY, PASSWORD, PAYMENT_CARD)

_CLASS_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_PROVENANCE_TEXT = ("source_ref", "url", "document_ref", "tool", "turn")

# What must hold of a match (found in the text as searched: lowercased for a ``folded`` rule)
# for it to count; the second argument is the text as written.
Confirm = Callable[["re.Match[str]", str], bool]


def _always(_: re.Match[str], __: str) -> bool:
    return True


@dataclass(frozen=True)
class Rule:
    """One regular expression of a class, and what must hold of a match for it to count.

    ``trigger``: what the Hyperscan prefilter looks for instead of ``regex``, where that is
    much cheaper to compile; it must match wherever ``regex`` does (a superset).
    ``folded``: ``regex`` is written in lower case and searched in the lowercased text,
    which CPython searches about 40 times faster than with ``re.IGNORECASE`` (3.4 ms against
    88 us on 16 KiB); a text whose length lowercasing changes is searched as it is, with
    ``re.IGNORECASE``.
    """

    forbidden_class: str
    regex: re.Pattern[str]
    confirm: Confirm = _always
    trigger: re.Pattern[str] | None = None
    folded: bool = False

    def found_in(self, text: str) -> bool:
        searched, regex = text, self.regex
        if self.folded:
            lower = text.lower()
            if len(lower) == len(text):
                searched = lower
            else:
                regex = re.compile(regex.pattern, regex.flags | re.IGNORECASE)
        return any(self.confirm(m, text) for m in regex.finditer(searched))


# -- payment cards ----------------------------------------------------------------------

# A candidate: 13-19 digits, contiguous or in the groups cards are printed in (4-4-4-4[-3],
# 4-6-5, 4-6-4) joined by one kind of separator, not part of a longer number, a decimal, a
# dash-joined id (a UUID's groups) or a "+" phone number. Spelled out group by group rather
# than as "digits with optional separators", which backtracks: 3.4 ms against ~0.3 ms on
# 16 KiB of space-separated numbers.
_CARD = re.compile(  # the first digit comes first, so the search skips to digits
    r"\d(?<![\w+-]\d)(?<!\d\.\d)"
    r"(?:\d{12,18}|\d{3}([ -])\d{4}\1\d{4}\1\d{1,4}(?:\1\d{1,3})?|\d{3}([ -])\d{6}\2\d{4,5})"
    r"(?![\w-])(?!\.\d)",
    re.ASCII,
)
_CARD_TRIGGER = re.compile(r"\d(?:[ -]?\d){12}", re.ASCII)
# Issuer prefixes of the networks that use 13-19 digit numbers: Visa 4; Mastercard 51-55 and
# 2221-2720; Amex 34, 37; Diners 300-305, 36, 38-39; Discover 6011, 644-649, 65; JCB 3528-3589;
# UnionPay 62; Maestro 50, 56-58, 6x. Numbers starting 0, 1, 7, 8 or 9 (timestamps, most
# phone and order numbers) are not candidates.
_CARD_PREFIX = re.compile(r"^(?:4|5[0-8]|2(?:22[1-9]|2[3-9]\d|[3-6]\d\d|7[01]\d|720)|3[0-9]|6)")
_GROUPINGS = ([4, 6, 5], [4, 6, 4])


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) check of ISO/IEC 7812: every second digit from the right doubled."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _is_card(match: re.Match[str], _: str) -> bool:
    text = match.group()
    seps = {c for c in text if c in " -"}
    if len(seps) > 1:
        return False
    groups = re.split(r"[ -]", text) if seps else [text]
    if len(groups) > 1:
        sizes = [len(g) for g in groups]
        fours = all(s == 4 for s in sizes[:-1]) and 1 <= sizes[-1] <= 4
        if not fours and sizes not in _GROUPINGS:
            return False
    digits = "".join(groups)
    return 13 <= len(digits) <= 19 and bool(_CARD_PREFIX.match(digits)) and luhn_valid(digits)


# -- passwords and generic keys ---------------------------------------------------------

_ASSIGN = r"""["']?\]?\s*(?::=|=>|[:=])\s*"""
_VALUE = r"""(?:"(?P<dq>[^"\n]{1,256})"|'(?P<sq>[^'\n]{1,256})'|(?P<bare>[^\s"',;&]{1,256}))"""
_PASSWORD = re.compile(r"(?:password|passwd|passphrase|contrase(?:ñ|n)a)" + _ASSIGN + _VALUE)  # folded
_PASSWORD_TRIGGER = re.compile(r"(?i)pass(?:word|wd|phrase)|contrase", re.ASCII)
_PLACEHOLDER = re.compile(
    r"^(?:[$<{%*\[]|\.\.\.|…|(?:x+|none|null|nil|redacted|n/?a|true|false|yes|no|on|off|required)$)",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[ \t]*(?:$|[\n\r,;&)}\]])")


def _is_password(match: re.Match[str], _: str) -> bool:
    quoted = match.group("dq") or match.group("sq")
    if quoted is not None:
        value = quoted.strip()
        return bool(value) and not _PLACEHOLDER.match(value)
    value = match.group("bare").rstrip(".!?:")
    if not value or _PLACEHOLDER.match(value):
        return False
    if any(c.isdigit() for c in value) and len(value) >= 4:
        return True
    return len(value) >= 4 and bool(_CLAUSE_END.match(match.string, match.end()))


_KEY_NAMES = (
    r"api[_-]?key|apikey|secret[_-]?key|access[_-]?key|access[_-]?token|auth[_-]?token|"
    r"refresh[_-]?token|client[_-]?secret|private[_-]?token|app[_-]?secret"
)
_KEY_ASSIGN = re.compile(
    r"(?:(?:" + _KEY_NAMES + ")" + _ASSIGN + r"""["']?|bearer\s+)(?P<key>[A-Za-z0-9_\-+/=.~]{16,512})"""
)
_KEY_TRIGGER = re.compile(r"(?i)" + _KEY_NAMES + "|bearer", re.ASCII)


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text``'s own character distribution."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _is_generic_key(match: re.Match[str], text: str) -> bool:
    key = text[match.start("key") : match.end("key")]  # as written: case adds entropy
    return any(c.isdigit() for c in key) and any(c.isalpha() for c in key) and shannon_entropy(key) >= 3.0


# -- the library's detectors ------------------------------------------------------------


_LEADING_WORD = re.compile(r"^([A-Za-z]{3,})\.\{")


def _library_rules() -> list[Rule]:
    """detect-secrets' denylists (imported here, at build time: it takes ~0.1 s to import).

    Only the patterns are used: the plugins' ``analyze_line`` reads the library's global
    settings and can verify a secret over the network, neither of which a vault wants.
    Artifactory's patterns are left out: they match ordinary capitalised words ("APFile…").
    """
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    by_class: dict[str, Sequence[Any]] = {
        PRIVATE_KEY: [PrivateKeyDetector],
        PASSWORD: [BasicAuthDetector],
        API_KEY: [
            AWSKeyDetector,
            GitHubTokenDetector,
            GitLabTokenDetector,
            SlackDetector,
            StripeDetector,
            OpenAIDetector,
            SendGridDetector,
            TwilioKeyDetector,
            NpmDetector,
            PypiTokenDetector,
            DiscordBotTokenDetector,
            TelegramBotTokenDetector,
            MailchimpDetector,
            AzureStorageKeyDetector,
            SquareOAuthDetector,
        ],
    }
    # Their tokens are ASCII: matched with ASCII semantics (``\d``, ``\w``, case), as Hyperscan
    # matches them without its Unicode mode, which compiles some of them 10 times slower.
    rules = []
    for name, plugins in by_class.items():
        for plugin in plugins:
            for regex in plugin.denylist:
                flags = (regex.flags & ~re.UNICODE) | re.ASCII
                # A pattern that opens with a word and then a wildcard (AWS's "aws.{0,20}?...")
                # is looked for by that word: the whole pattern takes Hyperscan 0.16 s to compile.
                lead = _LEADING_WORD.match(regex.pattern)
                trigger = re.compile(re.escape(lead.group(1)), flags) if lead else None
                rules.append(Rule(name, re.compile(regex.pattern, flags), trigger=trigger))
    return rules


def _built_in_rules() -> list[Rule]:
    return [
        *_library_rules(),
        Rule(API_KEY, _KEY_ASSIGN, _is_generic_key, _KEY_TRIGGER, folded=True),
        Rule(PASSWORD, _PASSWORD, _is_password, _PASSWORD_TRIGGER, folded=True),
        Rule(PAYMENT_CARD, _CARD, _is_card, _CARD_TRIGGER),
    ]


def _identifier_rule(name: str, literals: Iterable[str]) -> Rule:
    parts, bare = [], []
    for literal in sorted({unicodedata.normalize("NFC", x.strip()) for x in literals}, key=len, reverse=True):
        if not literal:
            raise ValueError(f"data policy: an identifier of class {name!r} is empty")
        head = r"(?<!\w)" if literal[0].isalnum() or literal[0] == "_" else ""
        tail = r"(?!\w)" if literal[-1].isalnum() or literal[-1] == "_" else ""
        parts.append(head + re.escape(literal) + tail)
        bare.append(re.escape(literal))
    if not parts:
        raise ValueError(f"data policy: class {name!r} lists no identifiers")
    return Rule(
        name, re.compile("|".join(parts), re.IGNORECASE), trigger=re.compile("|".join(bare), re.IGNORECASE)
    )


def _check_name(name: str) -> None:
    if not _CLASS_NAME.match(name):
        raise ValueError(f"data policy: class name {name!r} must be [a-z][a-z0-9_]* (at most 64)")
    if name in BUILT_IN:
        raise ValueError(f"data policy: {name!r} is a built-in class; configured classes need another name")


# -- the prefilter ----------------------------------------------------------------------


class _Prefilter:
    """All rules in one Hyperscan database (prefilter mode): which rules may match a text.

    A rule Hyperscan cannot compile, even approximated, is always run in Python. Scans are
    serialised by a lock: one database's scratch space is not shared between threads, and a
    scan of 16 KiB takes microseconds.
    """

    def __init__(self, hs: Any, rules: Sequence[Rule]) -> None:
        self.hs = hs
        self.always: list[int] = []
        ids = list(range(len(rules)))
        patterns = [r.trigger or r.regex for r in rules]
        try:
            self.db: Any = self._compile(patterns, ids)
        except hs.error:  # find the ones it cannot take: those run in Python every time
            self.always = [i for i in ids if not self._compiles(patterns[i])]
            kept = [i for i in ids if i not in self.always]
            self.db = self._compile([patterns[i] for i in kept], kept) if kept else None
        self.lock = threading.Lock()

    def _flags(self, regex: re.Pattern[str]) -> int:
        hs = self.hs
        flags: int = hs.HS_FLAG_PREFILTER | hs.HS_FLAG_SINGLEMATCH | hs.HS_FLAG_UTF8
        if not regex.flags & re.ASCII:
            flags |= hs.HS_FLAG_UCP
        if regex.flags & re.IGNORECASE:
            flags |= hs.HS_FLAG_CASELESS
        if regex.flags & re.MULTILINE:
            flags |= hs.HS_FLAG_MULTILINE
        if regex.flags & re.DOTALL:
            flags |= hs.HS_FLAG_DOTALL
        return flags

    def _compile(self, regexes: Sequence[re.Pattern[str]], ids: Sequence[int]) -> Any:
        db = self.hs.Database(mode=self.hs.HS_MODE_BLOCK)
        db.compile(
            expressions=[r.pattern.encode() for r in regexes],
            ids=list(ids),
            elements=len(regexes),
            flags=[self._flags(r) for r in regexes],
        )
        return db

    def _compiles(self, regex: re.Pattern[str]) -> bool:
        try:
            self._compile([regex], [0])
        except self.hs.error:
            return False
        return True

    def candidates(self, data: bytes) -> list[int]:
        found = set(self.always)
        if self.db is not None:

            def on_match(rule: int, *_: Any) -> None:
                found.add(rule)

            with self.lock:
                self.db.scan(data, match_event_handler=on_match)
        return sorted(found)


def _hyperscan() -> Any:
    try:
        import hyperscan

        hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK).compile(expressions=[b"probe"])
    except Exception:  # not installed, or this CPU lacks what it needs
        return None
    return hyperscan


# -- the policy -------------------------------------------------------------------------


class DataPolicy:
    """The classes a deployment forbids, built once (composition root) and shared by writes.

    ``build`` checks a declaration at once; the built-in rules (detect-secrets' import, about
    0.1 s) and the Hyperscan database (about 0.2 s) are made on first use, or by ``warm``
    (the server warms it at start), so a command that never writes never pays for them.
    """

    def __init__(
        self, rules: Sequence[Rule] | Callable[[], Sequence[Rule]], *, use_hyperscan: bool = True
    ) -> None:
        self._source = rules
        self._use_hyperscan = use_hyperscan
        self._made: tuple[list[Rule], _Prefilter | None] | None = None
        self._lock = threading.Lock()

    def _compiled(self) -> tuple[list[Rule], _Prefilter | None]:
        if self._made is None:
            with self._lock:
                if self._made is None:
                    rules = list(self._source() if callable(self._source) else self._source)
                    hs = _hyperscan() if self._use_hyperscan and rules else None
                    self._made = (rules, _Prefilter(hs, rules) if hs is not None else None)
        return self._made

    def warm(self) -> DataPolicy:
        """Make the rules and the prefilter now, not on the first write."""
        self._compiled()
        return self

    @property
    def rules(self) -> list[Rule]:
        return self._compiled()[0]

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.forbidden_class for r in self.rules))

    @classmethod
    def build(
        cls,
        *,
        disabled: Iterable[str] = (),
        patterns: Mapping[str, str] | None = None,
        identifiers: Mapping[str, Iterable[str]] | None = None,
        use_hyperscan: bool = True,
    ) -> DataPolicy:
        """The built-in classes less ``disabled``, plus the configured ones (``ValueError`` if unusable)."""
        off = set(disabled)
        if unknown := off - set(BUILT_IN):
            raise ValueError(f"data policy: cannot disable {sorted(unknown)}; built-in: {list(BUILT_IN)}")
        configured = []
        for name, pattern in (patterns or {}).items():
            _check_name(name)
            try:
                configured.append(Rule(name, re.compile(pattern)))
            except re.error as exc:
                raise ValueError(f"data policy: class {name!r}: bad pattern: {exc}") from None
        for name, literals in (identifiers or {}).items():
            _check_name(name)
            if isinstance(literals, str):
                raise ValueError(f"data policy: identifiers of class {name!r} must be a list of strings")
            configured.append(_identifier_rule(name, literals))

        def rules() -> list[Rule]:
            built_in = (
                [r for r in _built_in_rules() if r.forbidden_class not in off] if off != set(BUILT_IN) else []
            )
            return built_in + configured

        return cls(rules, use_hyperscan=use_hyperscan)

    def forbidden_class(self, text: str) -> str | None:
        """The first class ``text`` falls in, or None."""
        if not text:
            return None
        rules, prefilter = self._compiled()
        if not unicodedata.is_normalized("NFC", text):
            text = unicodedata.normalize("NFC", text)
        if prefilter is None:
            candidates: Iterable[Rule] = rules
        else:
            candidates = (rules[i] for i in prefilter.candidates(text.encode()))
        for rule in candidates:
            if rule.found_in(text):
                return rule.forbidden_class
        return None

    def check(self, cmd: WriteCommand) -> None:
        """Refuse a write whose content or provenance text holds a forbidden class (``ForbiddenContent``)."""
        if not self._compiled()[0]:
            return
        texts = [cmd.content]
        prov = cmd.provenance
        if prov is not None:
            texts += [v for f in _PROVENANCE_TEXT if isinstance(v := getattr(prov, f, None), str)]
        for field, text in zip(("content", *(["provenance"] * (len(texts) - 1))), texts, strict=True):
            if (name := self.forbidden_class(text)) is not None:
                raise ForbiddenContent.of(name, field)


@lru_cache(maxsize=1)
def default_policy() -> DataPolicy:
    """Every built-in class on: what a deployment gets when it declares nothing."""
    return DataPolicy.build()
