"""Fine-tuning's pure core: training examples per recipe (`recipes`), their encoding for a
transformers VLM (`encoding`), and the seeded, resumable LoRA training loop (`trainer`).

No Django here: the service (`finetune/services.py`) turns rows into `ChainFacts` and calls `train`.
torch, transformers and peft are imported lazily, inside the functions that need them.
"""
