"""Label Studio integration: pure converters and agreement statistics (no Django in the pure modules)."""
