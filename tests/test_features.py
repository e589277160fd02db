import json

from hypothesis import given
from hypothesis import strategies as st

from semloop import features as F

json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=4)
                          | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


def test_canonical_json_handles_nesting_and_non_json_values():
    a = {"b": {"y": [1, {"q": 2, "p": 1}], "x": 1}, "a": {3, 1, 2}, "c": b"bytes", "d": float("nan"), "e": (1, 2)}
    b = {"e": [1, 2], "d": float("nan"), "c": "bytes", "a": {2, 3, 1}, "b": {"x": 1, "y": [1, {"p": 1, "q": 2}]}}
    assert F.canonical_json(a) == F.canonical_json(b)
    assert json.loads(F.canonical_json(a))["a"] == [1, 2, 3]
    assert F.canonical_json({"x": object()}).startswith('{"x":"<object object')


def test_nested_values_matter():
    assert F.exact_signature("t", {"a": {"b": 1}}) != F.exact_signature("t", {"a": {"b": 2}})
    assert F.exact_signature("t", [1, 2]) != F.exact_signature("t", [2, 1])  # list order is meaningful


def test_invalid_utf8_and_huge_strings_do_not_break_signatures():
    broken = b"\xff\xfe caf\xc3".decode("utf-8", errors="surrogateescape")
    assert F.exact_signature("bash", {"command": broken})
    big = "x" * 3_000_000
    assert F.exact_signature("bash", big) != F.exact_signature("bash", big + "y")
    assert len(F.call_text("bash", F.call_values(big), 2000)) <= 2003


def test_normalization_reaches_every_string_field():
    a = {"command": "ls  -la ./src/", "options": {"Path": " \"/tmp/x\" "}}
    b = {"options": {"path": "/tmp/x"}, "command": "LS -la src"}
    assert F.normalized_signature("Bash", a) == F.normalized_signature("bash", b)
    assert F.normalized_signature("Bash", {"command": "ls src"}) != F.normalized_signature("Bash", {"command": "ls tests"})


@given(json_value, st.randoms())
def test_canonical_form_invariant_under_key_order(value, rnd):
    def shuffle(v):
        if isinstance(v, dict):
            items = list(v.items())
            rnd.shuffle(items)
            return {k: shuffle(x) for k, x in items}
        if isinstance(v, list):
            return [shuffle(x) for x in v]
        return v

    assert F.canonical_json(value) == F.canonical_json(shuffle(value))


@given(st.lists(st.text(alphabet="abcdefgh/._-", min_size=1, max_size=8), min_size=1, max_size=6),
       st.lists(st.sampled_from([" ", "  ", "\t", "\n", " \n "]), min_size=7, max_size=7))
def test_whitespace_noise_never_changes_normalized_signature(words, noise):
    clean = " ".join(words)
    noisy = noise[0] + "".join(w + noise[i % 6 + 1] for i, w in enumerate(words))
    assert F.normalized_signature("Bash", {"command": clean}) == F.normalized_signature("Bash", {"command": noisy})


def test_volatile_parts_of_results_are_masked():
    a = F.normalize_result("3 failed, 9 passed in 0.41s at 2026-11-30T10:00:01Z (req 0x7f3a2b1c9d)")
    b = F.normalize_result("3 failed, 9 passed in 0.57s at 2026-11-30T10:02:44Z (req 0x7f3a2b1d00)")
    assert a == b
    assert F.normalize_result("3 failed") != F.normalize_result("2 failed")


def test_a_pages_element_ids_are_masked_wherever_its_lines_start():
    """The browser numbers elements anew on each render: `[2226] link 'Next'` and `[2301] link
    'Next'` are one element. Also when the id opens the result (a one-line answer) or a line
    indented with spaces; an id inside a line (`see [12] above`) is text. (The check before the
    mask once looked only after a tab or a newline.)"""
    assert F.normalize_result("[2226] button 'Next'") == F.normalize_result("[2301] button 'Next'")
    tree = "RootWebArea 'Orders'\n  [{}] link 'Order 200'\n    [{}] StaticText 'Pending'"
    assert F.normalize_result(tree.format(148, 150)) == F.normalize_result(tree.format(2081, 2085))
    assert F.normalize_result("\t[148] link 'Order 200'") == F.normalize_result("\t[9] link 'Order 200'")
    assert F.normalize_result("see note [12] above") != F.normalize_result("see note [13] above")
    assert F.normalize_result("[2226] button 'Next'") != F.normalize_result("[2226] button 'Back'")


def test_content_similarity_judges_content_not_layout():
    page = " ".join(f"word{i}" for i in range(300))
    same_reformatted = "**" + page.replace(" ", " | ") + "**"
    other = " ".join(f"term{i}" for i in range(300))
    s1, n1 = F.result_sketch(F.normalize_result(page))
    s2, n2 = F.result_sketch(F.normalize_result(same_reformatted))
    s3, n3 = F.result_sketch(F.normalize_result(other))
    assert F.content_similarity(s1, n1, s2, n2) == (1.0, 1.0)
    assert max(F.content_similarity(s1, n1, s3, n3)) < 0.1
    head, nh = F.result_sketch(F.normalize_result(" ".join(f"word{i}" for i in range(100))))
    jaccard, containment = F.content_similarity(head, nh, s1, n1)
    assert jaccard < 0.5 and containment > 0.8  # `head -n` of a file vs the whole file


def test_error_classes():
    assert F.error_class("cat: /etc/shadow: Permission denied", is_error=True) == "permission"
    assert F.error_class("ls: cannot access 'x': No such file or directory") == "not_found"
    assert F.error_class("all good") is None
    assert F.error_class("all good", is_error=True) == "other"
    # a file that *mentions* errors is not an error: unflagged outputs are judged on their first line
    source = '"""Retry helpers."""\nclass TimeoutError(Exception):\n    """Permission denied by upstream."""'
    assert F.error_class(source) is None
    assert F.error_class(source, is_error=True) == "permission"  # most specific class first


def test_render_value_of_structured_outputs():
    text = F.render_value({"stdout": "hello", "stderr": "", "interrupted": False})
    assert "stdout: hello" in text and "stderr" not in text
    blocks = [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]
    assert F.render_value(blocks) == "first\nsecond"  # content blocks: just their text


def test_commentary_is_not_part_of_the_action():
    a = {"command": "pytest", "description": "Run tests"}
    b = {"command": "pytest", "description": "Run the tests again"}
    assert F.exact_signature("Bash", a) != F.exact_signature("Bash", b)  # exact stays exact
    assert F.normalized_signature("Bash", a) == F.normalized_signature("Bash", b)
    assert F.call_values(a) == F.call_values(b) == ["pytest"]
    assert F.call_values({"prompt": "p", "description": "d"}) == ["p"]
