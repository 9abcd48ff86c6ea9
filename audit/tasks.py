import logging

from celery import shared_task

from .services import audit_verify

logger = logging.getLogger(__name__)


@shared_task(name="audit.verify_chain", acks_late=True)
def verify_chain() -> dict:
    """Nightly (Celery beat): walk the hash chain and log loudly if it is broken."""
    result = audit_verify()
    if result.ok:
        logger.info("audit chain intact: %d events, head %s, %d checkpoint(s) hold", result.checked,
                    result.head_hash, len(result.checkpoints))
    elif not result.chain_ok:
        logger.error("audit chain BROKEN at event #%s: %s", result.first_bad_seq, result.reason)
    else:
        logger.error("audit chain BROKEN: %s", result.reason)
    return {"ok": result.ok, "checked": result.checked, "first_bad_seq": result.first_bad_seq,
            "reason": result.reason, "head_hash": result.head_hash, "bad_checkpoint": result.bad_checkpoint}
