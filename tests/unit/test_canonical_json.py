"""canonical_json produces RFC 8785 (JCS) bytes.

The vectors are the published test data of the JCS reference implementation,
cyberphone/json-canonicalization, testdata/input/*.json -> testdata/output/*.json
(and testdata/outhex/*.txt for an exact byte dump).
"""

from __future__ import annotations

import json
import math

import pytest
import rfc8785 as _reference
from hypothesis import given as _given
from hypothesis import settings as _settings
from hypothesis import strategies as _st

from lethe.vault.canonical import CanonicalJsonError, canonical_json

# (name, input JSON text, expected canonical text)
VECTORS = [
    (
        "structures",
        r"""{
  "1": {"f": {"f": "hi","F": 5} ,"\n": 56.0},
  "10": { },
  "": "empty",
  "a": { },
  "111": [ { } ],
  "A": { }
}""",
        r"""{"":"empty","1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{}],"A":{},"a":{}}""",
    ),
    (
        "weird",
        r"""{
  "\u20ac": "Euro Sign",
  "1": "One",
  "\u0080": "Control\u007f",
  "\ud83d\ude02": "Smiley",
  "\u00f6": "Latin Small Letter O With Diaeresis",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "</script>": "Browser Challenge"
}
""",
        '{"1":"One","</script>":"Browser Challenge","\u0080":"Control\u007f",'
        '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",'
        '"\U0001f602":"Smiley","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    ),
    (
        "unicode",
        '{\n  "Unnormalized Unicode":"\\u1e0d\\u0307"\n}\n',
        '{"Unnormalized Unicode":"\u1e0d\u0307"}',
    ),
    (
        "french",
        """{
  "peach": "This sorting order",
  "p\u00e9ch\u00e9": "is wrong according to French",
  "p\u00eache": "but canonicalization MUST",
  "sin":   "ingnore locale"
}
""",
        '{"peach":"This sorting order","p\u00e9ch\u00e9":"is wrong according to French",'
        '"p\u00eache":"but canonicalization MUST","sin":"ingnore locale"}',
    ),
    (
        "values",
        r"""{
  "numbers": [1E30, 4.50, 333333333.33333329, 2e-3, 0.000000000000000000000000001],
  "escaping": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}""",
        '{"escaping":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/","literals":[null,true,false],'
        '"numbers":[1e+30,4.5,333333333.3333333,0.002,1e-27]}',
    ),
]


@pytest.mark.parametrize(("name", "source", "expected"), VECTORS, ids=[v[0] for v in VECTORS])
def test_canonical_json_matches_the_jcs_reference_vectors(name: str, source: str, expected: str) -> None:
    assert canonical_json(json.loads(source)) == expected.encode("utf-8")


def test_simple_string_matches_the_published_byte_dump() -> None:
    # testdata/input/simpleString.json and testdata/outhex/simpleString.txt
    value = json.loads('    "this is a test string 1235"')
    outhex = "22 74 68 69 73 20 69 73 20 61 20 74 65 73 74 20 73 74 72 69 6E 67 20 31 32 33 35 22"
    assert canonical_json(value) == bytes.fromhex(outhex.replace(" ", ""))


def test_object_keys_sort_by_utf16_code_units_not_code_points() -> None:
    # U+1F602 is above U+FB33 as a code point, but its UTF-16 lead surrogate 0xD83D
    # sorts below 0xFB33: JCS sorts on UTF-16 code units.
    assert canonical_json({"\ufb33": 1, "\U0001f602": 2}) == '{"\U0001f602":2,"\ufb33":1}'.encode()


def test_output_is_utf8_without_escaping_non_ascii() -> None:
    assert canonical_json("\u00e9\u20ac\U0001f602") == '"\u00e9\u20ac\U0001f602"'.encode()


def test_only_controls_quote_and_backslash_are_escaped() -> None:
    assert canonical_json('\b\t\n\f\r\x00\x1f"\\/\x7f') == (b'"\\b\\t\\n\\f\\r\\u0000\\u001f\\"\\\\/\x7f"')


def test_nested_objects_are_sorted_at_every_level_without_whitespace() -> None:
    value = {"b": [1, {"z": None, "a": True}], "a": {"d": False, "c": "x"}}
    assert canonical_json(value) == b'{"a":{"c":"x","d":false},"b":[1,{"a":true,"z":null}]}'


def test_integers_serialize_as_plain_decimals_up_to_2_pow_53_minus_1() -> None:
    assert canonical_json([0, -1, 42, 2**53 - 1, -(2**53 - 1)]) == (
        b"[0,-1,42,9007199254740991,-9007199254740991]"
    )


def test_equal_values_built_in_different_orders_give_identical_bytes() -> None:
    first = {"tenant": "t1", "seq": 7, "kind": "memory.written", "tags": ["a", "b"]}
    second = dict(reversed(list(first.items())))
    assert canonical_json(first) == canonical_json(second)


@pytest.mark.parametrize("value", [2**53, -(2**53), 10**20])
def test_integers_beyond_double_precision_are_refused(value: int) -> None:
    with pytest.raises(CanonicalJsonError):
        canonical_json({"n": value})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_refused(value: float) -> None:
    with pytest.raises(CanonicalJsonError):
        canonical_json([value])


@pytest.mark.parametrize(
    "value",
    [{1: "non-string key"}, {"b": b"bytes"}, {"s": {1, 2}}, "\ud800", {"\udfff": 1}],
    ids=["int-key", "bytes", "set", "lone-surrogate", "lone-surrogate-key"],
)
def test_values_without_a_canonical_form_are_refused(value: object) -> None:
    with pytest.raises(CanonicalJsonError):
        canonical_json(value)


def test_canonical_json_error_is_a_value_error() -> None:
    assert issubclass(CanonicalJsonError, ValueError)


# -- the stdlib fast path must never disagree with the reference implementation ----------

_json_values = _st.recursive(
    _st.none()
    | _st.booleans()
    | _st.integers(-(2**53) + 1, 2**53 - 1)
    | _st.floats(allow_nan=False, allow_infinity=False)
    | _st.text(),
    lambda children: (
        _st.lists(children, max_size=4) | _st.dictionaries(_st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@_settings(max_examples=500, deadline=None)
@_given(_json_values)
def test_fast_path_is_byte_identical_to_rfc8785(value):
    try:
        expected = _reference.dumps(value)
    except (_reference.CanonicalizationError, UnicodeError):
        return
    assert canonical_json(value) == expected


def test_fast_path_handles_the_floats_python_and_ecmascript_write_differently():
    for value in (0.0, -0.0, 1.0, 1e-7, 1e-5, 1e16, 1e21, 123456789012345678.0, 0.1, 0.0001):
        assert canonical_json({"x": value}) == _reference.dumps({"x": value})
