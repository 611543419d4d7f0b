def latest(versions):
    """The highest of dotted versions such as '1.10.0'."""
    return max(versions)
