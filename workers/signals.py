"""What `workers` announces to the layers above it (they subscribe; workers never imports them).

- `run_scored(sender=EvaluationRun, run=..., n_predictions=...)`: a run's metrics were written, inside
  the scoring transaction. Adjudication subscribes (adjudication/receivers.py) to open cases, from
  reference runs only.
- `run_reference_changed(sender=EvaluationRun, run=..., reference=..., actor=...)`: a curator marked a run
  as a reference run or unmarked it (workers/services/reference.py), inside that transaction.
  Adjudication subscribes to open, re-prioritise or withdraw the cases around the run after commit.
"""
from django.dispatch import Signal

run_scored = Signal()
run_reference_changed = Signal()
