"""A marker shared by name resolution and the cache."""
from __future__ import annotations

#: What a name or attribute chain that denotes nothing resolves to.
MISSING = object()
