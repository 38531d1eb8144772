"""The audit tree computes RFC 9162 roots and proofs, byte for byte, and verifies them.

Known answers come from transparency-dev/merkle (the Go reference used by Trillian
and the Go checksum database):
- rfc6962/rfc6962_test.go (empty root, leaf and node hashes),
- testonly/constants.go (the 8 leaf inputs, node hashes and roots for sizes 0..8),
- proof/verify_test.go (published inclusion and consistency proofs).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe.vault.merkle import (
    EMPTY_ROOT,
    AuditTreeError,
    InvalidTreeRequest,
    LeafSource,
    LeafSourceError,
    MerkleTree,
    leaf_hash,
    node_hash,
    verify_consistency,
    verify_inclusion,
)


def h(hex_digest: str) -> bytes:
    return bytes.fromhex(hex_digest)


class FakeLeafSource:
    """An in-memory, append-only stand-in for the events table; counts leaves read."""

    def __init__(self, leaves: Sequence[bytes] = ()) -> None:
        self.leaves = list(leaves)
        self.leaves_read = 0

    def size(self) -> int:
        return len(self.leaves)

    def leaf_hashes(self, start: int, end: int) -> Sequence[bytes]:
        assert 0 <= start <= end <= len(self.leaves)
        self.leaves_read += end - start
        return self.leaves[start:end]

    def append(self, data: bytes) -> None:
        self.leaves.append(leaf_hash(data))


# --- reference vectors (transparency-dev/merkle testonly/constants.go) -----------------

LEAF_INPUTS = [
    h(""),
    h("00"),
    h("10"),
    h("2021"),
    h("3031"),
    h("40414243"),
    h("5051525354555657"),
    h("606162636465666768696a6b6c6d6e6f"),
]

LEAF_HASHES = [
    h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
    h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
    h("0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7"),
    h("07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7"),
    h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
    h("4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658"),
    h("b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"),
    h("46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1"),
]

LEVEL1_HASHES = [
    h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"),
    h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
    h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
    h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
]

LEVEL2_HASHES = [
    h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
    h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
]

# Root hashes indexed by tree size, 0..8.
ROOTS = [
    h("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
    h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"),
    h("aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77"),
    h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
    h("4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4"),
    h("76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef"),
    h("ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c"),
    h("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"),
]

# proof/verify_test.go inclusionProofs: (leaf index, tree size, proof); the Go table
# numbers leaves from 1, converted here to 0-based indices.
INCLUSION_VECTORS = [
    (0, 1, []),
    (
        0,
        8,
        [
            h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
        ],
    ),
    (
        5,
        8,
        [
            h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
            h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
            h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        ],
    ),
    (2, 3, [h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125")]),
    (
        1,
        5,
        [
            h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
        ],
    ),
]

# proof/verify_test.go consistencyProofs: (size1, size2, proof).
CONSISTENCY_VECTORS = [
    (1, 1, []),
    (
        1,
        8,
        [
            h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
        ],
    ),
    (
        6,
        8,
        [
            h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
            h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
            h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        ],
    ),
    (
        2,
        5,
        [
            h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
            h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
        ],
    ),
    (
        6,
        7,
        [
            h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
            h("b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"),
            h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
        ],
    ),
]

# From proof/verify_test.go: an arbitrary 32-byte hash used as a wrong root.
SOME_HASH = h("abacaba000000000000000000000000000000000000000000060061e00123456")


def vector_tree(chunk: int = 256) -> MerkleTree:
    return MerkleTree(FakeLeafSource([leaf_hash(d) for d in LEAF_INPUTS]), chunk=chunk)


# --- a naive, uncached transcription of RFC 9162 2.1 as an independent reference ------


def naive_root(leaves: Sequence[bytes]) -> bytes:
    n = len(leaves)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return leaves[0]
    k = 1
    while k * 2 < n:
        k *= 2
    return node_hash(naive_root(leaves[:k]), naive_root(leaves[k:]))


def naive_path(m: int, leaves: Sequence[bytes]) -> list[bytes]:
    n = len(leaves)
    if n == 1:
        return []
    k = 1
    while k * 2 < n:
        k *= 2
    if m < k:
        return [*naive_path(m, leaves[:k]), naive_root(leaves[k:])]
    return [*naive_path(m - k, leaves[k:]), naive_root(leaves[:k])]


def naive_subproof(m: int, leaves: Sequence[bytes], whole: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if whole else [naive_root(leaves)]
    k = 1
    while k * 2 < n:
        k *= 2
    if m <= k:
        return [*naive_subproof(m, leaves[:k], whole), naive_root(leaves[k:])]
    return [*naive_subproof(m - k, leaves[k:], False), naive_root(leaves[:k])]


MAX_LEAVES = 300
ALL_LEAVES = [leaf_hash(i.to_bytes(4, "big")) for i in range(MAX_LEAVES)]
NAIVE_ROOTS = [naive_root(ALL_LEAVES[:n]) for n in range(MAX_LEAVES + 1)]


# --- hashing known answers -----------------------------------------------------------


def test_empty_tree_root_is_sha256_of_the_empty_string() -> None:
    assert h("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == EMPTY_ROOT
    assert MerkleTree(FakeLeafSource()).root() == EMPTY_ROOT


def test_empty_leaf_hash_differs_from_the_empty_root() -> None:
    assert leaf_hash(b"") == h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d")
    assert leaf_hash(b"") != EMPTY_ROOT


def test_leaf_hash_prefixes_0x00_as_in_rfc6962() -> None:
    assert leaf_hash(b"L123456") == h("395aa064aa4c29f7010acfe3f25db9485bbd4b91897b6ad7ad547639252b4d56")


def test_node_hash_prefixes_0x01_as_in_rfc6962() -> None:
    assert node_hash(b"N123", b"N456") == h(
        "aa217fe888e47007fa15edab33c2b492a722cb106c64667fc2b044444de66bbb"
    )


def test_leaf_hashes_of_the_reference_inputs_match_published_values() -> None:
    assert [leaf_hash(d) for d in LEAF_INPUTS] == LEAF_HASHES


def test_interior_nodes_of_the_reference_tree_match_published_values() -> None:
    level1 = [node_hash(LEAF_HASHES[i], LEAF_HASHES[i + 1]) for i in range(0, 8, 2)]
    level2 = [node_hash(level1[i], level1[i + 1]) for i in range(0, 4, 2)]
    assert level1 == LEVEL1_HASHES
    assert level2 == LEVEL2_HASHES


@pytest.mark.parametrize("chunk", [1, 2, 4, 256])
@pytest.mark.parametrize("size", range(9))
def test_root_of_each_reference_tree_size_matches_published_root(size: int, chunk: int) -> None:
    assert vector_tree(chunk).root(size) == ROOTS[size]


def test_root_defaults_to_all_leaves_stored() -> None:
    assert vector_tree().root() == ROOTS[8]


# --- published proofs ----------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 2, 256])
@pytest.mark.parametrize(("index", "size", "proof"), INCLUSION_VECTORS)
def test_inclusion_proof_matches_published_vector(
    index: int, size: int, proof: list[bytes], chunk: int
) -> None:
    assert vector_tree(chunk).inclusion_proof(index, size) == proof


@pytest.mark.parametrize(("index", "size", "proof"), INCLUSION_VECTORS)
def test_published_inclusion_proof_verifies(index: int, size: int, proof: list[bytes]) -> None:
    assert verify_inclusion(LEAF_HASHES[index], index, size, proof, ROOTS[size])


@pytest.mark.parametrize("chunk", [1, 2, 256])
@pytest.mark.parametrize(("first", "second", "proof"), CONSISTENCY_VECTORS)
def test_consistency_proof_matches_published_vector(
    first: int, second: int, proof: list[bytes], chunk: int
) -> None:
    assert vector_tree(chunk).consistency_proof(first, second) == proof


@pytest.mark.parametrize(("first", "second", "proof"), CONSISTENCY_VECTORS)
def test_published_consistency_proof_verifies(first: int, second: int, proof: list[bytes]) -> None:
    assert verify_consistency(first, second, ROOTS[first], ROOTS[second], proof)


def inclusion_corruptions(
    leaf: bytes, index: int, size: int, proof: list[bytes], root: bytes
) -> list[tuple[str, tuple[object, ...]]]:
    """The probes of transparency-dev's corruptInclusionProof, plus a few more."""
    probes: list[tuple[str, tuple[object, ...]]] = [
        ("index - 1", (leaf, index - 1, size, proof, root)),
        ("index + 1", (leaf, index + 1, size, proof, root)),
        ("index ^ 2", (leaf, index ^ 2, size, proof, root)),
        ("size * 2", (leaf, index, size * 2, proof, root)),
        ("size // 2", (leaf, index, size // 2, proof, root)),
        ("wrong leaf", (leaf_hash(b"WrongLeaf"), index, size, proof, root)),
        ("non-hash leaf", (b"WrongLeaf", index, size, proof, root)),
        ("empty root", (leaf, index, size, proof, EMPTY_ROOT)),
        ("random root", (leaf, index, size, proof, SOME_HASH)),
        ("trailing garbage", (leaf, index, size, [*proof, b""], root)),
        ("trailing root", (leaf, index, size, [*proof, root], root)),
        ("preceding garbage", (leaf, index, size, [b"", *proof], root)),
        ("preceding root", (leaf, index, size, [root, *proof], root)),
    ]
    for i in range(len(proof)):
        flipped = list(proof)
        flipped[i] = bytes([flipped[i][0] ^ 8]) + flipped[i][1:]
        probes.append((f"proof[{i}] bit flipped", (leaf, index, size, flipped, root)))
    if proof:
        probes.append(("removed component", (leaf, index, size, proof[:-1], root)))
    if len(proof) > 1:
        inserted = [proof[0], SOME_HASH, *proof[1:]]
        probes.append(("inserted component", (leaf, index, size, inserted, root)))
    return probes


def consistency_corruptions(
    first: int, second: int, root1: bytes, root2: bytes, proof: list[bytes]
) -> list[tuple[str, tuple[object, ...]]]:
    """The probes of transparency-dev's corruptConsistencyProof, plus a few more."""
    probes: list[tuple[str, tuple[object, ...]]] = [
        ("first - 1", (first - 1, second, root1, root2, proof)),
        ("first + 1", (first + 1, second, root1, root2, proof)),
        ("first ^ 2", (first ^ 2, second, root1, root2, proof)),
        ("second * 2", (first, second * 2, root1, root2, proof)),
        ("second // 2", (first, second // 2, root1, root2, proof)),
        ("wrong root1", (first, second, SOME_HASH, root2, proof)),
        ("wrong root2", (first, second, root1, SOME_HASH, proof)),
        ("non-hash root1", (first, second, b"WrongRoot", root2, proof)),
        ("swapped roots", (first, second, root2, root1, proof)),
        ("empty proof", (first, second, root1, root2, [])),
        ("trailing garbage", (first, second, root1, root2, [*proof, b""])),
        ("trailing root1", (first, second, root1, root2, [*proof, root1])),
        ("trailing root2", (first, second, root1, root2, [*proof, root2])),
        ("preceding garbage", (first, second, root1, root2, [b"", *proof])),
        ("preceding root1", (first, second, root1, root2, [root1, *proof])),
        ("preceding root2", (first, second, root1, root2, [root2, *proof])),
        ("preceding proof[0]", (first, second, root1, root2, [proof[0], *proof])),
        ("truncated proof", (first, second, root1, root2, proof[:-1])),
    ]
    for i in range(len(proof)):
        flipped = list(proof)
        flipped[i] = bytes([flipped[i][0] ^ 16]) + flipped[i][1:]
        probes.append((f"proof[{i}] bit flipped", (first, second, root1, root2, flipped)))
    return probes


@pytest.mark.parametrize(("index", "size", "proof"), INCLUSION_VECTORS)
def test_corrupted_published_inclusion_proof_is_rejected(index: int, size: int, proof: list[bytes]) -> None:
    probes = inclusion_corruptions(LEAF_HASHES[index], index, size, proof, ROOTS[size])
    accepted = [name for name, args in probes if verify_inclusion(*args)]  # type: ignore[arg-type]
    assert accepted == []


@pytest.mark.parametrize(("first", "second", "proof"), [v for v in CONSISTENCY_VECTORS if v[2]])
def test_corrupted_published_consistency_proof_is_rejected(
    first: int, second: int, proof: list[bytes]
) -> None:
    probes = consistency_corruptions(first, second, ROOTS[first], ROOTS[second], proof)
    accepted = [name for name, args in probes if verify_consistency(*args)]  # type: ignore[arg-type]
    assert accepted == []


# --- verifier edge cases (proof/verify_test.go TestVerifyInclusion*, TestVerifyConsistency)


def test_single_leaf_tree_inclusion_needs_matching_leaf_and_root() -> None:
    leaf = leaf_hash(b"data")
    assert verify_inclusion(leaf, 0, 1, [], leaf)
    assert not verify_inclusion(b"", 0, 1, [], leaf)
    assert not verify_inclusion(leaf, 0, 1, [], b"")
    assert not verify_inclusion(b"", 0, 1, [], b"")


@pytest.mark.parametrize(("index", "size"), [(0, 0), (0, 1), (1, 0), (2, 1)])
def test_inclusion_with_empty_proof_and_bad_root_or_leaf_is_rejected(index: int, size: int) -> None:
    assert not verify_inclusion(SOME_HASH, index, size, [], b"")
    assert not verify_inclusion(b"", index, size, [], EMPTY_ROOT)
    assert not verify_inclusion(SOME_HASH, index, size, [], EMPTY_ROOT)


R1 = leaf_hash(b"root one")
R2 = leaf_hash(b"root two")


@pytest.mark.parametrize(
    ("first", "second", "root1", "root2", "proof", "expected"),
    [
        (0, 0, R1, R2, [], False),
        (1, 1, R1, R2, [], False),
        # Sizes that are always consistent.
        (0, 0, EMPTY_ROOT, EMPTY_ROOT, [], True),
        (0, 1, EMPTY_ROOT, R2, [], True),
        (1, 1, R2, R2, [], True),
        # Stricter than transparency-dev: the empty tree has exactly one root.
        (0, 1, R1, R2, [], False),
        # Time travel to the past.
        (1, 0, R1, R2, [], False),
        (2, 1, R1, R2, [], False),
        # Empty proof.
        (1, 2, R1, R2, [], False),
        # Roots do not match.
        (0, 0, EMPTY_ROOT, R2, [], False),
        (1, 1, EMPTY_ROOT, R2, [], False),
        # Roots match but the proof is not empty.
        (0, 0, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT], False),
        (0, 1, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT], False),
        (1, 1, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT], False),
    ],
)
def test_consistency_edge_cases_follow_the_reference_verifier(
    first: int, second: int, root1: bytes, root2: bytes, proof: list[bytes], expected: bool
) -> None:
    assert verify_consistency(first, second, root1, root2, proof) is expected


GARBAGE: list[object] = [None, "", "00" * 32, b"\x00" * 31, b"\x00" * 33, -7, 1.5, [], object()]


@pytest.mark.parametrize("garbage", GARBAGE)
def test_verifiers_return_false_and_never_raise_on_malformed_input(garbage: object) -> None:
    index, size, proof = INCLUSION_VECTORS[1]
    leaf, root = LEAF_HASHES[index], ROOTS[size]
    assert not verify_inclusion(garbage, index, size, proof, root)  # type: ignore[arg-type]
    assert not verify_inclusion(leaf, garbage, size, proof, root)  # type: ignore[arg-type]
    assert not verify_inclusion(leaf, index, garbage, proof, root)  # type: ignore[arg-type]
    assert not verify_inclusion(leaf, index, size, garbage, root)  # type: ignore[arg-type]
    assert not verify_inclusion(leaf, index, size, [*proof[:-1], garbage], root)  # type: ignore[list-item]
    assert not verify_inclusion(leaf, index, size, proof, garbage)  # type: ignore[arg-type]
    first, second, cproof = CONSISTENCY_VECTORS[2]
    r1, r2 = ROOTS[first], ROOTS[second]
    assert not verify_consistency(garbage, second, r1, r2, cproof)  # type: ignore[arg-type]
    assert not verify_consistency(first, garbage, r1, r2, cproof)  # type: ignore[arg-type]
    assert not verify_consistency(first, second, garbage, r2, cproof)  # type: ignore[arg-type]
    assert not verify_consistency(first, second, r1, garbage, cproof)  # type: ignore[arg-type]
    assert not verify_consistency(first, second, r1, r2, garbage)  # type: ignore[arg-type]
    assert not verify_consistency(first, second, r1, r2, [*cproof[:-1], garbage])  # type: ignore[list-item]


def test_verifiers_reject_negative_and_boolean_sizes() -> None:
    leaf = LEAF_HASHES[0]
    assert not verify_inclusion(leaf, -1, 1, [], leaf)
    assert not verify_inclusion(leaf, False, True, [], leaf)
    assert not verify_consistency(-1, 1, EMPTY_ROOT, leaf, [])
    assert not verify_consistency(False, True, EMPTY_ROOT, leaf, [])


def test_verifiers_accept_a_proof_given_as_a_tuple() -> None:
    index, size, proof = INCLUSION_VECTORS[2]
    assert verify_inclusion(LEAF_HASHES[index], index, size, tuple(proof), ROOTS[size])


# --- properties over random trees ----------------------------------------------------

sizes = st.integers(min_value=1, max_value=MAX_LEAVES)
chunks = st.sampled_from([1, 2, 4, 16, 256])


@settings(max_examples=150, deadline=None)
@given(data=st.data(), size=sizes, chunk=chunks, stored_extra=st.integers(0, 20))
def test_every_generated_inclusion_proof_verifies_and_matches_the_rfc(
    data: st.DataObject, size: int, chunk: int, stored_extra: int
) -> None:
    stored = min(MAX_LEAVES, size + stored_extra)
    tree = MerkleTree(FakeLeafSource(ALL_LEAVES[:stored]), chunk=chunk)
    index = data.draw(st.integers(0, size - 1), label="index")
    root = tree.root(size)
    proof = tree.inclusion_proof(index, size)
    assert root == NAIVE_ROOTS[size]
    assert proof == naive_path(index, ALL_LEAVES[:size])
    assert verify_inclusion(ALL_LEAVES[index], index, size, proof, root)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), size=sizes)
def test_every_corruption_of_an_inclusion_proof_fails(data: st.DataObject, size: int) -> None:
    index = data.draw(st.integers(0, size - 1), label="index")
    proof = naive_path(index, ALL_LEAVES[:size])
    probes = inclusion_corruptions(ALL_LEAVES[index], index, size, proof, NAIVE_ROOTS[size])
    accepted = [name for name, args in probes if verify_inclusion(*args)]  # type: ignore[arg-type]
    assert accepted == []


@settings(max_examples=150, deadline=None)
@given(data=st.data(), second=sizes, chunk=chunks)
def test_every_generated_consistency_proof_verifies_and_matches_the_rfc(
    data: st.DataObject, second: int, chunk: int
) -> None:
    first = data.draw(st.integers(0, second), label="first")
    tree = MerkleTree(FakeLeafSource(ALL_LEAVES[:second]), chunk=chunk)
    proof = tree.consistency_proof(first, second)
    expected = [] if first == 0 else naive_subproof(first, ALL_LEAVES[:second], True)
    assert proof == expected
    assert verify_consistency(first, second, tree.root(first), tree.root(second), proof)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), second=st.integers(min_value=2, max_value=MAX_LEAVES))
def test_every_corruption_of_a_consistency_proof_fails(data: st.DataObject, second: int) -> None:
    first = data.draw(st.integers(1, second - 1), label="first")
    proof = naive_subproof(first, ALL_LEAVES[:second], True)
    probes = consistency_corruptions(first, second, NAIVE_ROOTS[first], NAIVE_ROOTS[second], proof)
    accepted = [name for name, args in probes if verify_consistency(*args)]  # type: ignore[arg-type]
    assert accepted == []


# --- the chunk cache -----------------------------------------------------------------


def test_chunk_cache_gives_the_naive_root_around_chunk_boundaries() -> None:
    leaves = [leaf_hash(i.to_bytes(4, "big")) for i in range(1000)]
    tree = MerkleTree(FakeLeafSource(leaves), chunk=256)
    for size in (255, 256, 257, 511, 512, 513, 1000):
        assert tree.root(size) == naive_root(leaves[:size]), size
    # Asked again, now from a warm cache, and in another order.
    for size in (1000, 513, 512, 511, 257, 256, 255, 1):
        assert tree.root(size) == naive_root(leaves[:size]), size


def test_chunk_cache_gives_the_naive_proofs_around_chunk_boundaries() -> None:
    leaves = [leaf_hash(i.to_bytes(4, "big")) for i in range(1000)]
    tree = MerkleTree(FakeLeafSource(leaves), chunk=256)
    for size in (255, 256, 257, 511, 512, 513, 1000):
        for index in sorted({0, 254, size // 2, size - 2, size - 1}):
            if index < size:
                assert tree.inclusion_proof(index, size) == naive_path(index, leaves[:size])
        for first in (1, 255, 256, 257, 511, 512):
            if first < size:
                assert tree.consistency_proof(first, size) == naive_subproof(first, leaves[:size], True)


def test_repeated_root_reads_only_the_partial_tail_chunk() -> None:
    source = FakeLeafSource([leaf_hash(i.to_bytes(4, "big")) for i in range(1000)])
    tree = MerkleTree(source, chunk=256)
    tree.root(1000)
    assert source.leaves_read <= 1000 + 256
    source.leaves_read = 0
    tree.root(1000)
    tree.inclusion_proof(10, 1000)
    tree.consistency_proof(300, 1000)
    # Complete chunks come from the cache; at most the tail chunk and the chunks
    # holding the proof's leaf and the consistency boundary are read again.
    assert source.leaves_read <= 3 * 256


def test_cache_stays_correct_while_the_log_grows() -> None:
    source = FakeLeafSource()
    tree = MerkleTree(source, chunk=4)
    roots = [tree.root()]
    for i in range(70):
        source.append(i.to_bytes(2, "big"))
        roots.append(tree.root())
    for size, root in enumerate(roots):
        assert root == naive_root(source.leaves[:size])
        assert tree.root(size) == root
    proof = tree.consistency_proof(33, 70)
    assert verify_consistency(33, 70, roots[33], roots[70], proof)


def test_an_in_memory_list_source_satisfies_the_leaf_source_port() -> None:
    assert isinstance(FakeLeafSource(), LeafSource)


# --- invalid requests ----------------------------------------------------------------


def test_inclusion_proof_for_an_index_outside_the_tree_is_refused() -> None:
    tree = vector_tree()
    with pytest.raises(InvalidTreeRequest):
        tree.inclusion_proof(8, 8)
    with pytest.raises(InvalidTreeRequest):
        tree.inclusion_proof(-1, 8)
    with pytest.raises(InvalidTreeRequest):
        tree.inclusion_proof(0, 0)


def test_a_tree_size_beyond_the_leaves_stored_is_refused() -> None:
    tree = vector_tree()
    with pytest.raises(InvalidTreeRequest):
        tree.root(9)
    with pytest.raises(InvalidTreeRequest):
        tree.inclusion_proof(0, 9)
    with pytest.raises(InvalidTreeRequest):
        tree.consistency_proof(1, 9)


def test_consistency_proof_backwards_in_time_is_refused() -> None:
    with pytest.raises(InvalidTreeRequest):
        vector_tree().consistency_proof(5, 4)


def test_consistency_proof_from_empty_or_to_same_size_is_empty() -> None:
    tree = vector_tree()
    assert tree.consistency_proof(0, 8) == []
    assert tree.consistency_proof(8, 8) == []


@pytest.mark.parametrize("bad", [-1, 1.0, "3", True])
def test_non_integer_or_negative_tree_size_is_refused(bad: object) -> None:
    with pytest.raises(InvalidTreeRequest):
        vector_tree().root(bad)  # type: ignore[arg-type]


def test_invalid_tree_request_is_a_value_error() -> None:
    assert issubclass(InvalidTreeRequest, ValueError)
    assert issubclass(InvalidTreeRequest, AuditTreeError)


@pytest.mark.parametrize("chunk", [0, 3, 100, -256])
def test_chunk_must_be_a_power_of_two(chunk: int) -> None:
    with pytest.raises(ValueError):
        MerkleTree(FakeLeafSource(), chunk=chunk)


class ShortReadSource(FakeLeafSource):
    def leaf_hashes(self, start: int, end: int) -> Sequence[bytes]:
        return self.leaves[start : end - 1]


class BadHashSource(FakeLeafSource):
    def leaf_hashes(self, start: int, end: int) -> Sequence[bytes]:
        return [b"short"] * (end - start)


@pytest.mark.parametrize("source_type", [ShortReadSource, BadHashSource])
def test_a_source_breaking_its_contract_raises_leaf_source_error(
    source_type: type[FakeLeafSource],
) -> None:
    tree = MerkleTree(source_type(ALL_LEAVES[:10]), chunk=4)
    with pytest.raises(LeafSourceError):
        tree.root()


def test_a_source_may_return_memoryviews_as_databases_do() -> None:
    class MemoryviewSource(FakeLeafSource):
        def leaf_hashes(self, start: int, end: int) -> Sequence[bytes]:
            return [memoryview(x) for x in self.leaves[start:end]]  # type: ignore[misc]

    assert MerkleTree(MemoryviewSource(ALL_LEAVES[:20]), chunk=4).root() == NAIVE_ROOTS[20]
