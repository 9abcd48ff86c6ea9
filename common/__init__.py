"""The bottom layer every app may import: one way for each cross-cutting concern.

- `dispatch`: send a Celery task after the transaction commits, surviving a broker outage;
- `errors`: the service error classes and the DRF exception handler that maps them (and Django's
  `ValidationError`) to the one documented error shape;
- `pagination`: API pages (DRF) and HTML pages (Django's `Paginator`) with the same rules;
- `figures`: matplotlib set-up for server-side charts.

It imports no app (see docs/architecture.md, and the layer test in tests/test_architecture.py)."""
