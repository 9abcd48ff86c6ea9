"""Model reports for hospital AI-governance boards (docs/reports.md): one JSON document of every number
(`reports.document`), figures drawn from it (`reports.figures`), HTML and PDF renderings (`reports.render`);
and their lifecycle (`reports.models`, `reports.services`): versioned acceptance criteria, immutable
versions built on a worker, electronic signatures bound to a version's content hash, `report_verify`."""
