"""The run page's statistic cells (workers/templatetags/run_cells.py) write exactly what the partials they
replaced wrote (`_acc.html`, `_diff.html`, `_pct.html`, kept here as the reference), for every shape a stat
takes: missing, empty, without a value, without an interval, with patients, a failed lookup ("")."""
from __future__ import annotations

import pytest
from django.template import Context, Template

ACC = ("{% load medr2_format %}{% if c and c.value is not None %}<span title=\"95% cluster-bootstrap interval "
       "{{ c|ci }}, n={{ c.n|num }}{% if c.clusters %} from {{ c.clusters|plural:'patient' }}{% endif %}\">"
       "{{ c.value|pct }}</span>{% if c.lo is not None %}<span class=\"muted small\"> {{ c|ci }}</span>{% endif %}"
       "<span class=\"muted small\"> n={{ c.n|num }}</span>{% else %}<span class=\"muted\">—</span>{% endif %}\n")
DIFF = ("{% load medr2_format %}{% if d and d.value is not None %}{% if fmt == \"num\" %}<span title=\"95% "
        "cluster-bootstrap interval {{ d|ci:'num' }}{% if d.n %}, n={{ d.n|num }}{% endif %}\">{{ d.value|num:2 }}"
        "</span>{% if d.lo is not None %}<span class=\"muted small\"> {{ d|ci:'num' }}</span>{% endif %}"
        "{% elif fmt == \"pct\" %}<span title=\"95% cluster-bootstrap interval {{ d|ci }}{% if d.n %}, "
        "n={{ d.n|num }}{% endif %}\">{{ d.value|pct }}</span>{% if d.lo is not None %}<span class=\"muted small\"> "
        "{{ d|ci }}</span>{% endif %}{% else %}<span title=\"95% cluster-bootstrap interval {{ d|ci:'pp' }}"
        "{% if d.n %}, n={{ d.n|num }}{% endif %}\">{{ d.value|pp }}</span>{% if d.lo is not None %}"
        "<span class=\"muted small\"> {{ d|ci:'pp' }}</span>{% endif %}{% endif %}{% else %}"
        "<span class=\"muted\">—</span>{% endif %}\n")
PCT = ("{% load medr2_format %}{% if v is not None %}{% if fmt == \"num\" %}{{ v|num:2 }}{% elif fmt == \"pp\" %}"
       "{{ v|pp }}{% else %}{{ v|pct }}{% endif %}{% else %}<span class=\"muted\">—</span>{% endif %}\n")

STATS = [None, "", {}, {"value": None, "n": 4}, {"value": 0.5}, {"value": 0, "n": 0},
         {"value": 0.25, "lo": 0.1, "hi": 0.4, "n": 12}, {"value": 0.25, "lo": None, "hi": 0.4, "n": None},
         {"value": 0.8125, "lo": 0.7, "hi": 0.9, "n": 1234, "clusters": 3},
         {"value": 0.5, "lo": 0.2, "hi": 0.8, "n": 2, "clusters": 1}, {"value": 0.5, "n": 5, "clusters": 0},
         {"value": -0.125, "lo": -0.3, "hi": 0.05, "n": 40, "k": 3}, {"value": 1.0, "lo": 1.0, "hi": 1.0, "n": 7},
         {"value": 0.3333333, "lo": 0.1, "hi": 0.6}]
NUMBERS = [None, "", 0, 0.0, 0.5, -0.0421, 1.0, 0.123456]


def _partial(source: str, **context) -> str:
    return Template(source).render(Context(context))


def _cell(expression: str, **context) -> str:
    return Template("{% load run_cells %}{{ " + expression + " }}").render(Context(context))


@pytest.mark.parametrize("stat", STATS)
def test_a_proportion_cell_is_what_the_partial_wrote(stat):
    assert _cell("c|acc_cell", c=stat) == _partial(ACC, c=stat)


@pytest.mark.parametrize("fmt", ["", "pct", "num"])
@pytest.mark.parametrize("stat", STATS)
def test_a_difference_cell_is_what_the_partial_wrote(stat, fmt):
    expression = f'd|diff_cell:"{fmt}"' if fmt else "d|diff_cell"
    assert _cell(expression, d=stat) == _partial(DIFF, d=stat, fmt=fmt or None)


@pytest.mark.parametrize("fmt", ["", "pp", "num"])
@pytest.mark.parametrize("value", NUMBERS)
def test_a_number_cell_is_what_the_partial_wrote(value, fmt):
    expression = f'v|pct_cell:"{fmt}"' if fmt else "v|pct_cell"
    assert _cell(expression, v=value) == _partial(PCT, v=value, fmt=fmt or None)


def test_a_missing_entry_reads_as_a_failed_lookup_did():
    """`{% include ... with c=row.absent %}` handed the partial "" (a failed lookup); the filter gets the same."""
    row = {"present": {"value": 0.5, "n": 3}}
    assert _cell("row.absent|acc_cell", row=row) == _partial(ACC, c="")
    assert _cell("row.present.lo|pct_cell", row=row) == _partial(PCT, v="")
