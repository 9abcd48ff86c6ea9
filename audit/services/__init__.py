"""The audit trail's services: recording events (`record`), signed checkpoints of the chain's head
(`checkpoints`) and verification (`verify`). Import from here: `from audit.services import audit_record`."""
from .checkpoints import CHECKPOINT_ACTION, audit_checkpoint, checkpoint_message, platform_signing_key
from .record import SYSTEM_ACTOR, audit_record, canonical_json, chain_hash, event_payload
from .verify import CheckpointCheck, VerifyResult, audit_verify

__all__ = ["CHECKPOINT_ACTION", "SYSTEM_ACTOR", "CheckpointCheck", "VerifyResult", "audit_checkpoint", "audit_record",
           "audit_verify", "canonical_json", "chain_hash", "checkpoint_message", "event_payload",
           "platform_signing_key"]
