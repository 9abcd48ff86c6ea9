"""Adjudication: pure-Python rules that find where models, gold labels and annotators disagree (`rules`)."""
