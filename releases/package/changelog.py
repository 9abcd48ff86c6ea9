"""`CHANGELOG.md`: the items added, removed and changed against the previous release, each with its reason."""
from __future__ import annotations

from pathlib import Path

from releases.package.snapshot import Snapshot


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def write_changelog(snapshot: Snapshot, out: Path) -> None:
    """CHANGELOG.md: the items added, removed and changed against the previous release, each with its reason."""
    order = {"added": 0, "removed": 1, "changed": 2}
    changes = sorted(snapshot.changes, key=lambda c: (order.get(c.kind, 3), c.kind, c.item_key,
                                                      c.from_version or 0, c.to_version or 0, c.reason))
    lines = ["# Changelog", "", f"## {snapshot.name} {snapshot.version} ({snapshot.created})", ""]
    if snapshot.previous_version:
        lines += [f"Against {snapshot.name} {snapshot.previous_version}.", ""]
    else:
        lines += ["First release: no previous version.", ""]
    kinds = [k for k in order] + sorted({c.kind for c in changes} - set(order))
    for kind in kinds:
        items = [c for c in changes if c.kind == kind]
        if not items and kind not in order:
            continue
        lines.append(f"### {kind.capitalize()} ({len(items)})")
        lines.append("")
        for c in items:
            if kind == "added":
                version = f"v{c.to_version}"
            elif kind == "removed":
                version = f"v{c.from_version}"
            else:
                version = f"v{c.from_version} → v{c.to_version}"
            lines.append(f"- `{c.item_key}` {version}: {_one_line(c.reason) or 'no reason recorded'}")
        if not items:
            lines.append("None.")
        lines.append("")
    (Path(out) / "CHANGELOG.md").write_text("\n".join(lines).rstrip("\n") + "\n", encoding="utf-8", newline="\n")
