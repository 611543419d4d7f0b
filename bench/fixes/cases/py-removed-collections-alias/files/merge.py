from collections import Mapping


def deep_merge(base, extra):
    """A new dict: `extra` merged into `base`, nested mappings merged too."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
