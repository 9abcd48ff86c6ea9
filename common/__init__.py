"""The bottom layer every app may import: one way for each cross-cutting concern.

- `dispatch`: send a Celery task after the transaction commits, surviving a broker outage;
- `errors`: the service error classes and the DRF exception handler that maps them (and Django's
  `ValidationError`) to the one documented error shape;
- `pagination`: API pages (DRF) and HTML pages (Django's `Paginator`) with the same rules;
- `figures`: matplotlib set-up for server-side charts;
- `formatting` and `titles` (with the `medr2_format` template tags): how numbers, dates, plurals, dicts and
  codes read on pages (docs/architecture.md, "Formatting on pages"); `palette`: model and gold colours.

It imports no app (see docs/architecture.md, and the layer test in tests/test_architecture.py)."""
