"""audit.diff: the field-level before → after view of an event (pure, no database)."""
from __future__ import annotations

from audit.diff import ADDED, CHANGED, MISSING, REMOVED, UNCHANGED, changed_paths, field_diff


def _table(rows):
    return {r.path: (r.old_json, r.new_json, r.status) for r in rows}


def test_a_changed_field_is_marked_and_unchanged_ones_are_listed_too():
    rows = field_diff({"status": "draft", "note": "x"}, {"status": "approved", "note": "x"})
    assert _table(rows) == {"note": ('"x"', '"x"', UNCHANGED), "status": ('"draft"', '"approved"', CHANGED)}
    assert changed_paths(rows) == ["status"]


def test_nested_objects_are_walked_to_dotted_paths():
    before = {"status": {"3": "draft", "5": "in_review"}, "meta": {"a": {"b": 1}}}
    after = {"status": {"3": "approved", "5": "in_review", "9": "approved"}, "meta": {"a": {"b": 2}}}
    assert _table(field_diff(before, after)) == {
        "meta.a.b": ("1", "2", CHANGED),
        "status.3": ('"draft"', '"approved"', CHANGED),
        "status.5": ('"in_review"', '"in_review"', UNCHANGED),
        "status.9": ("", '"approved"', ADDED),
    }


def test_lists_are_compared_whole_and_shown_in_full():
    long = list(range(500))
    rows = field_diff({"item_ids": long}, {"item_ids": [*long, 500]})
    (row,) = rows
    assert row.status == CHANGED and row.path == "item_ids"
    assert row.new_json.endswith("499, 500]") and len(row.new_json) > 1000   # never shortened
    assert field_diff({"x": [1, 2]}, {"x": [1, 2]})[0].status == UNCHANGED
    assert field_diff({"x": [1, 2]}, {"x": [2, 1]})[0].status == CHANGED   # order matters in a list


def test_no_before_means_every_field_is_added():
    rows = field_diff(None, {"question": "Which modality?", "options": ["CT", "MR"], "box": {"x0": 1}})
    assert _table(rows) == {"box.x0": ("", "1", ADDED), "options": ("", '["CT", "MR"]', ADDED),
                            "question": ("", '"Which modality?"', ADDED)}
    assert all(r.old is MISSING for r in rows)


def test_no_after_means_every_field_is_removed():
    assert _table(field_diff({"a": 1, "b": None}, None)) == {"a": ("1", "", REMOVED), "b": ("null", "", REMOVED)}


def test_keys_added_and_removed_between_versions():
    rows = field_diff({"old": 1, "kept": True}, {"kept": True, "new": "y"})
    assert _table(rows) == {"kept": ("true", "true", UNCHANGED), "new": ("", '"y"', ADDED),
                            "old": ("1", "", REMOVED)}
    assert changed_paths(rows) == ["new", "old"]


def test_a_type_change_is_one_row_with_both_values():
    rows = field_diff({"status": {"3": "draft"}}, {"status": "approved"})
    assert _table(rows) == {"status": ('{"3": "draft"}', '"approved"', CHANGED)}


def test_json_types_are_told_apart_like_in_the_hashed_record():
    assert field_diff({"x": 1}, {"x": True})[0].status == CHANGED
    assert field_diff({"x": 1}, {"x": 1.0})[0].status == CHANGED
    assert field_diff({"x": None}, {"x": None})[0].status == UNCHANGED


def test_values_that_are_not_objects_are_one_unnamed_row():
    (row,) = field_diff([1, 2], [1, 2, 3])
    assert (row.path, row.status) == ("", CHANGED)
    assert changed_paths([row]) == ["(value)"]
    (row,) = field_diff(None, "text")
    assert (row.path, row.status, row.new_json) == ("", ADDED, '"text"')


def test_nothing_before_or_after_gives_no_rows_and_empty_objects_are_kept():
    assert field_diff(None, None) == []
    assert _table(field_diff(None, {"params": {}})) == {"params": ("", "{}", ADDED)}
    assert _table(field_diff({"params": {}}, {"params": {"k": 1}})) == {"params.k": ("", "1", ADDED)}


def test_unicode_is_shown_as_text():
    (row,) = field_diff({"name": "élément"}, {"name": "élément 2"})
    assert row.old_json == '"élément"'
