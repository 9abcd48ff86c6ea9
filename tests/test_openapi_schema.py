"""The OpenAPI schema (/api/schema/, drf-spectacular with common.schema.AutoSchema) is generated without a
warning or an error, is valid OpenAPI 3, and says what the APIs answer: paginated lists as their envelope
with `page` and `page_size`, and the `Error` shape for the errors each operation can answer.

`manage.py spectacular --validate --fail-on-warn --file /tmp/schema.yml` checks the same from the shell."""
from __future__ import annotations

import pytest
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

ERROR = {"$ref": "#/components/schemas/Error"}


@pytest.fixture(scope="module")
def generated():
    """(schema, warnings and errors) of one generation."""
    GENERATOR_STATS.reset()
    schema = SchemaGenerator().get_schema(request=None, public=True)
    problems = [*GENERATOR_STATS._warn_cache, *GENERATOR_STATS._error_cache]
    GENERATOR_STATS.reset()
    return schema, problems


def _operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def test_the_schema_generates_without_a_warning_or_an_error_and_is_valid_openapi(generated):
    schema, problems = generated
    assert not problems, "\n".join(problems)
    validate_schema(schema)
    operation_ids = [op["operationId"] for _, _, op in _operations(schema)]
    assert len(operation_ids) == len(set(operation_ids)) >= 45


def test_a_paginated_list_is_documented_as_its_envelope_with_page_parameters(generated):
    schema, _ = generated
    get = schema["paths"]["/api/items/"]["get"]
    body = get["responses"]["200"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/PaginatedItemOutputList"}
    envelope = schema["components"]["schemas"]["PaginatedItemOutputList"]
    assert set(envelope["required"]) == {"count", "next", "previous", "results"}
    assert envelope["properties"]["results"] == {"type": "array", "items": {"$ref": "#/components/schemas/ItemOutput"}}
    assert envelope["properties"]["next"]["nullable"] is True
    names = {p["name"]: p for p in get["parameters"]}
    assert {"page", "page_size", "chain", "status", "all_versions"} <= set(names)
    assert names["chain"]["schema"]["type"] == "integer"
    # every list answered by common.pagination.paginated_response says so
    for path, method, operation in _operations(schema):
        ref = operation["responses"].get("200", {}).get("content", {}).get("application/json", {}).get("schema", {})
        if ref.get("$ref", "").startswith("#/components/schemas/Paginated"):
            assert {"page", "page_size"} <= {p["name"] for p in operation["parameters"]}, (method, path)
            assert operation["operationId"].endswith("_list"), operation["operationId"]


def test_every_operation_documents_the_errors_it_can_answer_as_the_error_shape(generated):
    schema, _ = generated
    for path, method, operation in _operations(schema):
        responses = operation["responses"]
        expected = {"403"} | ({"404"} if "{" in path else set())
        if any(p["in"] == "query" for p in operation.get("parameters", [])) or "requestBody" in operation:
            expected.add("400")
        if "requestBody" in operation:
            expected.add("415")
        assert expected <= set(responses), (method, path, sorted(responses))
        for code in expected:
            assert responses[code]["content"]["application/json"]["schema"] == ERROR, (method, path, code)
    paths = schema["paths"]
    assert "409" in paths["/api/adjudication/cases/{id}/verdict/"]["post"]["responses"]
    assert "409" in paths["/api/annotation-batches/{id}/{action}/"]["post"]["responses"]
    assert "429" in paths["/api/report-versions/{id}/sign/"]["post"]["responses"]
    assert {"400", "409"} <= set(paths["/api/releases/{id}/publish/"]["post"]["responses"])


def test_nested_serializers_are_named_after_their_api_and_every_view_has_a_body(generated):
    schema, _ = generated
    components = schema["components"]["schemas"]
    assert {"CaseVerdictInput", "CaseAssignInput", "ChainListOutput", "ChainDetailOutput", "RunPreviewOutput",
            "TaxonomyOutput", "ImageDetailOutput", "BatchDetailOutput", "RunResultsOutput"} <= set(components)
    assert "Input" not in components and "Output" not in components
    assert "/api/images/" in schema["paths"] and "/api/taxonomy/" in schema["paths"]
    predictions = {p["name"]: p for p in schema["paths"]["/api/runs/{id}/predictions/"]["get"]["parameters"]}
    assert "name or its id" in predictions["endpoint"]["description"]
