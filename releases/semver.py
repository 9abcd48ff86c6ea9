"""Semantic versions and the release rule (pure).

The rule against the previous release: **major** when items are removed or a gold answer changed,
**minor** when items are added or an item's content changed with its gold kept, **patch** when only
metadata changed (title, description, license, the card). A version must be greater than every
earlier release and at least as big a step as the rule asks for."""
from __future__ import annotations

import re
from typing import NamedTuple

_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
BUMPS = ("major", "minor", "patch")


class Version(NamedTuple):
    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


def parse(text: str) -> Version:
    """`1.2.3` → Version(1, 2, 3); ValueError with a readable message for anything else."""
    m = _SEMVER.match((text or "").strip())
    if not m:
        raise ValueError(f"{text!r} is not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.0.0)")
    return Version(*(int(g) for g in m.groups()))


def bump_for(*, removed: int, gold_changed: int, added: int, changed: int) -> str:
    if removed or gold_changed:
        return "major"
    if added or changed:
        return "minor"
    return "patch"


def next_version(previous: Version | None, bump: str) -> Version:
    if previous is None:
        return Version(1, 0, 0)
    if bump == "major":
        return Version(previous.major + 1, 0, 0)
    if bump == "minor":
        return Version(previous.major, previous.minor + 1, 0)
    return Version(previous.major, previous.minor, previous.patch + 1)


def check(version: Version, *, latest: Version | None, previous: Version | None, bump: str) -> str | None:
    """Why `version` is refused (None when it is fine): not above the latest release, or a smaller
    step than the rule asks for against the previous one."""
    if latest is not None and version <= latest:
        return f"version {version} must be greater than the latest release {latest}"
    if previous is None:
        return None
    if bump == "major" and version.major <= previous.major:
        return (f"items were removed or their golds changed since {previous}: the rule asks for a major version "
                f"(at least {next_version(previous, 'major')})")
    if bump == "minor" and version < next_version(previous, "minor"):
        return (f"items were added or changed since {previous}: the rule asks for at least a minor version "
                f"({next_version(previous, 'minor')})")
    return None
