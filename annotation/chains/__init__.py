"""Stepwise QA chain generation (pure Python, no Django).

    from annotation.chains import default_category_defs, generate_chain, validate_step
    cats = default_category_defs()                 # or [parse_category(row_dict) for row in ...]
    steps = generate_chain(facts, cats, seed=0)    # list[StepSpec], S1 -> S4
    problems = validate_step(steps[0], facts, cats_by_code[steps[0].category])

Modules: ``types`` (the data contract), ``definitions`` (validated category definitions and
DEFAULT_RULES), ``rules`` / ``rules_detection`` / ``rules_lesion`` (rule kinds), ``generator``,
``validate``.
"""
from .definitions import (
    DEFAULT_RULES,
    category_errors,
    category_model,
    default_category_defs,
    parse_category,
    template_fields,
    validate_category,
)
from .generator import ChainPolicy, PreparedCategories, generate_chain, prepare_categories
from .rules import RULE_KINDS, Ctx, Draft, RuleBase, rule_kind, unregister_rule_kind
from .types import BoxFact, CategoryDef, ImageFacts, StepSpec
from .validate import validate_step

__all__ = [
    "BoxFact", "CategoryDef", "ChainPolicy", "Ctx", "DEFAULT_RULES", "Draft", "ImageFacts", "PreparedCategories",
    "RULE_KINDS", "RuleBase", "StepSpec", "category_errors", "category_model", "default_category_defs",
    "generate_chain", "parse_category", "prepare_categories", "rule_kind", "template_fields", "unregister_rule_kind",
    "validate_category", "validate_step",
]
