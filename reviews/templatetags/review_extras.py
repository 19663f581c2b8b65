from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def get_item(mapping, key):
    """`mapping|get_item:key` — dictionaries keyed by ids in the review page context."""
    if mapping is None:
        return None
    return mapping.get(key)
