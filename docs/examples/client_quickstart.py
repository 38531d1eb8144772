"""Lethe's Python client: remember, recall, and see quarantine at work.

pip install "lethe-vault[client] @ $LETHE_URL/wheels/lethe_vault-0.1.0-py3-none-any.whl"
LETHE_URL=http://127.0.0.1:8080 LETHE_TOKEN=<agent token> python client_quickstart.py
"""

from lethe.client import LetheClient, OutOfScope, Provenance

with LetheClient() as lethe:  # LETHE_URL and LETHE_TOKEN from the environment
    said = lethe.write_memory(
        "customer-1001",
        "support",
        "preference",
        "Prefers email over phone calls",
        Provenance("user_statement", "session-9/turn-42"),
    )
    scraped = lethe.write_memory(
        "customer-1001",
        "support",
        "fact",
        "Works at Example Corp",
        Provenance("web_page", "https://example.org/team", url="https://example.org/team"),
        confidence=0.6,
    )
    print(said.status, scraped.status)  # active quarantined
    found = lethe.search_memories("contact preference", "support", subject_id="customer-1001")
    print([m.content for m in found.items])  # only the active one
    try:
        lethe.request_erasure("customer-1001", "gdpr-art17-1a")
    except OutOfScope as refused:  # an agent token cannot forget; a privacy officer's can
        print(refused.status, refused.title)
