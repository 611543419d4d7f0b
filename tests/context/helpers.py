"""A small multi-file project for the repo-map and live-index tests."""

from __future__ import annotations

from pathlib import Path


def write(root: Path, rel: str, text: str | bytes) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(text) if isinstance(text, bytes) else p.write_text(text)


def make_app(root: Path) -> Path:
    """Models, two modules using them, and a utility nothing uses."""
    write(root, "app/models.py", "class User:\n    def save(self):\n        pass\n\n\nclass Order:\n    def total(self):\n        return 0\n")
    write(root, "app/views.py", "from app.models import User\n\n\ndef show_user(uid):\n    u = User()\n    u.save()\n    return u\n")
    write(root, "app/billing.py", "from app.models import Order\n\n\ndef invoice(o: Order):\n    return o.total()\n")
    write(root, "app/util.py", "def slugify(s):\n    return s.lower()\n")
    return root
