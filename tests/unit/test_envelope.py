"""The envelope recipes: one opaque failure for anything that does not authenticate."""

from __future__ import annotations

import os

import pytest

from lethe.keys.envelope import (
    DecryptionFailed,
    decrypt_for_subject,
    decrypt_many_for_subject,
    encrypt_for_subject,
)

KEY = os.urandom(32)


def test_a_sealed_value_opens_only_under_its_key_and_context():
    sealed = encrypt_for_subject(KEY, b"prefers green tea", b"t1|s1|m1|1")
    assert decrypt_for_subject(KEY, sealed, b"t1|s1|m1|1") == b"prefers green tea"
    for key, context in ((os.urandom(32), b"t1|s1|m1|1"), (KEY, b"t1|s1|m2|1"), (KEY[:16], b"t1|s1|m1|1")):
        with pytest.raises(DecryptionFailed):
            decrypt_for_subject(key, sealed, context)


def test_a_batch_opens_each_authentic_item_and_gives_none_for_every_other():
    good = encrypt_for_subject(KEY, b"one", b"c1")
    other = encrypt_for_subject(KEY, b"two", b"c2")
    flipped = good[:-1] + bytes([good[-1] ^ 1])
    items = [
        (good, b"c1"),
        (other, b"c1"),  # another item's context
        (flipped, b"c1"),  # a flipped tag bit
        (b"\x02" + good[1:], b"c1"),  # an unknown format byte
        (good[:20], b"c1"),  # shorter than a nonce and a tag
        (other, b"c2"),
    ]
    assert decrypt_many_for_subject(KEY, items) == [b"one", None, None, None, None, b"two"]
    assert decrypt_many_for_subject(os.urandom(32), items) == [None] * 6
    assert decrypt_many_for_subject(KEY[:16], items) == [None] * 6
