"""What `workers` announces to the layers above it (they subscribe; workers never imports them).

- `run_scored(sender=EvaluationRun, run=..., n_predictions=...)`: a run's metrics were written, inside
  the scoring transaction. Adjudication subscribes (adjudication/receivers.py) to open cases.
"""
from django.dispatch import Signal

run_scored = Signal()
