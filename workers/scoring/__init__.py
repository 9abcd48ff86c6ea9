"""Scoring of predictions (`item`), statistics (`stats`) and benchmark metrics (`metrics`).

Pure Python + numpy, no Django. `metrics` documents every metric; `item` the per-prediction rules.
"""
from workers.scoring.item import ItemScore, box_iou, normalize_text, score_prediction

__all__ = ["ItemScore", "box_iou", "normalize_text", "score_prediction"]
