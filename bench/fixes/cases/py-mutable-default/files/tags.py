def add_tag(tag, tags=[]):
    """`tags` plus `tag`; a new list when none is given."""
    tags.append(tag)
    return tags
