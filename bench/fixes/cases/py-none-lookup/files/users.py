USERS = {1: {"name": "ada"}, 2: {"name": "grace"}}


def find(user_id):
    return USERS.get(user_id)


def display_name(user_id):
    """The user's name, or "unknown" for an id we do not have."""
    return find(user_id)["name"]
